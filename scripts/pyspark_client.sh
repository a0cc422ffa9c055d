#!/usr/bin/env bash
# Installs PySpark's Spark Connect client — PyPI's pyspark-client (pure Python, no JVM) with the packages it
# imports for DataFrames and pyspark.ml — into a virtual environment in hearth's cache, once per machine, and
# prints the environment's directory. The tests of `hearth connect` drive the server with its Python.
#
#   scripts/pyspark_client.sh              # install if missing, print the environment's directory
#   scripts/pyspark_client.sh --installed  # print it if installed, else fail without installing
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

client_version="4.2.0"
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
echo "$venv"
