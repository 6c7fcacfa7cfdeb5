#!/usr/bin/env bash
# Creates a Python venv with pinned packages, installed with --require-hashes:
# every package pinned, every wheel's sha256 listed. Idempotent; prints the
# venv's python.
#
#   scripts/python-env.sh        target/venv      from scripts/python-requirements.txt
#   scripts/python-env.sh SET    target/venv-SET  from scripts/python-requirements-SET.txt
#
# A third-party tool whose own pins would fight the others' (HTA, AIPerf) gets a
# set, and so a venv, of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
set_name="${1:-}"
if [ -z "$set_name" ]; then
    venv=target/venv
    requirements=scripts/python-requirements.txt
else
    case "$set_name" in
        *[!a-z0-9-]*) echo "error: requirement set name $set_name: use a-z, 0-9 and -" >&2; exit 2 ;;
    esac
    venv="target/venv-$set_name"
    requirements="scripts/python-requirements-$set_name.txt"
fi
if [ ! -f "$requirements" ]; then
    echo "error: $requirements does not exist" >&2
    exit 2
fi
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if ! cmp -s "$requirements" "$stamp"; then
    # --no-compile: byte-compiling every installed module is CPU time the test
    # command's build, running meanwhile, needs more; Python compiles what it imports.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile \
        --require-hashes -r "$requirements" >&2
    cp "$requirements" "$stamp"
fi
echo "$PWD/$venv/bin/python"
