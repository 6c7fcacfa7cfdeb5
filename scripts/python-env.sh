#!/usr/bin/env bash
# Creates target/venv with the Python packages the tests' Python clients use
# (NVIDIA's cuda-python driver bindings), pinned. Idempotent; prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv
pins=(cuda-bindings==12.9.4)
stamp="$venv/.pins"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
    echo "${pins[*]}" > "$stamp"
fi
echo "$PWD/$venv/bin/python"
