#!/usr/bin/env bash
# Creates target/venv with the Python packages the tests' Python clients use,
# pinned with their hashes in scripts/python-requirements.txt. Idempotent; prints
# the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv
requirements=scripts/python-requirements.txt
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if ! cmp -s "$requirements" "$stamp"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes -r "$requirements" >&2
    cp "$requirements" "$stamp"
fi
echo "$PWD/$venv/bin/python"
