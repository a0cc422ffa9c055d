#!/usr/bin/env bash
# The `hearth` program on a GPU, as a user meets it (≤ 3 minutes): SQL's CREATE MODEL with device = 'cuda',
# ML.EVALUATE and ML.PREDICT over 100,000 rows, two cuda ranks asked of one GPU, then a fleet started with
# `hearth cluster start`, its GPUs in `hearth status`, and the same model trained on it (`hearth submit`). The counterpart of
# scripts/gpu_check.sh (the trainer's speed) for the program.
#
#   scripts/gpu_fleet_check.sh HEARTH LIBTORCH_DIR
#
#   HEARTH         the hearth program (target/release/hearth), or its .xz from a bundle
#   LIBTORCH_DIR   the libtorch it runs on: the directory holding lib/ (e.g. python3's torch package directory)
#
# Run from the project's root (the data is datasets/german_credit). Every step has a time limit; the script goes
# on past a failed step and exits 1 at the end if one failed.
set -uo pipefail
if [[ $# -ne 2 ]]; then
    echo "usage: scripts/gpu_fleet_check.sh HEARTH LIBTORCH_DIR" >&2
    exit 2
fi
hearth="$1" libtorch="$2"
[[ -f "$libtorch/lib/libtorch_cpu.so" ]] || { echo "$libtorch/lib/libtorch_cpu.so: no libtorch there" >&2; exit 2; }
[[ -f "$hearth" ]] || { echo "$hearth: no such program" >&2; exit 2; }
work="$(mktemp -d)"
export HEARTH_CLUSTER_DIR="$work/cluster"
cleanup() {
    timeout 30 "$hearth" cluster stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
hearth="$(unpacked "$hearth" "$work" hearth)"
use_libtorch "$libtorch" "$work"

failed=0
step() {
    local seconds="$1"
    shift
    echo "== ${*:2}"
    local start=$SECONDS
    timeout "$seconds" "$@"
    local rc=$?
    echo "-- exit $rc after $((SECONDS - start)) s"
    echo
    return $rc
}
expect_ok() { step "$@" || failed=1; }
expect_error() {
    if step "$@"; then
        echo "   (expected an error)"
        failed=1
    fi
}

model_sql() { # NAME WORKERS
    cat <<SQL
CREATE EXTERNAL TABLE IF NOT EXISTS credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv'
OPTIONS ('format.has_header' 'true');
CREATE OR REPLACE MODEL $1
OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['class'], hidden_units = [32, 16], dropout = 0.1,
         optimizer = 'adam', learn_rate = 0.001, max_iterations = 20, batch_size = 32, seed = 7,
         workers = $2, device = 'cuda', data_split_method = 'random', data_split_eval_fraction = 0.2,
         data_split_seed = 42)
AS SELECT * FROM credit;
SELECT * FROM ML.EVALUATE(MODEL $1);
SELECT predicted_class, count(*) AS rows FROM ML.PREDICT(MODEL $1, (SELECT c.* FROM credit c CROSS JOIN range(100)))
GROUP BY predicted_class ORDER BY predicted_class;
SQL
}
model_sql credit_gpu 1 > "$work/local.sql"
model_sql credit_two_ranks 2 > "$work/two_ranks.sql"
model_sql credit_fleet 1 > "$work/fleet.sql"

echo "== machine"
nvidia-smi -L || echo "(nvidia-smi did not answer)"
echo "hearth links: $(readelf -d "$hearth" | grep -o 'lib[a-z_0-9]*\(torch\|c10\|cuda\)[a-z_0-9]*\.so[.0-9]*' | sort -u | tr '\n' ' ')"
echo
expect_ok 120 "$hearth" sql --models "$work/models" "$work/local.sql"
expect_error 60 "$hearth" sql --models "$work/models" "$work/two_ranks.sql"
expect_ok 90 "$hearth" cluster start --executors 1 --gpus auto
expect_ok 30 "$hearth" status
expect_ok 120 "$hearth" submit --models "$work/models" "$work/fleet.sql"
expect_ok 30 "$hearth" cluster stop
exit $failed
