#!/usr/bin/env bash
# Where one Hessian-vector product spends its time on the GPU: the issue-5 protocol at one size
# (x, y, A ~ N(0, I_d) float32, seed 0, ε = 0.1, 50 iterations, CG tol 1e-4, ridge 1e-5·ε·n as
# flash-sinkhorn's damping), FLASHSINKHORN_TRACE=1, one trace file per precision into $OUT.
#   OUT=DIR [PRECONDITIONER=diagonal|sparse] tools/hvp_trace.sh [CLI] [N] [D] [PRECISIONS]
set -euo pipefail
cli="${1:-build-gpu/apps/cli/flashsinkhorn}"
n="${2:-10000}" d="${3:-64}" precisions="${4:-tf32 fp32}"
out="${OUT:-$PWD/out}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -c "
import numpy as np
r = np.random.default_rng(0)
for name in ('x', 'y', 'dir'):
    np.save('$work/' + name + '.npy', r.normal(size=($n, $d)).astype(np.float32))"
ridge=$(python3 -c "print(0.1 * 1e-5 * $n)")
for precision in $precisions; do
  FLASHSINKHORN_TRACE=1 "$cli" hvp --x "$work/x.npy" --y "$work/y.npy" --dir "$work/dir.npy" --eps 0.1 --iters 50 \
    --tol 0 --cg-tol 1e-4 --cg-ridge "$ridge" --preconditioner "${PRECONDITIONER:-diagonal}" --repeat 2 --precision "$precision" --device cuda --quiet \
    --out "$work/out_$precision" > "$out/hvp_trace_${n}_${precision}_${PRECONDITIONER:-diagonal}.json" 2> "$out/hvp_trace_${n}_${precision}_${PRECONDITIONER:-diagonal}.txt"
done
