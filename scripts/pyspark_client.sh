#!/usr/bin/env bash
# Installs PySpark's Spark Connect client — PyPI's pyspark-client (pure Python, no JVM) with the packages it
# imports for DataFrames and pyspark.ml — into a virtual environment in hearth's cache, once per machine, and
# prints the environment's directory. The tests of `hearth connect` drive the server with its Python; the
# older clients on PyPI (4.0 and 4.1, pure Python too, sharing the environment's packages) sit in its
# clients/VERSION directories, for PYTHONPATH.
#
#   scripts/pyspark_client.sh              # install if missing, print the environment's directory
#   scripts/pyspark_client.sh --installed  # print it if installed, else fail without installing
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

client_version="4.2.0"
older_clients=(4.0.4 4.1.3)
venv="$hearth_cache/pyspark-client-$client_version"
if [[ "${1:-}" == --installed ]]; then
    [[ -f "$venv/.hearth-complete" ]] && echo "$venv"
    exit
fi
if [[ ! -f "$venv/.hearth-complete" ]]; then
    say "installing PySpark's Connect client (PyPI pyspark-client==$client_version with pandas, pyarrow, grpcio, ~150 MB) into $venv"
    new_venv "$venv" "PySpark's Connect client (PyPI's pyspark-client)"
    "$venv/bin/python" -m pip install --quiet "pyspark-client==$client_version" "pandas>=2.2,<3" "pyarrow>=15" numpy \
        "grpcio>=1.67" "grpcio-status>=1.67" "googleapis-common-protos>=1.65" zstandard
    touch "$venv/.hearth-complete"
fi
for older in "${older_clients[@]}"; do
    target="$venv/clients/$older"
    if [[ ! -f "$target/.hearth-complete" ]]; then
        say "installing PySpark's Connect client $older (~20 MB) into $target"
        rm -rf "$target"
        "$venv/bin/python" -m pip install --quiet --no-deps --target "$target" "pyspark-client==$older"
        touch "$target/.hearth-complete"
    fi
done
echo "$venv"
