#!/usr/bin/env bash
# Runs the GPU forward benchmark and the flash-sinkhorn peer in the same run, then merges both into
# bench/results/gpu_forward_<date>.json (or $RESULTS_DIR).
#   BENCH=build/bench/flashsinkhorn_gpu_bench bench/run_gpu_bench.sh
# Environment: BENCH (our binary), OUT_DIR (logs, default bench/results), FS_COMMIT, SIZES, PEER=0 to skip,
# MMA_SYNC_PRECISIONS (default tf32,bf16; empty to skip): the same sizes again on the mma.sync kernel
# (FLASHSINKHORN_KERNEL=mma), so the JSON holds both kernel families of one run; VARIANTS (default
# empty), e.g. "ws:tf32,bf16 cpasync:tf32", likewise for other FLASHSINKHORN_KERNEL choices.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bench="${BENCH:-$here/../build/bench/flashsinkhorn_gpu_bench}"
out_dir="${OUT_DIR:-$here/results}"
sizes="${SIZES:-10000x64,50000x8,50000x64,50000x512,200000x64}"
mkdir -p "$out_dir"
date_tag="$(date -u +%Y-%m-%d)"
"$bench" --sizes "$sizes" --precisions "${PRECISIONS:-tf32,bf16,fp32}" > "$out_dir/ours.jsonl"
for variant in ${VARIANTS-}; do  # kernel:precisions
  FLASHSINKHORN_KERNEL="${variant%%:*}" timeout "${VARIANT_TIMEOUT:-150}" "$bench" --sizes "$sizes" \
    --precisions "${variant#*:}" --repeats 3 >> "$out_dir/ours.jsonl" || echo "variant $variant failed or timed out" >&2
done
mma_precisions="${MMA_SYNC_PRECISIONS-tf32,bf16}"
if [[ -n "$mma_precisions" ]]; then
  FLASHSINKHORN_KERNEL=mma "$bench" --sizes "$sizes" --precisions "$mma_precisions" --repeats 3 >> "$out_dir/ours.jsonl"
fi
if [[ "${PEER:-1}" != 0 ]]; then
  PYTHONUNBUFFERED=1 python3 "$here/peers/flash_sinkhorn_forward.py" --sizes "$sizes" \
    --precisions "${PEER_PRECISIONS:-tf32,fp32}" > "$out_dir/peers.jsonl" || echo "peer run failed" >&2
fi
python3 "$here/merge_gpu_results.py" "$out_dir/gpu_forward_${date_tag}.json" "$out_dir/ours.jsonl" "$out_dir/peers.jsonl"
