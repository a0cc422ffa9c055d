# Sourced by hearth's scripts: hearth's cache outside the clone ($HEARTH_CACHE, else $XDG_CACHE_HOME/hearth,
# else ~/.cache/hearth) in $hearth_cache, `say`, which tells the user on standard error, and `new_venv`.
hearth_cache="${HEARTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth}"

export PIP_DISABLE_PIP_VERSION_CHECK=1

say() { echo "[hearth] $*" >&2; }

# A new, empty virtual environment at $1 (whatever was there is removed), made with python3 from PATH; $2 names
# what it is for when python3 or pip is missing.
new_venv() {
    local python
    python="$(command -v python3 || true)"
    if [[ -z "$python" ]]; then
        say "python3 is not on PATH: it is needed once to install ${2:-a Python tool} from PyPI."
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
