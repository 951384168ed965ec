#!/usr/bin/env bash
# The streaming HVP on the GPU against flash-sinkhorn's (issue 5), on the issue's protocol:
# x, y, A ~ N(0, I_d) float32 (seed 0), uniform weights, cost ‖x − y‖², ε = 0.1, 50 Sinkhorn
# iterations, then one H·A with respect to X.
#   flash-sinkhorn  bench/hvp_peer.py (its hvp_x_sqeuclid, defaults), tf32 and fp32, at the sizes
#                   in PEER_SIZES; its CG's reached relative residual is recorded
#   ours            `flashsinkhorn hvp --iters 50 --tol 0 --repeat 2` in each precision, CG to the
#                   peer's reached residual ("same CG tolerance") and to 1e-4, at every size (from
#                   n = 200,000: the first precision only, no repeats)
# One JSON line per run into OUT (ours: the CLI's summary; plus the relative difference from the
# peer's product when both ran). bench/hvp_report.py turns them into bench/results/ JSON.
#   bench/hvp_bench.sh OUT.jsonl [CLI] [SIZES] [PRECISIONS] [PEER_SIZES]
set -euo pipefail
out="$1"
cli="${2:-build-gpu/apps/cli/flashsinkhorn}"
sizes="${3:-10000x64,50000x64,200000x64}"
precisions="${4:-tf32 fp32}"
peer_sizes="${5:-10000x64,50000x64}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for size in ${sizes//,/ }; do
  n="${size%x*}" d="${size#*x}"
  python3 -c "
import numpy as np
r = np.random.default_rng(0)
for name in ('x', 'y', 'dir'):
    np.save('$work/' + name + '.npy', r.normal(size=($n, $d)).astype(np.float32))"
  cg_tols="1e-4"
  rm -f "$work"/peer_*.npy
  if [[ ",$peer_sizes," == *",$size,"* ]]; then
    for peer_precision in tf32 fp32; do
      flag=""; [[ "$peer_precision" == tf32 ]] && flag="--tf32"
      if line=$(timeout 300 python3 "$here/hvp_peer.py" "$work/x.npy" "$work/y.npy" "$work/dir.npy" \
                  "$work/peer_$peer_precision" $flag 2>> "$work/peer.log"); then
        echo "$line" >> "$out"
        reached=$(python3 -c "import json,sys; print('%.2g' % json.loads(sys.argv[1])['cg_relative_residual'])" "$line")
        [[ "$peer_precision" == tf32 ]] && cg_tols="$reached 1e-4"
      else
        echo "{\"impl\": \"flash-sinkhorn\", \"n\": $n, \"d\": $d, \"allow_tf32\": \"$peer_precision\", \"error\": \"$(tail -n 1 "$work/peer.log" | tr -d '"\\')\"}" >> "$out"
      fi
    done
  fi
  # The largest sizes: one precision (the first listed) and no repeats, to stay inside the device's
  # time limit (an HVP there is a few hundred pairs of passes over 4·10¹⁰ scores).
  run_precisions="$precisions" repeat=2
  (( n >= 200000 )) && { run_precisions="${precisions%% *}"; repeat=0; }
  for precision in $run_precisions; do
    for cg_tol in $cg_tols; do
      dir="$work/ours_${precision}_$cg_tol"
      if line=$(timeout 400 "$cli" hvp --x "$work/x.npy" --y "$work/y.npy" --dir "$work/dir.npy" --eps 0.1 \
                  --iters 50 --tol 0 --cg-tol "$cg_tol" --cg-iters 2000 --repeat "$repeat" --precision "$precision" \
                  --device cuda --quiet --out "$dir"); then
        python3 - "$line" "$dir/hvp.npy" "$work" >> "$out" <<'PY'
import json, os, sys
import numpy as np
record = json.loads(sys.argv[1])
record["impl"] = "flashsinkhorn"
ours = np.load(sys.argv[2]).astype(np.float64)
for peer in ("tf32", "fp32"):
    path = os.path.join(sys.argv[3], f"peer_{peer}.npy")
    if os.path.exists(path):
        theirs = np.load(path)
        record[f"relative_difference_vs_peer_{peer}"] = float(np.linalg.norm(ours - theirs) / np.linalg.norm(theirs))
record["hvp_norm"] = float(np.linalg.norm(ours))
print(json.dumps(record))
PY
      else
        echo "{\"impl\": \"flashsinkhorn\", \"n\": $n, \"d\": $d, \"precision\": \"$precision\", \"cg_tolerance\": $cg_tol, \"error\": \"hvp run failed or timed out\"}" >> "$out"
      fi
    done
  done
done
[[ -s "$work/peer.log" ]] && { echo "== peer log"; tail -n 20 "$work/peer.log"; } >&2
exit 0
