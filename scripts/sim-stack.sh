# Sourced by scripts that run programs on the simulated CUDA stack (bench.sh,
# gpu-smoke.sh --sim, gpu-check.sh --sim):
#   sim_stack DIR BIN
# lays the simulated libraries built in BIN out in DIR (made anew) under the names
# programs look them up by, as `gpuprof demo` does, with NVIDIA's NVTX library as
# libnvToolsExt.so, and exports SIMCUPTI_HOST_LIBRARY (NVIDIA's CUPTI 13.1, whose
# Profiler Host API the simulated CUPTI answers from). Run from the repository root.
sim_stack() {
    local dir=$1 bin=$2 extras n built
    python3 scripts/nvidia-wheels.py fetch-extras libnvtx3interop cupti_host >/dev/null
    extras=$(python3 scripts/nvidia-wheels.py path)/extras.json
    rm -rf "$dir" && mkdir -p "$dir"
    for n in libcuda.so.1 libcuda.so libcupti.so.13 libcublas.so.12 libcublas.so \
             libcublasLt.so.12 libcublasLt.so libcudart.so.12 libcudart.so \
             libnvidia-ml.so.1; do
        built=${n%%.so*}.so
        [ "$built" = libnvidia-ml.so ] && built=libnvidia_ml.so
        ln -s "$bin/$built" "$dir/$n"
    done
    ln -s "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["libnvtx3interop"])' "$extras")" \
        "$dir/libnvToolsExt.so"
    SIMCUPTI_HOST_LIBRARY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cupti_host"])' "$extras")
    export SIMCUPTI_HOST_LIBRARY
}
