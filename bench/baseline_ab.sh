#!/usr/bin/env bash
# This tree's forward benchmark beside a baseline tree's (an earlier commit staged by
# tools/stage_baseline_tree.sh and built by gpu_check's stage `baseline`), on the same machine and
# inputs, interleaved round by round, so that a difference between them is the code's and not the
# machine's. Rows carry `tree` (baseline / current), `tree_commit` and `round`.
#   BASELINE_BENCH=.baseline/5dc5e35/build-gpu/bench/flashsinkhorn_gpu_bench BASELINE_COMMIT=5dc5e35 \
#   BENCH=build-gpu/bench/flashsinkhorn_gpu_bench FS_COMMIT=<hash> bench/baseline_ab.sh OUT.json
# Environment: SIZES (n x d list, default 50000x1024,10000x512), PRECISIONS (default tf32,bf16),
# REPEATS (default 5), ROUNDS (default 2), BASELINE_ENV / CURRENT_ENV (space-separated VAR=value for
# one side, e.g. CURRENT_ENV="FLASHSINKHORN_STREAMED_QUERY_PAIRS=off"; BOTH_ENV for both).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?usage: bench/baseline_ab.sh OUT.json}"
lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
run() {  # run TREE COMMIT BINARY ROUND ENV...: the bench's JSON lines, tagged
  local tree="$1" commit="$2" binary="$3" round="$4"
  shift 4
  # shellcheck disable=SC2086
  env ${BOTH_ENV:-} "$@" "$binary" --sizes "${SIZES:-50000x1024,10000x512}" --precisions "${PRECISIONS:-tf32,bf16}" \
    --repeats "${REPEATS:-5}" |
    python3 -c 'import json, sys
tree, commit, round_ = sys.argv[1:4]
for line in sys.stdin:
    if line.startswith("{"):
        row = json.loads(line)
        row.update(tree=tree, tree_commit=commit, round=int(round_))
        print(json.dumps(row))' "$tree" "$commit" "$round" >> "$lines"
}
for round in $(seq 1 "${ROUNDS:-2}"); do
  # shellcheck disable=SC2086
  run baseline "${BASELINE_COMMIT:?}" "${BASELINE_BENCH:?}" "$round" ${BASELINE_ENV:-}
  # shellcheck disable=SC2086
  run current "${FS_COMMIT:-unknown}" "${BENCH:?}" "$round" ${CURRENT_ENV:-}
done
FS_BENCHMARK=baseline_ab python3 "$here/merge_gpu_results.py" "$target" "$lines" > /dev/null
python3 - "$target" <<'PY'
import json, statistics, sys
rows = json.load(open(sys.argv[1]))["rows"]
cases = sorted({(r["n"], r["d"], r["precision"]) for r in rows}, key=lambda k: (k[2], k[1], k[0]))
def median_ms(case, tree):
    times = [r["ms_per_iteration"] for r in rows if (r["n"], r["d"], r["precision"]) == case and r["tree"] == tree]
    return statistics.median(times) if times else float("nan")
print(f"{'n':>7} {'d':>5} {'mode':>5} {'baseline':>10} {'current':>10} {'current/baseline':>17}   ms an iteration, median of the rounds")
for case in cases:
    base, cur = median_ms(case, "baseline"), median_ms(case, "current")
    print(f"{case[0]:>7} {case[1]:>5} {case[2]:>5} {base:>10.3f} {cur:>10.3f} {cur / base:>17.3f}")
PY
