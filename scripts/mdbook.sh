#!/usr/bin/env bash
# Installs mdBook 0.4.52 — crates.io's mdbook, built by `cargo install --locked` — into hearth's
# cache, once per machine, and prints the path of its binary. `./dev docs` builds the user guide (docs/) with it.
#
#   scripts/mdbook.sh             # install if missing, print the mdbook binary's path
#   scripts/mdbook.sh --installed # print it if installed, else fail without installing
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

mdbook_version="0.4.52"
root="$hearth_cache/mdbook-$mdbook_version"
if [[ "${1:-}" == --installed ]]; then
    [[ -f "$root/.hearth-complete" ]] && echo "$root/bin/mdbook"
    exit
fi
if [[ ! -f "$root/.hearth-complete" ]]; then
    if ! command -v cargo >/dev/null 2>&1; then
        say "cargo is not on PATH: it is needed once to build mdBook $mdbook_version from crates.io (install Rust with rustup)."
        exit 1
    fi
    say "installing mdBook $mdbook_version (cargo install mdbook --locked, once) into $root"
    rm -rf "$root"
    # Built in a directory of its own (not a CARGO_TARGET_DIR the caller set), its output on standard error:
    # standard output is the binary's path alone.
    build="$(mktemp -d)"
    trap 'rm -rf "$build"' EXIT
    CARGO_TARGET_DIR="$build" cargo install mdbook --locked --version "$mdbook_version" --root "$root" >&2
    touch "$root/.hearth-complete"
fi
if [[ ! -x "$root/bin/mdbook" ]]; then
    say "$root/bin/mdbook is missing: the cache at $root is damaged; delete it and run this again."
    exit 1
fi
echo "$root/bin/mdbook"
