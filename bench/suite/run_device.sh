#!/usr/bin/env bash
# The benchmark suite (issue 7) on the GPU machine, in one device call: installs the carried peer
# wheels (.whl/, staged by tools/stage_peer_wheels.sh) into /tmp/site, checks KeOps
# (keops_doctor.py), runs our C++ benchmarks on the suite's (n, d) grid and then bench/suite/run.py.
# Called by tools/gpu_check.sh's `suite` stage (after `build`), or alone:
#   FS_COMMIT=$(git rev-parse --short HEAD) SUITE_NS=10000,50000 SUITE_DS=64 bench/suite/run_device.sh
# Environment (defaults in brackets):
#   SUITE_IMPLS       implementations for run.py [all ten of run.py's IMPLS]
#   SUITE_OPS         forward,forward_gradient,hvp,converge [all four]
#   SUITE_NS          n = m values [1000,10000,50000,200000,1000000]
#   SUITE_DS          d values [3,8,64,512,1024]
#   SUITE_PRECISIONS  for the peers and flashsinkhorn-cli/-py [tf32]
#   SUITE_BUDGET      seconds per case, the stop rule's limit [120; the issue's 600 needs a call of its own]
#   SUITE_START_UP    seconds the first case of a group may take beyond the budget (imports, JIT,
#                     autotuning) [120; 0 for a "largest n within the budget" lane, whose budget is all]
#   SUITE_DEADLINE    seconds (from this script's start) after which no case starts [360]; the C++
#                     benches stop starting sizes at half of it
#   SUITE_REPEATS     timed calls per case [5]   SUITE_MAX_ITERS  converge's iteration cap [2000]
#   SUITE_EPS         ε [0.1, the authors' protocol; the report labels other values in the op's name]
#   SUITE_SKIP_DONE   a glob of committed results (e.g. 'bench/results/suite_h200_*.jsonl'): cases
#                     measured there, and larger n of groups that ended there, are not run again
#                     (run.py --skip-done: the grid's gaps only) [unset: run every case]
#   SUITE_REACH       1: run.py --reach, one call per case (the largest n within the budget) [0]
#   SUITE_CPP         1: our C++ forward and plan/gradient benches on the same grid first [1]
#   SUITE_CPP_PRECISIONS  their precisions [tf32,bf16,fp32]   SUITE_CPP_TIMEOUT  seconds each [150]
#   SUITE_CPP_MAX_N   the C++ benches' largest n [200000: at 1e6 their warm-up and repeats at three
#                     precisions outlast SUITE_CPP_TIMEOUT; run.py's CLI and Python rows cover 1e6]
#   SUITE_KEOPS_DOCTOR 1: try KeOps configurations first (when geomloss-online is asked for) [1]
#   SUITE_DEVICE      cuda or cpu [cuda]
#   SUITE_KEOPS_ENV   the doctor's choice, for geomloss-online [/tmp/keops_choice.env]
#   SUITE_PREPARE_ONLY 1: install the wheels, build what is missing, and stop [0]
#   SUITE_TAG         file-name tag [date]    BUILD_DIR [build-gpu]   OUT [./out]
#   SUITE_LOG         the log [$OUT/suite_<tag>.log]
# Writes under $OUT (at most 8 files come back): suite_<tag>.jsonl (run.py's rows),
# suite_<tag>_cpp.jsonl (the C++ rows), suite_<tag>_keops.jsonl (the doctor), suite_<tag>.log.
# Several GPUs: bench/suite/run_lanes.sh runs one of these per GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-$PWD/out}"
mkdir -p "$out"
tag="${SUITE_TAG:-$(date -u +%F)}"
log="${SUITE_LOG:-$out/suite_${tag}.log}"
build="${BUILD_DIR:-build-gpu}"
ns="$(python3 -c "import sys; print(','.join(str(int(float(v))) for v in sys.argv[1].split(',')))" "${SUITE_NS:-1000,10000,50000,200000,1000000}")"
ops="${SUITE_OPS:-forward,forward_gradient,hvp,converge}"
ds="${SUITE_DS:-3,8,64,512,1024}"
impls="${SUITE_IMPLS:-flashsinkhorn-cli,flashsinkhorn-py,flashsinkhorn-py-relaxed,flash-sinkhorn,geomloss-tensorized,geomloss-online,ott-dense,ott-online,pot-dense-log,pot-lazy}"
export FS_COMMIT="${FS_COMMIT:-unknown}" PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# Triton keeps its autotuning results on disk (~/.triton/cache) for the run's later processes with the
# same shapes: flash-sinkhorn's first call autotuned for 7–44 s at n = 10⁴ in every case's process, which
# ate the case budgets and the sweep's deadline (session 35). Timed calls are unchanged (they follow a
# warm-up either way); first_call_ms of a later case then leaves the autotuning out.
export TRITON_CACHE_AUTOTUNING="${TRITON_CACHE_AUTOTUNING:-1}"
{
  echo "== suite $(date -u +%FT%TZ) commit=$FS_COMMIT ns=$ns ds=$ds impls=$impls"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} >> "$log" 2>&1

# Peers: the carried wheels, once per machine.
if [[ ! -d /tmp/site ]] && ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >> "$log" 2>&1 || echo "peer wheels failed to install" | tee -a "$log"
fi
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
# Our Python package, where tools/gpu_check.sh's python stage installed it.
[[ -d /tmp/pysite/flashsinkhorn ]] && export PYTHONPATH="/tmp/pysite:$PYTHONPATH"
# The versions of what this sweep runs (each row records its own too): importing a peer not asked for
# costs seconds (jax) to half a minute (pykeops compiles its NVRTC binder), out of the deadline.
python3 - "$impls" >> "$log" 2>&1 <<'PY'
import sys
impls = sys.argv[1].split(",")
print("python", sys.version.split()[0])
modules = ["torch", "triton"]
for prefix, names in (("flashsinkhorn", ["flashsinkhorn"]), ("flash-sinkhorn", ["flash_sinkhorn"]),
                      ("geomloss", ["geomloss"]), ("geomloss-online", ["pykeops"]), ("ott", ["jax", "ott"]),
                      ("pot", ["ot"])):
    if any(i == prefix or i.startswith(prefix + "-") for i in impls):
        modules += [m for m in names if m not in modules]
for m in modules:
    try:
        print(m, __import__(m).__version__)
    except Exception as e:
        print(m, "unavailable:", type(e).__name__, e)
PY

# Our binaries (the build stage of tools/gpu_check.sh makes them; built here when missing).
# Our CLI and C++ benches, for flashsinkhorn-cli and SUITE_CPP only: a lane of peers alone (the largest
# n within 10 minutes: SUITE_BUDGET=540 SUITE_START_UP=0 SUITE_CPP=0) keeps its call's time for the case.
if [[ ( "$impls" == *flashsinkhorn-cli* || "${SUITE_CPP:-1}" != 0 ) && ! -x "$build/apps/cli/flashsinkhorn" ]]; then
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLASHSINKHORN_CUDA=ON \
    -DFLASHSINKHORN_CUDA_ARCHITECTURES="${CUDA_ARCH:-90a}" >> "$log" 2>&1 &&
  cmake --build "$build" -j "$(nproc)" --target flashsinkhorn_cli flashsinkhorn_gpu_bench flashsinkhorn_plan_bench \
    >> "$log" 2>&1 || echo "build failed" | tee -a "$log"
fi
export FLASHSINKHORN_BIN="$PWD/$build/apps/cli/flashsinkhorn"
# Our Python package (flashsinkhorn-py), from the same build tree when no installed wheel is there:
# the extension next to a copy of the package in $build/python (python/CMakeLists.txt).
if [[ "$impls" == *flashsinkhorn-py* && ! -d /tmp/pysite/flashsinkhorn ]]; then
  if ! ls "$build"/python/flashsinkhorn/_core*.so > /dev/null 2>&1; then
    cmake -S . -B "$build" -DFLASHSINKHORN_PYTHON=ON -DFLASHSINKHORN_CUDA_ARCHITECTURES="${CUDA_ARCH:-90a}" >> "$log" 2>&1 &&
      cmake --build "$build" -j "$(nproc)" --target flashsinkhorn_python_modules >> "$log" 2>&1 ||
      echo "the Python extension failed to build" | tee -a "$log"
  fi
  export PYTHONPATH="$PWD/$build/python:$PYTHONPATH"
fi
[[ "${SUITE_PREPARE_ONLY:-0}" != 0 ]] && exit 0  # run_lanes.sh: wheels and builds once, before the lanes

if [[ "${SUITE_CPP:-1}" != 0 ]]; then
  sizes=""
  for n in ${ns//,/ }; do
    (( n <= ${SUITE_CPP_MAX_N:-200000} )) || continue
    for d in ${ds//,/ }; do sizes+="${sizes:+,}${n}x$d"; done
  done
  cpp_precisions="${SUITE_CPP_PRECISIONS:-tf32,bf16,fp32}"
  # One size per process: a size that runs out of time or memory costs only itself.
  # The C++ part gets at most half the deadline; the sizes left over are logged as not run.
  for size in ${sizes//,/ }; do
    if (( SECONDS > ${SUITE_DEADLINE:-360} / 2 )); then
      echo "C++ benches: $size not run (${SECONDS}s used, half of SUITE_DEADLINE)" | tee -a "$log"; continue
    fi
    # (rows stamped with commit, machine, date and the command by run.py --stamp)
    timeout "${SUITE_CPP_TIMEOUT:-150}" "$build/bench/flashsinkhorn_gpu_bench" --sizes "$size" --precisions "$cpp_precisions" \
      2>> "$log" | python3 bench/suite/run.py --stamp "flashsinkhorn_gpu_bench --sizes $size --precisions $cpp_precisions" \
      >> "$out/suite_${tag}_cpp.jsonl" || echo "gpu_forward_bench $size: failed or timed out" | tee -a "$log"
    if [[ "$ops" == *forward_gradient* ]]; then
      timeout "${SUITE_CPP_TIMEOUT:-150}" "$build/bench/flashsinkhorn_plan_bench" --sizes "$size" --precisions "$cpp_precisions" \
        2>> "$log" | python3 bench/suite/run.py --stamp "flashsinkhorn_plan_bench --sizes $size --precisions $cpp_precisions" \
        >> "$out/suite_${tag}_cpp.jsonl" || echo "plan_pass_bench $size: failed or timed out" | tee -a "$log"
    fi
  done
fi

if [[ "${SUITE_KEOPS_DOCTOR:-1}" != 0 && "$impls" == *geomloss-online* ]]; then
  timeout 330 python3 bench/suite/keops_doctor.py --timeout 100 --out "$out/suite_${tag}_keops.jsonl" --env-out /tmp/keops_choice.env \
    >> "$log" 2>&1 || echo "KeOps: no configuration passed (suite_${tag}_keops.jsonl has each error)" | tee -a "$log"
fi
# run.py gives geomloss-online's processes the configuration the doctor chose (this script's doctor, or
# the one run_lanes.sh runs for every lane, which may still be running when the sweep starts).
export SUITE_KEOPS_ENV="${SUITE_KEOPS_ENV:-/tmp/keops_choice.env}"

python3 bench/suite/run.py --impls "$impls" --ops "$ops" \
  --ns "$ns" --ds "$ds" --precisions "${SUITE_PRECISIONS:-tf32}" --device "${SUITE_DEVICE:-cuda}" --budget "${SUITE_BUDGET:-120}" --start-up "${SUITE_START_UP:-120}" \
  --deadline "$(( ${SUITE_DEADLINE:-360} - SECONDS > 30 ? ${SUITE_DEADLINE:-360} - SECONDS : 30 ))" --repeats "${SUITE_REPEATS:-5}" --max-iters "${SUITE_MAX_ITERS:-2000}" \
  --eps "${SUITE_EPS:-0.1}" ${SUITE_SKIP_DONE:+--skip-done "$SUITE_SKIP_DONE"} $([[ "${SUITE_REACH:-0}" != 0 ]] && echo --reach) --out "$out/suite_${tag}.jsonl" 2>> "$log"
status=$?
tail -n 60 "$log"
exit $status
