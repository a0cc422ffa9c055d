#!/usr/bin/env bash
# Executes every notebook in notebooks/ headless with the evcxr Rust kernel and checks what they show. Installs
# what that needs once per machine into hearth's cache: Jupyter's notebook client (nbclient, from PyPI, in a
# virtual environment) and the kernel (`cargo install evcxr_jupyter`), registered in the cache's own Jupyter
# path. The notebooks' kernels build hearth in one directory kept in the cache (notebooks/evcxr.toml sets the
# kernel up so that it keeps that directory), so only a machine's first notebook pays for that build. Run
# through ./dev, which sets up libtorch:
#
#   ./dev notebooks            # execute and check every notebook; the executed copies go to the cache
#   ./dev notebooks notebooks/ucluster.ipynb   # only these
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

evcxr_version="0.22.0"
source scripts/torch_env.sh
cache="$hearth_cache/notebooks"
venv="$cache/venv"
kernel="$cache/evcxr-$evcxr_version"

if [[ ! -f "$venv/.hearth-complete" ]]; then
    say "installing Jupyter's notebook client (nbclient) into $venv"
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "nbclient==0.11.0" "nbformat==5.11.1"
    touch "$venv/.hearth-complete"
fi
if [[ ! -x "$kernel/bin/evcxr_jupyter" ]]; then
    say "building the evcxr Jupyter kernel $evcxr_version into $kernel (once per machine)"
    cargo install evcxr_jupyter --version "$evcxr_version" --locked --root "$kernel"
fi
export JUPYTER_PATH="$cache/jupyter"
# The kernel loads each cell as a library linked to Rust's shared std, found through a relative run path
# that rustc gets wrong for build directories on the same path root as the toolchain (under the home
# directory); name the toolchain's library directory outright.
sysroot_lib="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/lib"
# Cells are linked to hearth and its dependencies built as shared libraries (`:allow_static_linking 0`: one
# copy of tokio's and DataFusion's state for every cell). The kernel links them to Rust's shared std, whose
# metadata Rust 1.95 keeps in a file beside it: scripts/evcxr/ names that file to rustc for the kernel.
export HEARTH_REAL_RUSTC="$(rustc --print sysroot)/bin/rustc"
export PATH="$PWD/scripts/evcxr:$PATH"
# The fleet notebook runs against a fleet of this checkout's `hearth`.
cargo build --quiet --workspace --all-features --bin hearth  # the features ./dev test builds with: no rebuild
target_dir="$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"

# Cells link libtorch too: PyTorch's whole install (scripts/pytorch.sh), whatever the machine has. The kernel
# links tch as a shared library, whose link names libtorch.so, which needs libtorch_cuda.so and every CUDA
# library (hearth's own programs link only libtorch_cpu.so and load libtorch_cuda.so where it is there).
LIBTORCH="$(libtorch_of "$(scripts/pytorch.sh)")"
export LIBTORCH
export LD_LIBRARY_PATH="$sysroot_lib:$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$kernel/bin/evcxr_jupyter" --install >/dev/null

if [[ $# -eq 0 ]]; then set -- notebooks/*.ipynb; fi
exec "$venv/bin/python" scripts/notebooks.py --work "$cache/work" --executed "$cache/executed" \
    --hearth "$target_dir/debug/hearth" "$@"
