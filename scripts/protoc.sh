#!/usr/bin/env bash
# Installs a protobuf compiler — PyPI's grpcio-tools, whose module carries protoc and Google's well-known
# .proto files — into hearth's cache, once per machine, and prints two lines for the build of Spark Connect's
# messages (the apache-spark-connect-proto crate compiles Spark's .proto files with protoc):
#
#   PROTOC=<a protoc command in the cache>
#   PROTOC_INCLUDE=<the directory of google/protobuf/*.proto>
#
#   scripts/protoc.sh   # install if missing, print the two settings (./dev exports them)
#
# The cache is $HEARTH_CACHE, else $XDG_CACHE_HOME/hearth, else ~/.cache/hearth.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache.sh"

grpcio_tools_version="1.85.1"
venv="$hearth_cache/protoc-grpcio-tools-$grpcio_tools_version"
if [[ ! -f "$venv/.hearth-complete" ]]; then
    say "installing protoc (PyPI grpcio-tools==$grpcio_tools_version, ~3 MB) into $venv"
    new_venv "$venv" "protoc (PyPI's grpcio-tools)"
    "$venv/bin/python" -m pip install --quiet "grpcio-tools==$grpcio_tools_version"
    cat >"$venv/bin/protoc" <<WRAPPER
#!/bin/sh
exec "$venv/bin/python" -m grpc_tools.protoc "\$@"
WRAPPER
    chmod +x "$venv/bin/protoc"
    touch "$venv/.hearth-complete"
fi
include="$("$venv/bin/python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')"
echo "PROTOC=$venv/bin/protoc"
echo "PROTOC_INCLUDE=$include"
