#!/usr/bin/env bash
# Installs the S3-compatible server the fleet tests keep their inputs and outputs in — moto's server mode
# (PyPI's `moto[server]`, an implementation of S3's REST API) — into a virtual environment in hearth's cache,
# once per machine, and prints the Python that runs scripts/s3_server.py with it.
#
#   scripts/s3.sh              # install if missing, print the environment's python
#   scripts/s3.sh --installed  # print it if installed, else fail without installing
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

moto_version="5.2.5"
venv="$hearth_cache/moto-$moto_version"
if [[ "${1:-}" == --installed ]]; then
    [[ -f "$venv/.hearth-complete" ]] && echo "$venv/bin/python"
    exit
fi
if [[ ! -f "$venv/.hearth-complete" ]]; then
    say "installing the S3-compatible test server (PyPI moto[server]==$moto_version) into $venv"
    rm -rf "$venv"
    mkdir -p "$hearth_cache"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$moto_version"
    touch "$venv/.hearth-complete"
fi
echo "$venv/bin/python"
