#!/usr/bin/env bash
# Installs libtorch 2.13.0 from PyPI's torch==2.13.0 wheel into hearth's cache, once per machine, for what this
# machine has, and prints the libtorch directory (its include/ and lib/) that the `tch` crate builds against
# (LIBTORCH) and hearth's programs run:
#
#   - with an NVIDIA driver (nvidia-smi on PATH, or libcuda.so.1 known to the loader): the whole wheel with CUDA's
#     libraries (~4.9 GB, scripts/pytorch.sh); hearth loads libtorch_cuda.so at start and trains on the GPUs, and
#     finds NCCL through a link libnccl.so made beside libtorch's libraries.
#   - without one: the wheel alone, without its nvidia-*/triton dependencies, plus the two small CUDA runtime
#     libraries libtorch_cpu.so is linked to (cudart, cupti): 0.54 GB to download, 1.2 GB on disk. hearth runs
#     the same binaries on it and says, where a job asks for `cuda`, that this libtorch has no CUDA libraries.
#
#   scripts/libtorch.sh                  # install what this machine needs if missing, print the libtorch dir
#   HEARTH_TORCH=cpu scripts/libtorch.sh # choose: cpu | cuda (default auto)
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/torch_env.sh"

has_nvidia_driver() {
    command -v nvidia-smi >/dev/null 2>&1 && return
    local cache
    cache="$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null || true)"
    [[ "$cache" == *libcuda.so.1* ]]
}

choice="${HEARTH_TORCH:-auto}"
case "$choice" in
    auto) if has_nvidia_driver; then choice=cuda; else choice=cpu; fi ;;
    cpu | cuda) ;;
    *)
        say "HEARTH_TORCH=$choice is not a choice: use cpu, cuda or auto (the default: cuda where an NVIDIA driver is)."
        exit 2
        ;;
esac

if [[ "$choice" == cuda ]]; then
    venv="$("$here/pytorch.sh")"
    # hearth finds NCCL (gradients averaged on the GPUs) as libnccl.so on its programs' run path, libtorch's lib/;
    # the NCCL wheel ships it as libnccl.so.2.
    libtorch="$(libtorch_of "$venv")"
    if [[ ! -e "$libtorch/lib/libnccl.so" && -f "$libtorch/../nvidia/nccl/lib/libnccl.so.2" ]]; then
        ln -sfn ../../nvidia/nccl/lib/libnccl.so.2 "$libtorch/lib/libnccl.so"
    fi
else
    venv="$hearth_cache/torch-$torch_version-cpu"
    if [[ ! -f "$venv/.hearth-complete" ]]; then
        say "installing libtorch $torch_version for CPUs (PyPI torch==$torch_version without CUDA's libraries, 0.54 GB) into $venv"
        new_venv "$venv" "libtorch $torch_version (PyPI's torch wheel)"
        # Only the wheel's libtorch is used (its Python module needs every CUDA library to import), and the CUDA
        # runtime and profiler libraries libtorch_cpu.so is linked to; its CUDA code runs only where
        # libtorch_cuda.so loads, which needs the rest.
        "$venv/bin/python" -m pip install --quiet "cuda-toolkit[cudart,cupti]==13.0.3"
        "$venv/bin/python" -m pip install --quiet --no-deps "torch==$torch_version"
        touch "$venv/.hearth-complete"
    fi
fi
check_libtorch "$venv"
libtorch_of "$venv"
