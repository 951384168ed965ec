#!/usr/bin/env bash
# The benchmark suite on a machine with several GPUs: one run_device.sh per GPU ("lane"), each with its
# own part of the grid, in parallel, so that one device call covers more of it; lanes beyond the GPU
# count run after the last GPU's lane, one after another (on one GPU: a sequence of sweeps). Lanes share nothing but
# the build and the KeOps doctor, which runs once, beside the lanes (on the last GPU): run.py reads its
# choice when a geomloss-online group starts.
#   SUITE_LANES="DS=64 OPS=forward,forward_gradient; DS=64 OPS=hvp,converge CPP=0" bench/suite/run_lanes.sh
# SUITE_LANES: lanes separated by ';', lane k on GPU k; each lane is a list of KEY=VALUE that set
# SUITE_KEY for that lane's run_device.sh (IMPLS, OPS, NS, DS, PRECISIONS, BUDGET, CPP, ...); the other
# SUITE_* variables are shared. SUITE_DEADLINE counts from this script's start.
# Writes under $OUT: suite_<tag>_lane<k>.jsonl, suite_<tag>_lane<k>_cpp.jsonl, suite_<tag>_keops.jsonl;
# the lanes' logs go to $SUITE_LOG_DIR (default /tmp/suite_logs), which tools/gpu_check.sh packs.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/out}"
logs="${SUITE_LOG_DIR:-/tmp/suite_logs}"
tag="${SUITE_TAG:-$(date -u +%F)}"
mkdir -p "$out" "$logs"
IFS=';' read -r -a lanes <<< "${SUITE_LANES:?set SUITE_LANES (lanes separated by ;)}"
gpus="$(nvidia-smi --query-gpu=index --format=csv,noheader 2> /dev/null | wc -l)"
if (( ${#lanes[@]} > gpus )); then
  echo "run_lanes: ${#lanes[@]} lanes but $gpus GPU(s); the extra lanes share GPU $((gpus - 1))" >&2
fi

# The peers' wheels and our builds, once (the lanes would race for them): what the lanes together
# run — a lane without IMPLS (and no SUITE_IMPLS) runs all ten, ours and GeomLoss online (KeOps)
# included; one without CPP our C++ benches — so that lanes of peers alone (reach runs) build nothing.
all_impls="" cpp=0 keops=0
for lane in "${lanes[@]}"; do
  impls="${SUITE_IMPLS:-}" lane_cpp="${SUITE_CPP:-1}"
  for setting in $lane; do
    case "$setting" in IMPLS=*) impls="${setting#IMPLS=}" ;; CPP=*) lane_cpp="${setting#CPP=}" ;; esac
  done
  [[ -z "$impls" || ",$impls," == *,geomloss-online,* ]] && keops=1
  all_impls+="${all_impls:+,}${impls:-flashsinkhorn-cli,flashsinkhorn-py}"
  [[ "$lane_cpp" != 0 ]] && cpp=1
done
SUITE_PREPARE_ONLY=1 SUITE_IMPLS="$all_impls" SUITE_CPP="$cpp" SUITE_LOG="$logs/prepare.log" OUT="$out" \
  bench/suite/run_device.sh || echo "run_lanes: preparing failed (see $logs/prepare.log)" >&2

# KeOps, once, on the last GPU, where a lane runs GeomLoss online.
doctor_env=/tmp/keops_choice.env
rm -f "$doctor_env"
if [[ "${SUITE_KEOPS_DOCTOR:-1}" != 0 && "$keops" == 1 ]]; then
  (
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
    CUDA_VISIBLE_DEVICES=$((gpus > 0 ? gpus - 1 : 0)) timeout 240 python3 bench/suite/keops_doctor.py --timeout 75 \
      --out "$out/suite_${tag}_keops.jsonl" --env-out "$doctor_env" > "$logs/keops_doctor.log" 2>&1
  ) &
  doctor=$!
fi

run_lane() {  # lane $1 on GPU $2; its deadline is what is left of SUITE_DEADLINE when it starts
  (
    export CUDA_VISIBLE_DEVICES=$2
    for setting in ${lanes[$1]}; do export "SUITE_$setting"; done
    SUITE_KEOPS_DOCTOR=0 SUITE_KEOPS_ENV="$doctor_env" SUITE_TAG="${tag}_lane$1" SUITE_LOG="$logs/lane$1.log" \
      OUT="$out" SUITE_DEADLINE=$(( ${SUITE_DEADLINE:-360} - SECONDS )) bench/suite/run_device.sh > "$logs/lane$1.out" 2>&1
  )
}
# One process per GPU, which runs that GPU's lanes one after another: lanes sharing a GPU at the same
# time would time each other's kernels. On one GPU this is a sequence of sweeps with grids of their
# own (e.g. reach runs whose n differ by implementation).
pids=()
last=$(( gpus > 1 ? gpus - 1 : 0 ))
for gpu in $(seq 0 "$last"); do
  (
    failed=0
    for k in "${!lanes[@]}"; do
      if (( (k < last ? k : last) == gpu )); then run_lane "$k" "$gpu" || failed=1; fi
    done
    exit $failed
  ) &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
[[ -n "${doctor:-}" ]] && wait "$doctor"
for k in "${!lanes[@]}"; do echo "== lane $k: ${lanes[$k]}"; tail -n 25 "$logs/lane$k.log"; done
exit $status
