#!/usr/bin/env bash
# hearth on a GPU, checked and measured in one command (≤ 5 minutes on a GPU): the main job's model trained with
# device = cuda, and the dist-keras Higgs MLP's samples/s at batch 64 and 1,024 against PyTorch on the same GPU
# and hearth on the CPU cores (examples/gpu_check.rs says what runs). Prints a table.
#
#   scripts/gpu_check.sh [--cpu] PROGRAM LIBTORCH_DIR [-- ARGS...]
#
#   PROGRAM        the gpu_check example (target/release/examples/gpu_check), or its .xz from a bundle
#   LIBTORCH_DIR   the libtorch it runs on: the directory holding lib/ (e.g. python3's torch package directory)
#   --cpu          every step on the CPU (20,000 events unless ARGS say): checks the whole run without a GPU
#   ARGS           more for the program (e.g. --rows 100000)
#
# python3 on PATH must import the torch of the same libtorch (PyTorch's side of the comparison). Run from the
# project's root (the PyTorch side is benches/parity_torch.py, the data datasets/).
set -euo pipefail
cpu=()
if [[ "${1:-}" == --cpu ]]; then
    cpu=(--cpu)
    shift
fi
if [[ $# -lt 2 ]]; then
    echo "usage: scripts/gpu_check.sh [--cpu] PROGRAM LIBTORCH_DIR [-- ARGS...]" >&2
    exit 2
fi
program="$1" libtorch="$2"
shift 2
[[ "${1:-}" == -- ]] && shift
if [[ ${#cpu[@]} -gt 0 && $# -eq 0 ]]; then
    set -- --rows 20000 # two CPU cores train the 600-600 MLP at a few thousand rows a second
fi
[[ -f "$libtorch/lib/libtorch_cpu.so" ]] || { echo "$libtorch/lib/libtorch_cpu.so: no libtorch there" >&2; exit 2; }
[[ -f "$program" ]] || { echo "$program: no such program" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
program="$(unpacked "$program" "$work" gpu_check)"
use_libtorch "$libtorch" "$work"

if ! python3 -c 'import torch' 2>/dev/null; then
    echo "python3 ($(command -v python3 || echo none)) cannot import torch: PyTorch's side needs it" >&2
    exit 2
fi
echo "== machine"
if [[ ${#cpu[@]} -eq 0 ]]; then
    nvidia-smi -L || echo "(nvidia-smi did not answer)"
fi
python3 -c 'import torch; print("PyTorch", torch.__version__, "sees", torch.cuda.device_count(), "GPU(s)")'
echo "$(nproc) CPU cores"
echo
echo "== hearth"
timeout 290 "$program" ${cpu[@]+"${cpu[@]}"} "$@"
