#!/usr/bin/env bash
# The fp32 narrow softmin's row references side by side (FLASHSINKHORN_NARROW_REFERENCE, kernel_variant.hpp):
# the forward benchmark (authors' protocol, 10 alternating iterations) once per choice on the same
# sizes and seeds, merged into one results file whose rows carry `narrow_reference` (and `kernel`).
# The figures behind softmin_launch.cu's predicted_reference_pays come from here, and with
# PRECISIONS=fp32,tf32 those behind tf32_runs_narrow: tf32 under `online` is the wgmma kernel, under
# `auto` the narrow one where it predicts.
#   BENCH=build-gpu/bench/flashsinkhorn_gpu_bench FS_COMMIT=... bench/narrow_reference_ab.sh OUT.json
# Environment: SIZES (n x d list), CHOICES (default "online auto predicted"), PRECISIONS (default fp32),
# REPEATS (default 7), MARGINS (FLASHSINKHORN_NARROW_MARGIN values; unset: the library's default
# margin; a margin changes only the predicted references, so `online` runs once, under the first),
# EXP2S (FLASHSINKHORN_EXP2 values, default "mufu"; `split` takes a quarter of the warp-specialised
# wgmma kernel's predicted exponentials to the FMA pipe — bf16's with KERNELS=ws; `online` runs once,
# under the first), KERNELS (FLASHSINKHORN_KERNEL values, default: none forced; e.g. "- ws" runs each choice
# with the defaults and again with the warp-specialised kernel for every precision, so bf16's tma and
# ws kernels meet; `-` means none forced).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?usage: bench/narrow_reference_ab.sh OUT.json}"
bench="${BENCH:-$here/../build/bench/flashsinkhorn_gpu_bench}"
sizes="${SIZES:-10000x3,20000x3,50000x3,50000x4,50000x8,50000x12,50000x16,100000x1,100000x2,200000x3}"
lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
for kernel in ${KERNELS:--}; do
  [[ "$kernel" == - ]] && kernel=""
  first=1
  for exp2 in ${EXP2S:-mufu}; do
    for margin in ${MARGINS:-default}; do
      for choice in ${CHOICES:-online auto predicted}; do
        [[ "$choice" == online && $first == 0 ]] && continue
        if [[ "$margin" != default ]]; then export FLASHSINKHORN_NARROW_MARGIN="$margin"; fi
        FLASHSINKHORN_KERNEL="$kernel" FLASHSINKHORN_EXP2="$exp2" FLASHSINKHORN_NARROW_REFERENCE="$choice" "$bench" \
          --sizes "$sizes" --precisions "${PRECISIONS:-fp32}" --repeats "${REPEATS:-7}" >> "$lines"
      done
      first=0
    done
  done
done
# Its own kind: BENCHMARKS.md's gpu_forward tables take the latest gpu_forward file, and these rows
# are one precision under forced variants.
FS_BENCHMARK=narrow_reference_ab python3 "$here/merge_gpu_results.py" "$target" "$lines" > /dev/null
python3 - "$target" "$here/suite" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[2])
from report_narrow import choice_label, margins_of
rows = json.load(open(sys.argv[1]))["rows"]
margins = margins_of(rows)
label = lambda r: choice_label(r, margins)
by = {(r["n"], r["d"], r["precision"], label(r)): r for r in rows}
choices = sorted({label(r) for r in rows})
print(f"{'n':>7} {'d':>3} {'mode':>5} " + " ".join(f"{c:>20}" for c in choices) + "   ms per iteration [kernel]")
for n, d, p in sorted({(r["n"], r["d"], r["precision"]) for r in rows}, key=lambda k: (k[2], k[1], k[0])):
    cells = [by.get((n, d, p, c)) for c in choices]
    print(f"{n:>7} {d:>3} {p:>5} " + " ".join(
        f"{r['ms_per_iteration']:>10.4f} [{r['kernel'][:7]:>7}]" if r else f"{'-':>20}" for r in cells))
EOF
