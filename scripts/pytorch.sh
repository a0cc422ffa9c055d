#!/usr/bin/env bash
# Installs PyTorch 2.13.0 — PyPI's torch==2.13.0 wheel with every dependency it names (CUDA's libraries and
# triton included, ~4.9 GB) — into a virtual environment in hearth's cache, once per machine, with what the
# tests and benchmarks that compare hearth with PyTorch also read (safetensors, numpy, pyarrow). Prints the
# environment's directory. It is hearth's libtorch on a machine with a GPU (scripts/libtorch.sh), and the
# Python `import torch` of the comparisons everywhere: PyPI's only Linux wheel is the CUDA build, whose Python
# module loads CUDA's libraries even on a CPU.
#
#   scripts/pytorch.sh             # install if missing, print the environment's directory
#   scripts/pytorch.sh --installed # print it if installed, else fail without installing
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/torch_env.sh"

venv="$hearth_cache/torch-$torch_version"
if [[ "${1:-}" == --installed ]]; then
    [[ -f "$venv/.hearth-complete" ]] && echo "$venv"
    exit
fi
if [[ ! -f "$venv/.hearth-complete" ]]; then
    say "installing PyTorch $torch_version with CUDA (PyPI torch==$torch_version, ~4.9 GB, a few minutes) into $venv"
    new_venv "$venv" "libtorch $torch_version (PyPI's torch wheel)"
    "$venv/bin/python" -m pip install --quiet "torch==$torch_version" "${python_extras[@]}"
    touch "$venv/.hearth-complete"
fi
# Environments installed before pyarrow joined the list get it here.
if [[ ! -f "$venv/.hearth-pyarrow" ]]; then
    "$venv/bin/python" -m pip install --quiet "${python_extras[@]}"
    touch "$venv/.hearth-pyarrow"
fi
check_libtorch "$venv"
echo "$venv"
