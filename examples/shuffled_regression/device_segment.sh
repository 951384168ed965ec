#!/usr/bin/env bash
# One segment of a shuffled-regression run on the GPU machine, in one device call (issue 8's n = 10⁵
# runs outlast a call's 10 minutes): builds the wheel (tools/gpu_check.sh's python stage), runs
# run.py --runs RUN for what is left of DEADLINE seconds, continuing RESUME_DIR when given, and packs
# the report under $OUT. From the repository root:
#   examples/shuffled_regression/device_segment.sh adam 100000 [RESUME_DIR]
#   (hybrid with an Adam-alone RESUME_DIR: the gated hybrid continues that run, run.py --check-gradient-norm,
#   when REGRESSION_ARGS leave out the default --check-at-start — a hybrid that checks at W0 cannot)
#   examples/shuffled_regression/device_segment.sh both 100000 [RESUME_DIR [HYBRID_RESUME_DIR]]
#   (kind nvidia-h200-x2: Adam alone on GPU 0 and the hybrid on GPU 1 in the same call, each with the
#   whole budget; the same GPU model, so their clocks compare as in two calls — check the steps both
#   runs share)
# Environment (defaults in brackets):
#   DEADLINE        seconds from this script's start by which run.py must have ended [540]
#   MARGIN          seconds kept after the run's budget: the solve in flight when the budget runs out is cut
#                   at it (run.py --budget-seconds, status stopped), so this covers the report, the last
#                   chunk of iterations and, for a run that finished, its end-point λ_min (~60 s at n = 10⁵) [90]
#   REGRESSION_ARGS run.py's settings; a resumed segment must use the same ones [the recommended fp32
#                   settings of README.md, Commands, with ω = 'auto' and the checks' gradient gate 0.1]
#   FS_COMMIT       recorded by the wheel build [unknown]
#   WHEEL_DIR       a folder (carried, git-ignored, e.g. .fs_wheel/) holding a wheel and its wheel.sources
#                   as an earlier call returned them: installed instead of building one (~60 s) when
#                   wheel.sources is this tree's sources hash (below), else built [unset: build]. A machine
#                   still warm from an earlier call that installed a wheel from the same sources needs neither.
# Writes $OUT/segment_<run>_n<n>.tgz (the report, the potentials, the log), $OUT/segment.log and the wheel
# it built with its wheel.sources.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
run="${1:?which run: adam, hybrid or both}"
n="${2:?n}"
resume="${3:-}"
out="${OUT:-$PWD/out}"
started=$SECONDS
deadline="${DEADLINE:-540}"
margin="${MARGIN:-90}"
args="${REGRESSION_ARGS:---device cuda --init-scale 0 --relaxation auto --forcing 1e-3 --check-every 200 --check-gradient-norm 0.1 \
--negative-tol 0.05 --switch-threshold -0.05 --hybrid-adam-iters 20000 --adam-iters 20000 --sinkhorn-tol 2e-4 \
--tol 3e-3 --precision fp32 --warm-trials --refine-iters 300 --hvp-tol 1e-4 --forcing-max 0.01 --dense-model-dimension 10 --check-at-start --quiet}"
log="$out/segment.log"
mkdir -p "$out"

# What the wheel is built from: a call on a machine still warm from an earlier call of this session
# that installed a wheel from the same sources reuses it (~60 s saved; the device tree has no .git).
sources=$(find CMakeLists.txt pyproject.toml cmake include src python -type f -not -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
  sha256sum | cut -c1-16)
if [[ -f /tmp/pysite/.sources && "$(cat /tmp/pysite/.sources)" == "$sources" ]]; then
  echo "the wheel installed by an earlier call on this machine (sources $sources)" >> "$log"
elif [[ -n "${WHEEL_DIR:-}" && -f "$WHEEL_DIR/wheel.sources" && "$(cat "$WHEEL_DIR/wheel.sources")" == "$sources" ]] &&
  ls "$WHEEL_DIR"/flashsinkhorn-*.whl > /dev/null 2>&1; then
  # a wheel an earlier call built from the same sources (carried): ~60 s saved
  echo "the carried wheel of $WHEEL_DIR (sources $sources)" >> "$log"
  rm -rf /tmp/pysite
  python3 -m pip install -q --no-deps --no-index --upgrade --target /tmp/pysite "$WHEEL_DIR"/flashsinkhorn-*.whl >> "$log" 2>&1
else
  [[ -n "${WHEEL_DIR:-}" ]] && echo "$WHEEL_DIR: no wheel of sources $sources there; building one" >> "$log"
  rm -rf /tmp/pysite
  STAGES="python" PYTHON_TESTS=0 OVERHEAD=0 DEADLINE=300 tools/gpu_check.sh >> "$log" 2>&1
  cp /tmp/wheel/flashsinkhorn-*.whl "$out/" 2> /dev/null && echo "$sources" > "$out/wheel.sources"  # for WHEEL_DIR
fi
[[ -d /tmp/pysite/flashsinkhorn ]] && echo "$sources" > /tmp/pysite/.sources
[[ -d /tmp/pysite/flashsinkhorn ]] || { echo "no wheel installed (segment.log)"; exit 1; }
budget=$(( deadline - (SECONDS - started) - margin ))
(( budget >= 30 )) || { echo "no time left for a segment (budget $budget s)"; exit 1; }
# One run.py on GPU `gpu` for `budget` seconds, continuing `from` when given; its report, potentials and
# log under /tmp/segment/<run>_n<n>, packed into $OUT/segment_<run>_n<n>.tgz. Returns run.py's status.
segment() {
  local which="$1" from="$2" gpu="$3" dir="/tmp/segment/${1}_n${n}" code
  rm -rf "$dir" && mkdir -p "$dir"
  echo "== run.py --runs $which --n $n --budget-seconds $budget ${from:+--resume $from} on GPU $gpu (at $((SECONDS - started)) s)" | tee -a "$log"
  # shellcheck disable=SC2086  # REGRESSION_ARGS is a list of options
  CUDA_VISIBLE_DEVICES="$gpu" PYTHONPATH=/tmp/pysite timeout $(( deadline - (SECONDS - started) )) python3 -u \
    examples/shuffled_regression/run.py $args --n "$n" --runs "$which" --budget-seconds "$budget" \
    ${from:+--resume "$from"} --out-dir "$dir" > "$dir/run.log" 2>&1
  code=$?
  echo "run.py --runs $which exit $code at $((SECONDS - started)) s" | tee -a "$log"
  tail -n 5 "$dir/run.log" | tee -a "$log"
  tar czf "$out/segment_${which}_n${n}.tgz" -C "$(dirname "$dir")" "$(basename "$dir")"
  return "$code"
}

if [[ "$run" != both ]]; then
  segment "$run" "$resume" 0
  exit $?
fi
# both: Adam alone on GPU 0 and the hybrid on GPU 1 at once (two GPUs of one host, one call for both);
# the hybrid continues HYBRID_RESUME_DIR, else RESUME_DIR (a gated hybrid continuing Adam's run).
gpus=$(nvidia-smi --list-gpus 2> /dev/null | wc -l)
(( gpus >= 2 )) || { echo "both: needs two GPUs, this machine has $gpus"; exit 1; }
segment adam "$resume" 0 &
adam_pid=$!
segment hybrid "${4:-$resume}" 1 &
hybrid_pid=$!
wait "$adam_pid"; adam_status=$?
wait "$hybrid_pid"; hybrid_status=$?
exit $(( adam_status != 0 ? adam_status : hybrid_status ))
