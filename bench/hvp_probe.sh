#!/usr/bin/env bash
# First timing of the streaming HVP on a GPU (issue 5, before its device-resident CG and fused
# tensor-core two-GEMM kernel): `flashsinkhorn hvp` on the authors' protocol (x, y ~ N(0, I_d),
# uniform weights, a N(0, I) direction), one JSON line per run (the CLI's summary: solve_seconds,
# hvp_seconds, CG iterations, plan passes) into $1.
#   bench/hvp_probe.sh OUT.jsonl [CLI] [SIZES] [PRECISIONS]
set -euo pipefail
out="$1"
cli="${2:-build-gpu/apps/cli/flashsinkhorn}"
sizes="${3:-10000x64}"
precisions="${4:-fp32 tf32}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for size in ${sizes//,/ }; do
  n="${size%x*}" d="${size#*x}"
  python3 -c "
import numpy as np
r = np.random.default_rng(0)
for name in ('x', 'y', 'dir'):
    np.save('$work/' + name + '.npy', r.normal(size=($n, $d)).astype(np.float32))"
  for precision in $precisions; do
    timeout 240 "$cli" hvp --x "$work/x.npy" --y "$work/y.npy" --dir "$work/dir.npy" --eps 0.1 --tol 1e-4 \
      --cg-tol 1e-4 --precision "$precision" --device cuda --quiet --out "$work/out_$precision" >> "$out" \
      || echo "{\"n\": $n, \"d\": $d, \"precision\": \"$precision\", \"error\": \"hvp run failed or timed out\"}" >> "$out"
  done
done
