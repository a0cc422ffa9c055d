# Sourced by scripts/libtorch.sh and scripts/pytorch.sh: the pinned version, the Python packages the tests read
# beside torch, and helpers that make and check a virtual environment in hearth's cache.
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

torch_version="2.13.0"
python_extras=(safetensors numpy "pyarrow==22.0.0")
export PIP_DISABLE_PIP_VERSION_CHECK=1

# A new, empty virtual environment at $1 (whatever was there is removed), made with python3 from PATH.
new_venv() {
    local python
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
    rm -rf "$1"
    mkdir -p "$(dirname "$1")"
    "$python" -m venv "$1"
}

# The libtorch directory (include/ and lib/) inside the environment at $1; exits naming the damage when its
# libtorch_cpu.so is missing.
libtorch_of() {
    local site
    site="$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$site/torch"
}
check_libtorch() {
    local libtorch
    libtorch="$(libtorch_of "$1")"
    if [[ ! -f "$libtorch/lib/libtorch_cpu.so" ]]; then
        say "$libtorch/lib/libtorch_cpu.so is missing: the cache at $1 is damaged; delete it and run this again."
        exit 1
    fi
}
