#!/usr/bin/env bash
# The fp32 narrow softmin's row references side by side (FLASHSINKHORN_NARROW_REFERENCE, kernel_variant.hpp):
# the forward benchmark (authors' protocol, 10 alternating iterations) once per choice on the same
# sizes and seeds, merged into one results file whose rows carry `narrow_reference`. The figures
# behind softmin_launch.cu's predicted_reference_pays come from here.
#   BENCH=build-gpu/bench/flashsinkhorn_gpu_bench FS_COMMIT=... bench/narrow_reference_ab.sh OUT.json
# Environment: SIZES (n x d list), CHOICES (default "online auto predicted"), REPEATS (default 7).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?usage: bench/narrow_reference_ab.sh OUT.json}"
bench="${BENCH:-$here/../build/bench/flashsinkhorn_gpu_bench}"
sizes="${SIZES:-10000x3,20000x3,50000x3,50000x4,50000x8,50000x12,50000x16,100000x1,100000x2,200000x3}"
lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
for choice in ${CHOICES:-online auto predicted}; do
  FLASHSINKHORN_NARROW_REFERENCE="$choice" "$bench" --sizes "$sizes" --precisions fp32 --repeats "${REPEATS:-7}" >> "$lines"
done
# Its own kind: BENCHMARKS.md's gpu_forward tables take the latest gpu_forward file, and these rows
# are one precision under forced variants.
FS_BENCHMARK=narrow_reference_ab python3 "$here/merge_gpu_results.py" "$target" "$lines" > /dev/null
python3 - "$target" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
by = {(r["n"], r["d"], r["narrow_reference"]): r["ms_per_iteration"] for r in rows}
choices = sorted({r["narrow_reference"] for r in rows})
print(f"{'n':>7} {'d':>3} " + " ".join(f"{c:>10}" for c in choices) + "   ms per iteration, fp32")
for n, d in sorted({(r["n"], r["d"]) for r in rows}, key=lambda k: (k[1], k[0])):
    print(f"{n:>7} {d:>3} " + " ".join(f"{by.get((n, d, c), float('nan')):>10.4f}" for c in choices))
EOF
