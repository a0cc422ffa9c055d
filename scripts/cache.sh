# Sourced by hearth's scripts: hearth's cache outside the clone ($HEARTH_CACHE, else $XDG_CACHE_HOME/hearth,
# else ~/.cache/hearth) in $hearth_cache, and `say`, which tells the user on standard error.
hearth_cache="${HEARTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hearth}"

say() { echo "[hearth] $*" >&2; }
