#!/usr/bin/env bash
# Opens the built user guide (./dev docs first) in headless Chromium, as a reader would: screenshots of the
# home page and the CREATE MODEL options reference, and a search through the book's own search box. Fails when
# a page renders blank or the search finds nothing. Chromium comes from Debian's packages (installed once, as
# root, when missing).
#
#   scripts/book_check.sh [OUT_DIR]     # screenshots go to OUT_DIR (default: docs/book/screenshots)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/cache.sh

book="$PWD/docs/book"
out="${1:-$book/screenshots}"
if [[ ! -f "$book/index.html" ]]; then
    say "the guide is not built: run ./dev docs first."
    exit 1
fi
if ! command -v chromium >/dev/null 2>&1; then
    if [[ "$(id -u)" -ne 0 ]]; then
        say "chromium is missing: install it (Debian: apt-get install chromium) and run this again."
        exit 1
    fi
    say "installing chromium from Debian's packages (once)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
mkdir -p "$out"
browse() { timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=1280,900 "$@" 2>/dev/null; }

# A page that renders holds text, a sidebar and a table: its screenshot is far larger than a blank one (~5 KB).
for page in index.html reference/create-model-options.html; do
    shot="$out/$(basename "$page" .html).png"
    browse --screenshot="$shot" "file://$book/$page" >/dev/null
    size="$(stat -c %s "$shot" 2>/dev/null || echo 0)"
    if ((size < 50000)); then
        say "$page rendered as a near-blank screenshot ($size bytes): $shot"
        exit 1
    fi
    echo "$page: $shot ($size bytes)"
done

# The book's search (its JavaScript index) finds an option on the pages that name it.
found="$(browse --virtual-time-budget=5000 --dump-dom "file://$book/index.html?search=max_rank_memory_mb" |
    grep -o 'href="[a-z/-]*\.html?highlight=max_rank_memory_mb' | sort -u || true)"
if [[ -z "$found" ]]; then
    say "the book's search found nothing for max_rank_memory_mb"
    exit 1
fi
echo "search for max_rank_memory_mb found:"
sed 's/^href="/  /; s/?highlight=.*//' <<<"$found"
