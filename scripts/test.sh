#!/usr/bin/env bash
# The whole test suite, on a fresh machine, with nothing installed by hand:
# checks formatting, builds and lints (clippy) while NVIDIA's pinned wheels (cached
# under target/nvidia) and the test tools install, runs every test, runs the README's main
# command on the simulated GPU (with the debug build just made: a release build would
# double the compile time, for the same code), and checks the committed bindings
# regenerate byte-for-byte.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/libclang.sh
# One build from scratch: incremental compilation's caches (1.6 GB of target/) would
# never be read.
export CARGO_INCREMENTAL=0
# The build is the lint: clippy's driver compiles the workspace's own crates (what
# `cargo clippy` does, with code generation), so clippy does not check every crate
# again after the build (95 s of a 13-minute run on a 2-core machine). Every cargo
# command below sees the same two variables, so none rebuilds what the build made.
# CLIPPY_ARGS is how `cargo clippy -- -D warnings` hands its arguments to the driver.
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver) || {
    echo "error: clippy-driver not found; install clippy (rustup component add clippy)" >&2
    exit 1
}
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

started=$(date +%s)
step() { printf '\n== [%ds] %s\n' "$(($(date +%s) - started))" "$*" >&2; }
# wait_for PID LOG WHAT: waits for a step run in the background; on failure prints its
# log and "error: WHAT", and stops.
wait_for() {
    if ! wait "$1"; then
        cat "$2" >&2
        echo "error: $3 (above)" >&2
        exit 1
    fi
}

step "libclang for bindgen (the bindings check at the end)"
if ! have_libclang; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing libclang-dev" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev >/dev/null
    else
        echo "error: bindgen needs libclang; install libclang-dev (or run as root to have it installed)" >&2
        exit 1
    fi
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "no import cycles between the modules of inject, collector, wire and cupti; the collector's layers import downward only"
python3 scripts/module-graph.py --self-test
python3 scripts/module-graph.py inject/src/lib.rs collector/src/main.rs wire/src/lib.rs cupti/src/lib.rs
python3 scripts/module-graph.py --layers cli,collect,output,analysis,store collector/src/lib.rs

# The build is CPU-bound and the downloads below wait on the network: together. The
# build needs none of them (the bindings are committed; the tests read the wheels).
step "build and clippy (in the background while NVIDIA's wheels and the test tools install; output in target/build-output.txt)"
mkdir -p target
cargo build --workspace --all-targets --locked >target/build-output.txt 2>&1 &
build=$!
trap 'kill "$build" 2>/dev/null || true' EXIT

step "NVIDIA wheels (headers and real libraries for the offline tests)"
python3 scripts/nvidia-wheels.py fetch

# The tools install side by side: each waits on the network more than on the CPU.
# pip installs into separate venvs need no lock; apt-get does, so the two Debian
# packages install one after the other in one job. Each job's output goes to
# target/install-NAME.txt and is printed if it fails.
step "test tools, installing side by side (target/install-*.txt):"
echo "  target/venv (the Python clients), target/venv-pandas (reads the report's CSV)," >&2
echo "  target/venv-hta (Holistic Trace Analysis), target/venv-nvml (NVIDIA's NVML bindings)," >&2
echo "  target/venv-aiperf (AIPerf's collectors read record --serve), golang-go (Go's pprof)," >&2
echo "  prometheus (scrapes record --serve)" >&2
installs=()
install_bg() { # NAME COMMAND...: runs COMMAND in the background, logged
    local name=$1
    shift
    "$@" >"target/install-$name.txt" 2>&1 &
    installs+=("$!:$name")
}
install_bg venv scripts/python-env.sh
install_bg venv-pandas scripts/python-env.sh pandas
install_bg venv-hta scripts/python-env.sh hta
install_bg venv-nvml scripts/python-env.sh nvml
install_bg venv-aiperf scripts/python-env.sh aiperf
install_bg debian bash -c 'scripts/debian-tools.sh golang-go && scripts/debian-tools.sh prometheus'
for job in "${installs[@]}"; do
    wait_for "${job%%:*}" "target/install-${job#*:}.txt" "installing ${job#*:} failed"
done
# debian-tools.sh says here which packages it could not install (no root).
cat target/install-debian.txt >&2

step "build (waiting for it)"
wait_for "$build" target/build-output.txt "cargo build (with clippy's lints, -D warnings) failed"
trap - EXIT
tail -n 1 target/build-output.txt

step "tests"
log=target/test-output.txt
# Tests that cannot run here (no root, say) add a line each (gpuprof_tests::skip);
# under CI they fail instead.
rm -f target/skipped-tests.txt
cargo test --workspace --locked 2>&1 | tee "$log"

step "the README's main command on the simulated GPU (scripts/demo.sh --sim, debug build)"
GPUPROF_DEMO_PROFILE=debug scripts/demo.sh --sim >target/demo-output.txt
tail -n 3 target/demo-output.txt

# The generator is a workspace member: the build above made it, and this only runs it.
step "bindings regenerate byte-for-byte"
scripts/regen-bindings.sh --check
step "done"

# One closing line for the whole run (cargo prints one per test binary).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1) } }
     END { printf "\n%d passed, %d failed\n", p, f }' "$log"
if [ -s target/skipped-tests.txt ]; then
    echo "$(wc -l <target/skipped-tests.txt) skipped (passed without running; see target/skipped-tests.txt):"
    cat target/skipped-tests.txt
fi
