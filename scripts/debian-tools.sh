#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet
# (tools the tests check gpuprof's output with: prometheus, golang-go). Needs root
# and apt-get; without them it says which packages are missing and exits 0, and
# the tests that need them print that they are skipped and why.
set -euo pipefail
missing=()
for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "not installed (needs root and apt-get): ${missing[*]}; the tests that use them are skipped" >&2
fi
