#!/usr/bin/env bash
# The streamed softmin kernels' L2 rule side by side (FLASHSINKHORN_STREAMED_L2_MIB, kernel_variant.hpp;
# key_splits.hpp, streamed_query_splits), and its key pairs (FLASHSINKHORN_STREAMED_KEY_PAIRS): the
# forward benchmark (authors' protocol, 10 alternating iterations) once per (pairs, budget) on the
# same sizes and seeds, merged into one results file whose rows carry `key_pairs`, `streamed_l2_mib`
# and the `key_splits` each budget gave. 0 is the rule off (one split where the SMs are already full).
#   BENCH=build-gpu/bench/flashsinkhorn_gpu_bench FS_COMMIT=... bench/streamed_l2_ab.sh OUT.json
# Environment: SIZES (n x d list), BUDGETS (MiB, default "0 12 24 40"), PRECISIONS (default tf32,bf16),
# REPEATS (default 7), PAIRS (FLASHSINKHORN_STREAMED_KEY_PAIRS values, default "auto", the launches'
# own rule; "off on" for the A/B; "on+query" adds FLASHSINKHORN_STREAMED_QUERY_PAIRS=on, the last row
# block's query pairs; a row's `key_pairs` and `query_pairs` are what its launch ran).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?usage: bench/streamed_l2_ab.sh OUT.json}"
bench="${BENCH:-$here/../build/bench/flashsinkhorn_gpu_bench}"
lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
for pairs in ${PAIRS:-auto}; do
  query=off
  [[ "$pairs" == *+query ]] && query=on
  for budget in ${BUDGETS:-0 12 24 40}; do
    FLASHSINKHORN_STREAMED_KEY_PAIRS="${pairs%+query}" FLASHSINKHORN_STREAMED_QUERY_PAIRS="$query" \
      FLASHSINKHORN_STREAMED_L2_MIB="$budget" "$bench" \
      --sizes "${SIZES:-50000x512,50000x1024,10000x1024}" --precisions "${PRECISIONS:-tf32,bf16}" \
      --repeats "${REPEATS:-7}" >> "$lines"
  done
done
# Its own kind: BENCHMARKS.md's gpu_forward tables take the latest gpu_forward file.
FS_BENCHMARK=streamed_l2_ab python3 "$here/merge_gpu_results.py" "$target" "$lines" > /dev/null
python3 - "$target" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
def column(r):  # (key pairs, query pairs, budget); rows from before the pairs read False
    return (bool(r.get("key_pairs", False)), bool(r.get("query_pairs", False)), r["streamed_l2_mib"])
columns = sorted({column(r) for r in rows})
by = {(r["n"], r["d"], r["precision"], column(r)): r for r in rows}
def label(c):
    return ("pairs " if c[0] else "") + ("+q " if c[1] else "") + str(c[2]) + " MiB"
print(f"{'n':>7} {'d':>5} {'mode':>5} " + " ".join(f"{label(c):>22}" for c in columns)
      + "   ms an iteration [splits, % of floor]")
for n, d, p in sorted({(r["n"], r["d"], r["precision"]) for r in rows}, key=lambda k: (k[2], k[1], k[0])):
    cells = [by.get((n, d, p, c)) for c in columns]
    print(f"{n:>7} {d:>5} {p:>5} " + " ".join(
        f"{r['ms_per_iteration']:>9.3f} [{r['key_splits']:>2}, {r['roofline_fraction']:>4.0%}]" if r else f"{'-':>22}"
        for r in cells))
PY
