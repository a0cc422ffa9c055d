#!/usr/bin/env bash
# Installs cargo-modules (rust-analyzer's view of a crate's modules and items) into hearth's cache once, and
# prints the directory that holds it. scripts/module_cycles.py uses it to find module cycles.
#
# usage: scripts/cargo_modules.sh      # about 15 minutes on two cores the first time, then instant
set -euo pipefail
source "$(dirname "$0")/cache.sh"

# 0.27 is the last release that builds with Rust 1.95.
version="0.27.0"
root="$hearth_cache/tools/cargo-modules-$version"
if [[ ! -x "$root/bin/cargo-modules" ]]; then
    say "installing cargo-modules $version into $root (once)"
    build="$(mktemp -d)"
    trap 'rm -rf "$build"' EXIT
    CARGO_TARGET_DIR="$build" cargo install --quiet --locked --root "$root" "cargo-modules@$version"
fi
echo "$root/bin"
