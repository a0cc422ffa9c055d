#!/usr/bin/env bash
# Installs libtorch 2.13.0 (from PyPI's torch==2.13.0 wheel) into a cache outside the clone, once per machine,
# with pyarrow beside it for the tests, and prints the Python environment that holds them. With that
# environment's `bin/` first on PATH and LIBTORCH_USE_PYTORCH=1, the `tch` crate builds against it.
#
#   scripts/libtorch.sh            # install if missing, print the environment's directory
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail

torch_version="2.13.0"
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"
venv="$hearth_cache/torch-$torch_version"
marker="$venv/.hearth-complete"

if [[ ! -f "$marker" ]]; then
    python="$(command -v python3 || true)"
    if [[ -z "$python" ]]; then
        say "python3 is not on PATH: it is needed once to install libtorch $torch_version from PyPI's torch wheel."
        say "Install Python 3.10+ with pip and venv (Debian: apt-get install python3 python3-venv), then run this again."
        exit 1
    fi
    if ! "$python" -m pip --version >/dev/null 2>&1; then
        say "$python has no pip: install it (Debian: apt-get install python3-pip python3-venv) and run this again."
        exit 1
    fi
    say "installing libtorch $torch_version (PyPI torch==$torch_version, ~4.7 GB, a few minutes) into $venv"
    rm -rf "$venv"
    mkdir -p "$hearth_cache"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$torch_version" safetensors numpy
    touch "$marker"
    say "libtorch $torch_version installed"
fi

# pyarrow, for the tests that read hearth's Parquet output as a pandas or Spark user's tools read it.
if [[ ! -f "$venv/.hearth-pyarrow" ]]; then
    say "installing pyarrow into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyarrow==22.0.0"
    touch "$venv/.hearth-pyarrow"
fi

site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
libtorch="$site/torch"
if [[ ! -f "$libtorch/lib/libtorch_cpu.so" ]]; then
    say "$libtorch/lib/libtorch_cpu.so is missing: the cache at $venv is damaged; delete it and run this again."
    exit 1
fi
echo "$venv"
