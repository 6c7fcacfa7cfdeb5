#!/usr/bin/env bash
# Packs what the GPU check needs on a bare GPU machine (an NVIDIA driver, CUDA 13 with
# PyTorch's CUDA libraries and Nsight Compute; no Rust toolchain, no network) into one
# folder of at most 48 MiB: the stripped release gpuprof, libgpuprof.so, the cudarc-llm
# workload, and NVIDIA's NVTX library as libnvToolsExt.so (which such a machine lacks:
# PyTorch bundles its own, under another name). On the GPU machine, with the repository's
# files beside it:
#   scripts/gpu-check.sh --prebuilt DIR      (or scripts/gpu-smoke.sh --prebuilt DIR)
#   scripts/gpu-pack.sh [DIR]                (default target/gpu-pack)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/gpu-pack}
limit=$((48 << 20))

echo "== building (release)" >&2
cargo build --release --quiet -p collector -p inject -p cudarc-llm
python3 scripts/nvidia-wheels.py fetch-extras libnvtx3interop >/dev/null
nvtx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["libnvtx3interop"])' \
    "$(python3 scripts/nvidia-wheels.py path)/extras.json")

# Only a folder this script made (or an empty one) is replaced.
if [ -e "$out" ] && [ ! -e "$out/.gpu-pack" ] && [ -n "$(ls -A "$out")" ]; then
    echo "gpu-pack: $out exists and was not made by gpu-pack.sh; name another folder" >&2
    exit 2
fi
rm -rf "$out"
mkdir -p "$out"
: >"$out/.gpu-pack"
for f in gpuprof libgpuprof.so cudarc-llm; do
    strip --strip-debug -o "$out/$f" "target/release/$f"
done
cp "$nvtx" "$out/libnvToolsExt.so"

bytes=$(du -sb "$out" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
if [ "$bytes" -gt "$limit" ]; then
    echo "gpu-pack: FAIL $out holds $mib MiB, over the 48 MiB a GPU run may carry" >&2
    exit 1
fi
ls -l "$out" >&2
echo "gpu-pack: $out: $mib MiB (at most 48); on the GPU machine: scripts/gpu-check.sh --prebuilt $out"
