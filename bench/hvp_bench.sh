#!/usr/bin/env bash
# The streaming HVP on the GPU against flash-sinkhorn's (issue 5), on the issue's protocol:
# x, y, A ~ N(0, I_d) float32 (seed 0), uniform weights, cost ‖x − y‖², ε = 0.1, 50 Sinkhorn
# iterations, then one H·A with respect to X.
#   ours            `flashsinkhorn hvp --iters 50 --tol 0 --repeat 2`, per precision, per CG
#                   tolerance (CG_TOLS; default 2e-5, the residual flash-sinkhorn's CG reached at
#                   10,000 × 64 on the H200, and 1e-4), and per system (RIDGES, default "0 parity"):
#                   exact (ridge 0) and damped as flash-sinkhorn's (its shift ε·tau2 with
#                   tau2 = 1e-5 is ridge = ε·tau2·m here); plus the fixed-potential part alone
#                   (--part fixed, no CG) — from n = 200,000 the first precision only, no repeats
#   flash-sinkhorn  bench/hvp_peer.py (its hvp_x_sqeuclid, defaults) in PEER_PRECISIONS at the sizes
#                   PEER_SIZES, last (its Triton autotuning takes minutes on the first call)
# One JSON line per run into OUT; ours carry the relative difference from the peer's product when
# both ran. bench/hvp_report.py turns them into bench/results/ JSON.
#   bench/hvp_bench.sh OUT.jsonl [CLI] [SIZES] [PRECISIONS] [PEER_SIZES]
# HVP_CG_ITERS caps the CG iterations of our runs (default 2,000). PRECONDITIONERS (default
# "diagonal"): the CG preconditioners of our runs (flashsinkhorn hvp --preconditioner).
set -euo pipefail
out="$1"
cli="${2:-build-gpu/apps/cli/flashsinkhorn}"
sizes="${3:-10000x64,50000x64,200000x64}"
precisions="${4:-tf32 fp32}"
peer_sizes="${5:-10000x64}"
peer_precisions="${PEER_PRECISIONS:-tf32 fp32}"
cg_tols="${CG_TOLS:-2e-5 1e-4}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

data() {  # $1 = n, $2 = d → $work/<size>/{x,y,dir}.npy
  mkdir -p "$work/$1x$2"
  python3 -c "
import numpy as np
r = np.random.default_rng(0)
for name in ('x', 'y', 'dir'):
    np.save('$work/$1x$2/' + name + '.npy', r.normal(size=($1, $2)).astype(np.float32))"
}

for size in ${sizes//,/ }; do
  n="${size%x*}" d="${size#*x}"
  data "$n" "$d"
  run_precisions="$precisions" repeat=2
  (( n >= 200000 )) && { run_precisions="${precisions%% *}"; repeat=0; }
  parity_ridge=$(python3 -c "print(0.1 * 1e-5 * $n)")
  ridges=""
  for r in ${RIDGES:-0 parity}; do ridges="$ridges ${r/parity/$parity_ridge}"; done
  for precision in $run_precisions; do
    # The fixed-potential part alone (no CG): the two-GEMM term's share of the time.
    dir="$work/$size/ours_${precision}_fixed"
    "$cli" hvp --x "$work/$size/x.npy" --y "$work/$size/y.npy" --dir "$work/$size/dir.npy" --eps 0.1 --iters 50 \
      --tol 0 --part fixed --repeat "$repeat" --precision "$precision" --device cuda --quiet --out "$dir" > "$dir.json" \
      || rm -f "$dir.json"
    for ridge in $ridges; do
      for cg_tol in $cg_tols; do
        for preconditioner in ${PRECONDITIONERS:-diagonal}; do
          dir="$work/$size/ours_${precision}_${ridge}_${cg_tol}_$preconditioner"
          if line=$(timeout 200 "$cli" hvp --x "$work/$size/x.npy" --y "$work/$size/y.npy" --dir "$work/$size/dir.npy" \
                      --eps 0.1 --iters 50 --tol 0 --cg-tol "$cg_tol" --cg-ridge "$ridge" --cg-iters "${HVP_CG_ITERS:-2000}" \
                      --preconditioner "$preconditioner" --repeat "$repeat" --precision "$precision" --device cuda --quiet \
                      --out "$dir"); then
            echo "$line" > "$dir.json"
          else
            echo "{\"impl\": \"flashsinkhorn\", \"n\": $n, \"d\": $d, \"precision\": \"$precision\", \"cg_tolerance\": $cg_tol, \"cg_ridge\": $ridge, \"preconditioner\": \"$preconditioner\", \"error\": \"hvp run failed or timed out\"}" >> "$out"
          fi
        done
      done
    done
  done
  if [[ ",$peer_sizes," == *",$size,"* ]]; then
    for peer_precision in $peer_precisions; do
      flag=""; [[ "$peer_precision" == tf32 ]] && flag="--tf32"
      if line=$(timeout 300 python3 "$here/hvp_peer.py" "$work/$size/x.npy" "$work/$size/y.npy" "$work/$size/dir.npy" \
                  "$work/$size/peer_$peer_precision" $flag 2>> "$work/peer.log"); then
        echo "$line" >> "$out"
      else
        echo "{\"impl\": \"flash-sinkhorn\", \"n\": $n, \"d\": $d, \"allow_tf32\": \"$peer_precision\", \"error\": \"$(tail -n 1 "$work/peer.log" | tr -d '"\\')\"}" >> "$out"
      fi
    done
  fi
  # Our lines, with the distance to the peer's products of this size.
  python3 - "$work/$size" >> "$out" <<'PY'
import glob, json, os, sys
import numpy as np
folder = sys.argv[1]
peers = {p: np.load(os.path.join(folder, f"peer_{p}.npy")) for p in ("tf32", "fp32")
         if os.path.exists(os.path.join(folder, f"peer_{p}.npy"))}
for summary in sorted(glob.glob(os.path.join(folder, "ours_*.json"))):
    record = json.load(open(summary))
    record["impl"] = "flashsinkhorn"
    ours = np.load(os.path.join(summary[:-len(".json")], "hvp.npy")).astype(np.float64)
    record["hvp_norm"] = float(np.linalg.norm(ours))
    for name, theirs in peers.items():
        record[f"relative_difference_vs_peer_{name}"] = float(np.linalg.norm(ours - theirs) / np.linalg.norm(theirs))
    print(json.dumps(record))
PY
done
[[ -s "$work/peer.log" ]] && { echo "== peer log"; tail -n 20 "$work/peer.log"; } >&2
exit 0
