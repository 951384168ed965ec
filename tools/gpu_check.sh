#!/usr/bin/env bash
# One command on the GPU machine: configure + build (sm_90a), CPU and GPU tests, compute-sanitizer
# memcheck and racecheck on the small GPU cases, then the GPU forward benchmark with the
# flash-sinkhorn peer, the Python wheel and its tests. Logs and the merged benchmark JSON go to $OUT
# (default ./out).
#   FS_COMMIT=<hash> tools/gpu_check.sh
# FS_COMMIT names the commit in every result file: write the development machine's hash into the
# command literally (the device's copy of .git can be older than the tree it runs: in session 34
# `$(git rev-parse --short HEAD)` evaluated there gave the session's first commit).
# Needs: .deps/googletest (cp -r /usr/src/googletest .deps/), .deps/eigen3 (cp -r /usr/include/eigen3
# .deps/) and, for the peer, .whl/ with the
# flash-sinkhorn wheel (and the nanobind wheel the Python stage builds with). STAGES="build gpu bench sanitize python" selects stages; they run in the order
# of the default list, the results that matter most first when the device time is short.
# Stage `suite` (not in the default list) runs the issue-7 benchmark suite, bench/suite/run_device.sh,
# with the peers staged by tools/stage_peer_wheels.sh; e.g.
#   FS_COMMIT=... STAGES="build suite" SUITE_NS=10000,50000 SUITE_DS=64 tools/gpu_check.sh
# (its SUITE_* variables: bench/suite/run_device.sh; it stops starting cases at DEADLINE); with
# SUITE_LANES, one lane per GPU (bench/suite/run_lanes.sh, e.g. on nvidia-h200-x2). Stage `ab` (not in
# the default list) runs an A/B of one FLASHSINKHORN_* setting on the suite's rows (bench/suite/run_ab.sh), e.g.
#   FS_COMMIT=... STAGES="build gpu ab" AB_SETTING=FLASHSINKHORN_FP32_PASS_EXP AB_VALUES="float64 ex2" \
#     SUITE_OPS=hvp SUITE_NS=10000,50000 SUITE_DS=3,8 SUITE_PRECISIONS=fp32 tools/gpu_check.sh
# GPU_TEST_FILTER narrows the `gpu` stage to some gtest cases (e.g. "*quadratic*:*Hvp*") and leaves its
# variant passes out unless their own variables ask for them.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/out}"
# At most 8 files come back from the device: results (JSON) stay in $out (bundled on exit, below,
# where there are more); logs are written outside it
# and packed into $out/logs.tgz after every stage, so a run cut short by the device's time limit
# still returns the logs of the stages it finished.
logs="${LOG_DIR:-/tmp/flashsinkhorn_gpu_logs}/logs"
rm -rf "$logs"
mkdir -p "$out" "$logs"
build="${BUILD_DIR:-build-gpu}"
stages="${STAGES-build gpu demo study bench plan reference hvp profile sanitize python cpu}"  # STAGES="" runs none; +suite, +ab, +overhead, +examples, +l2, +baseline
arch="${CUDA_ARCH:-90a}"
jobs="$(nproc)"
status=0
# A stage runs when listed and when the run is still inside its time budget (DEADLINE seconds, 540
# by default: the device stops a command at 600 s).
deadline="${DEADLINE:-540}"
pack() { tar czf "$out/logs.tgz" -C "$(dirname "$logs")" logs 2> /dev/null; }
# On the way out, results beyond what comes back (8 files with logs.tgz) go into $out/results.tgz
# whole (session 56 lost a call's suite files, the 9th to 20th, to that limit).
bundle() {
  local files
  files="$(find "$out" -type f ! -name logs.tgz ! -name results.tgz | wc -l)"
  (( files > 7 )) || return 0
  local bundled="$logs/../results.tgz"
  tar czf "$bundled" -C "$out" --exclude=./logs.tgz --exclude=./results.tgz . &&
    find "$out" -mindepth 1 ! -name logs.tgz -delete && mv "$bundled" "$out/results.tgz"
}
# A `timeout` around this script stops it mid-stage (bash takes the signal once the running command
# returns; commands under their own `timeout` are in another process group and finish first): the
# logs written so far are packed on the way out (session 51 lost a cut gpu stage's).
trap 'pack; bundle' EXIT
trap 'echo "== stopped by a signal at ${SECONDS}s" >> "$logs/stages.log"; exit 143' TERM INT
listed() { [[ " $stages " == *" $1 "* ]]; }
# The card's name for result file names and labels (h100, h200): the device lends either.
card="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 | grep -oE 'H[0-9]+' | tr 'H' 'h')"
card="${card:-gpu}"
# The machine named in merged result files (merge_gpu_results.py; the host name here is only "vm").
export FS_MACHINE="${FS_MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)}"
has() {  # starts stage $1 (logged) when it is listed and there is time left
  pack
  listed "$1" || return 1
  if (( SECONDS > deadline )); then
    echo "== stage $1 skipped: ${SECONDS}s used of the ${deadline}s budget" | tee -a "$logs/stages.log" >&2
    return 1
  fi
  echo "== stage $1 at ${SECONDS}s ($(date -u +%T))" | tee -a "$logs/stages.log" >&2
}

{
  echo "== $(date -u +%FT%TZ) commit=${FS_COMMIT:-unknown}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
  nvcc --version | tail -1
} > "$logs/build.log" 2>&1

if has build; then
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLASHSINKHORN_CUDA=ON \
    -DFLASHSINKHORN_CUDA_ARCHITECTURES="$arch" -DFLASHSINKHORN_GTEST_SOURCE="$PWD/.deps/googletest" \
    >> "$logs/build.log" 2>&1 || { echo "configure failed" | tee -a "$logs/build.log"; exit 1; }
  # Our targets first, so that a broken unrelated target cannot hide the GPU results (BUILD_TARGETS:
  # fewer, for a short call that runs only the benchmarks, e.g. "flashsinkhorn_gpu_bench").
  # shellcheck disable=SC2086
  cmake --build "$build" -j "$jobs" --target ${BUILD_TARGETS:-flashsinkhorn_gpu_tests flashsinkhorn_gpu_bench \
    flashsinkhorn_cli flashsinkhorn_precision_study flashsinkhorn_block_bench flashsinkhorn_call_overhead \
    flashsinkhorn_plan_bench flashsinkhorn_sparse_schur_bench} >> "$logs/build.log" 2>&1 || { echo "GPU targets failed to build" | tee -a "$logs/build.log"; status=1; }
  if listed cpu; then
    cmake --build "$build" -j "$jobs" >> "$logs/build.log" 2>&1 || { echo "full build failed" | tee -a "$logs/build.log"; status=1; }
  fi
  tail -5 "$logs/build.log"
fi
# Stage `baseline`'s tree (BASELINE_TREE, staged by tools/stage_baseline_tree.sh) builds in the
# background from here, while the GPU tests run.
baseline_build=""
if [[ -n "${BASELINE_TREE:-}" ]] && listed baseline; then
  (cmake -G Ninja -S "$BASELINE_TREE" -B "$BASELINE_TREE/build-gpu" -DCMAKE_BUILD_TYPE=Release -DFLASHSINKHORN_CUDA=ON \
    -DFLASHSINKHORN_CUDA_ARCHITECTURES="$arch" -DFLASHSINKHORN_TESTS=OFF &&
    cmake --build "$BASELINE_TREE/build-gpu" -j "$jobs" --target flashsinkhorn_gpu_bench) > "$logs/baseline_build.log" 2>&1 &
  baseline_build=$!
fi

gpu_tests="$build/tests/gpu/flashsinkhorn_gpu_tests"
# One pass of the GPU tests under a kernel choice: test_pass FILTER LIMIT VAR=value ...; the pass's
# brief result is logged and shown, a failure marks the run failed.
test_pass() {
  local filter="$1" limit="$2"
  shift 2
  local label="$*"
  echo "== GPU tests, $label" >> "$logs/tests.log"
  env "$@" timeout "$limit" "$gpu_tests" --gtest_filter="$filter" --gtest_brief=1 >> "$logs/tests.log" 2>&1 ||
    { echo "GPU tests ($label) failed"; status=1; }
  tail -3 "$logs/tests.log"
}
if has gpu; then
  echo "== GPU tests" >> "$logs/tests.log"
  timeout "${GPU_TEST_TIMEOUT:-240}" "$gpu_tests" --gtest_brief=0 --gtest_filter="${GPU_TEST_FILTER:-*}" >> "$logs/tests.log" 2>&1 || { echo "GPU tests failed"; status=1; }
  grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  \]" "$logs/tests.log" | tail -15
  # The kernel-variant runs below cost ~220 s; a call that also runs the suite leaves them out
  # unless asked for (GPU_TEST_MMA=1, GPU_TEST_VARIANTS="cpasync tma").
  default_mma=1 default_variants="cpasync tma"
  if listed suite; then default_mma=0 default_variants=""; fi
  # A call with GPU_TEST_FILTER checks some cases: every pass below (each reruns whole families under
  # one variant, ~5 minutes together) is then left out unless its own variable asks for it (session
  # 51 lost a device call's suite to them).
  passes=1 default_pairings="split multicast"
  if [[ -n "${GPU_TEST_FILTER:-}" ]]; then passes=0 default_mma=0 default_variants="" default_pairings=""; fi
  # The HVP's sparse_plan preconditioner by the inner CG on S_k at every size (small problems
  # otherwise factor the dense S: FLASHSINKHORN_SCHUR_SOLVE, kernel_variant.hpp).
  if [[ "${GPU_TEST_SPARSE_SCHUR:-$passes}" != 0 ]]; then
    test_pass '*Sparse*:*sparse*:*schur*:*Schur*:*Hvp*' "${GPU_VARIANT_TEST_TIMEOUT:-100}" FLASHSINKHORN_SCHUR_SOLVE=sparse
  fi
  # The fp64 mode's plan passes by DGEMMs at every width (FLASHSINKHORN_FLOAT64_PASS=gemm,
  # plan_gemm_pass.hpp; by default only from 512 coordinates): the plan, Schur, HVP and fp64 families
  # again (GPU_TEST_FLOAT64_GEMM=0 leaves the pass out).
  if [[ "${GPU_TEST_FLOAT64_GEMM:-$passes}" != 0 ]]; then
    test_pass '*plan_pass*:*Sparse*:*sparse*:*schur*:*Schur*:*Hvp*:*hvp*:*dense*:*gemm*:*fp64*:*Fp64*:*Float64*' \
      "${GPU_VARIANT_TEST_TIMEOUT:-100}" FLASHSINKHORN_FLOAT64_PASS=gemm
  fi
  # The fp32 mode's float64 passes on narrow rows with their weights' e^x by math::exp_by_exp2
  # (FLASHSINKHORN_FP32_PASS_EXP=ex2, kernel_variant.hpp; libdevice's exp by default): the pass, plan,
  # Schur, HVP and fp32 families again (GPU_TEST_FP32_PASS_EXP=0 leaves the pass out).
  if [[ "${GPU_TEST_FP32_PASS_EXP:-$passes}" != 0 ]]; then
    test_pass '*vector_pass*:*plan_pass*:*quadratic*:*Sparse*:*sparse*:*schur*:*Schur*:*Hvp*:*hvp*:*fp32*:*Fp32*:*exp_by_exp2*' \
      "${GPU_VARIANT_TEST_TIMEOUT:-100}" FLASHSINKHORN_FP32_PASS_EXP=ex2
  fi
  # The same backend cases on the mma.sync kernel family (sm_90a builds pick wgmma for tf32/bf16).
  if [[ "${GPU_TEST_MMA:-$default_mma}" != 0 ]]; then
    test_pass 'sizes/*' "${GPU_TEST_TIMEOUT:-240}" FLASHSINKHORN_KERNEL=mma
  fi
  # The fp32 mode's 3×TF32 dots on narrow rows too (FLASHSINKHORN_FP32_DOTS=3xtf32, kernel_variant.hpp;
  # FMA dots are the default there): the same backend cases, held against the CPU with the 3×TF32
  # allowance (GPU_TEST_FP32_DOTS=0 leaves the pass out).
  if [[ "${GPU_TEST_FP32_DOTS:-$passes}" != 0 ]]; then
    test_pass 'sizes/*:*fp32*:*Fp32*' "${GPU_TEST_TIMEOUT:-240}" \
      FLASHSINKHORN_FP32_DOTS=3xtf32
  fi
  # The fp32 point gradients on narrow rows by the tensor-core pass (FLASHSINKHORN_POINT_GRADIENT=tensor,
  # plan_points_narrow_launch.hpp; the fp32 narrow pass is the default): the gradient cases again
  # (GPU_TEST_TENSOR_GRADIENT=0 leaves the pass out).
  if [[ "${GPU_TEST_TENSOR_GRADIENT:-$passes}" != 0 ]]; then
    echo "== GPU tests, FLASHSINKHORN_POINT_GRADIENT=tensor" >> "$logs/tests.log"
    FLASHSINKHORN_POINT_GRADIENT=tensor timeout "${GPU_TEST_TIMEOUT:-240}" "$gpu_tests" \
      --gtest_filter='*radient*:*PotentialVjp*:*potential_vjp*:kernel_variant*' --gtest_brief=0 >> "$logs/tests.log" 2>&1 ||
      { echo "GPU tests (tensor-core point gradient) failed"; status=1; }
    grep -E "narrow gradient|^\[  (PASSED|FAILED) " "$logs/tests.log" | tail -14
  fi
  # The softmin kernels that can predict their row references (the fp32 narrow one, the tf32/bf16
  # warp-specialised wgmma one) with each reference forced (FLASHSINKHORN_NARROW_REFERENCE=online and
  # =predicted, kernel_variant.hpp; the default, auto, takes predicted where it pays, and tf32 on rows
  # of ≤ 2 coordinates runs the narrow kernel where it predicts): the backend (sizes/*: with
  # predicted_reference_gpu_test's forced fallbacks), fp32 and launch-plan cases again
  # (GPU_TEST_NARROW_REFERENCE=0 leaves the passes out; GPU_TEST_NARROW_REFERENCES picks them).
  if [[ "${GPU_TEST_NARROW_REFERENCE:-$passes}" != 0 ]]; then
    for reference in ${GPU_TEST_NARROW_REFERENCES:-online predicted}; do
      test_pass 'sizes/*:*fp32*:*Fp32*:*Narrow*:*narrow*:launch_plan*' \
        "${GPU_TEST_TIMEOUT:-240}" FLASHSINKHORN_NARROW_REFERENCE="$reference"
    done
  fi
  # The streamed kernels' L2 rule at a 1-MiB budget (FLASHSINKHORN_STREAMED_L2_MIB=1, kernel_variant.hpp):
  # the wide-row backend cases then run with their keys split wherever the split length allows, and
  # the plan passes as always (GPU_TEST_STREAMED_L2=0 leaves the pass out).
  if [[ "${GPU_TEST_STREAMED_L2:-$passes}" != 0 ]]; then
    test_pass 'sizes/*:*Solver*:*plan_pass_test*:launch_plan*' "${GPU_TEST_TIMEOUT:-240}" \
      FLASHSINKHORN_STREAMED_L2_MIB=1
  fi
  # The cluster pairs forced on (kernel_variant.hpp; clusters of two CTAs sharing panels by
  # multicast): the streamed softmin's key pairs (FLASHSINKHORN_STREAMED_KEY_PAIRS=on; by default only
  # from half a wave of row blocks, so never at the tests' sizes) with the last row block of an odd
  # count in query pairs (the default) and the streamed plan pass's value-tile pairs (on by default):
  # the wide-row backend cases, the solvers, the CUDA-input cases, the plan passes and the gradients,
  # with the variants' shorter limit (a pipeline bug there traps in the producer after ~10 s). Then
  # the backend cases again with session 41's ghost layout instead of the query pairs
  # (FLASHSINKHORN_STREAMED_QUERY_PAIRS=off) and the plan pass without its pairs
  # (FLASHSINKHORN_PLAN_CLUSTER_PAIRS=off) (GPU_TEST_KEY_PAIRS=0 leaves the passes out).
  if [[ "${GPU_TEST_KEY_PAIRS:-$passes}" != 0 ]]; then
    test_pass 'sizes/*:*Solver*:*DeviceInput*:*plan_pass_test*:*Gradient*' "${GPU_VARIANT_TEST_TIMEOUT:-100}" \
      FLASHSINKHORN_STREAMED_KEY_PAIRS=on
    test_pass 'sizes/cuda_backend_test*:*plan_pass_test*' "${GPU_VARIANT_TEST_TIMEOUT:-100}" \
      FLASHSINKHORN_STREAMED_KEY_PAIRS=on FLASHSINKHORN_STREAMED_QUERY_PAIRS=off FLASHSINKHORN_PLAN_CLUSTER_PAIRS=off
  fi
  # The plan pass's pairings forced (FLASHSINKHORN_PLAN_CLUSTER_PAIRS; by default split in tf32 —
  # each CTA multiplies half of the panels and the two add their partial scores, score_exchange.cuh —
  # and multicast in bf16): the plan, gradient and solver cases with each pairing in both modes
  # (GPU_TEST_PLAN_PAIRINGS="" leaves the passes out).
  for pairing in ${GPU_TEST_PLAN_PAIRINGS-$default_pairings}; do
    test_pass '*plan_pass_test*:*Gradient*:*Solver*' "${GPU_VARIANT_TEST_TIMEOUT:-100}" \
      FLASHSINKHORN_PLAN_CLUSTER_PAIRS="$pairing"
  done
  # A quarter of the predicted wgmma tiles' exponentials by a cubic on the FMA pipe (FLASHSINKHORN_EXP2=split,
  # kernel_variant.hpp; the MUFU takes them all by default): the backend cases and the forced
  # fallbacks of predicted_reference_gpu_test with predicted references forced, on the
  # warp-specialised kernel for bf16 too, and the solver's GPU-vs-CPU cases (their 1e-5 cost tolerance
  # and equal iteration counts are what making it a default would meet) (GPU_TEST_EXP2_SPLIT=0 leaves
  # the pass out).
  if [[ "${GPU_TEST_EXP2_SPLIT:-$passes}" != 0 ]]; then
    test_pass 'sizes/*:Options/SolverOnGpu.*' "${GPU_TEST_TIMEOUT:-240}" \
      FLASHSINKHORN_EXP2=split FLASHSINKHORN_NARROW_REFERENCE=predicted FLASHSINKHORN_KERNEL=ws
  fi
  # And on the other variants of the resident wgmma kernel (the copy-engine one is the default).
  for variant in ${GPU_TEST_VARIANTS-$default_variants}; do
    # (a shorter limit: a variant under test may deadlock; its producer traps after ~10 s, the
    # consumers of a variant without one would hang)
    test_pass 'sizes/*' "${GPU_VARIANT_TEST_TIMEOUT:-100}" FLASHSINKHORN_KERNEL="$variant"
  done
fi
if has demo; then
  # The README's first command on a GPU machine: the demo picks the GPU by itself.
  "$build/apps/cli/flashsinkhorn" demo > "$out/demo.json" 2> "$logs/demo.log" || { echo "demo failed"; status=1; }
  cat "$out/demo.json"; echo
fi
if has study; then
  # STUDY_KERNEL (a FLASHSINKHORN_KERNEL value) measures a kernel variant instead of the default.
  FLASHSINKHORN_KERNEL="${STUDY_KERNEL-}" timeout "${STUDY_TIMEOUT:-240}" "$build/bench/flashsinkhorn_precision_study" --n "${STUDY_N:-20000}" \
    > "$logs/precision_study.txt" 2> "$logs/precision_study.jsonl" || { echo "precision study failed"; status=1; }
  cat "$logs/precision_study.txt"
fi
# The carried peer wheels (flash-sinkhorn), installed once for the stages that run the peer.
peer_site() {
  [[ -d /tmp/site ]] && { export PYTHONPATH=/tmp/site; return; }
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site
  fi
}
if has bench; then
  peer_site
  # The raw JSON lines land in $logs as they are written, so a stage cut short keeps what it measured.
  # The peer in tf32 only (the issue's protocol; its fp32 runs take minutes), no mma.sync A/B rows
  # unless asked for (MMA_SYNC_PRECISIONS); each precision's other copy-engine kernel (VARIANTS).
  PEER_PRECISIONS="${PEER_PRECISIONS:-tf32}" MMA_SYNC_PRECISIONS="${MMA_SYNC_PRECISIONS-}" VARIANTS="${VARIANTS-tma:tf32 tma:bf16}" \
  BENCH="$build/bench/flashsinkhorn_gpu_bench" OUT_DIR="$logs" timeout "${BENCH_TIMEOUT:-300}" bench/run_gpu_bench.sh > "$logs/bench.log" 2>&1 \
    || { echo "bench failed"; status=1; }
  # Cut short by BENCH_TIMEOUT, it has not merged: the rows it wrote are merged here.
  compgen -G "$logs/gpu_forward_*.json" > /dev/null || [[ ! -s "$logs/ours.jsonl" ]] ||
    python3 bench/merge_gpu_results.py "$logs/gpu_forward_$(date -u +%F).json" "$logs/ours.jsonl" \
      $([[ -s "$logs/peers.jsonl" ]] && echo "$logs/peers.jsonl") >> "$logs/bench.log" 2>&1
  mv "$logs"/gpu_forward_*.json "$out/" 2>/dev/null
  cat "$logs/bench.log" | tail -40
  # Launch overhead of the solver's iteration blocks: half-steps vs plain blocks vs CUDA graphs.
  timeout 120 "$build/bench/flashsinkhorn_block_bench" > "$logs/block_bench.jsonl" 2>> "$logs/bench.log" \
    || echo "block bench failed"
  cat "$logs/block_bench.jsonl"
fi
if has plan; then
  # The plan pass and the gradient (issue 4) against one forward half-step, and forward + gradient
  # against the flash-sinkhorn peer in the same run, merged into $out/plan_pass_<date>.json.
  timeout "${PLAN_TIMEOUT:-150}" "$build/bench/flashsinkhorn_plan_bench" ${PLAN_SIZES:+--sizes "$PLAN_SIZES"} \
    > "$logs/plan_ours.jsonl" 2>> "$logs/plan.log" || { echo "plan bench failed"; status=1; }
  if [[ "${PEER:-1}" != 0 ]]; then
    peer_site
    PYTHONUNBUFFERED=1 timeout "${PLAN_PEER_TIMEOUT:-200}" python3 bench/peers/flash_sinkhorn_forward.py --grad \
      --sizes "${PLAN_PEER_SIZES:-10000x64,50000x64}" --precisions tf32 > "$logs/plan_peer.jsonl" 2>> "$logs/plan.log" \
      || echo "flash-sinkhorn gradient peer failed" >> "$logs/plan.log"
  fi
  FS_COMMIT="${FS_COMMIT:-unknown}" python3 bench/merge_gradient_results.py "$out/plan_pass_$(date -u +%F).json" \
    "$logs/plan_ours.jsonl" "$logs/plan_peer.jsonl" >> "$logs/plan.log" 2>&1 || { echo "plan merge failed"; status=1; }
  cat "$logs/plan.log"
fi
if has reference; then
  # The fp32 narrow softmin's row references side by side (online, auto, predicted: the figures behind
  # softmin_launch.cu's predicted_reference_pays; REFERENCE_PRECISIONS=fp32,tf32 adds tf32's narrow
  # rows against its wgmma kernel; EXP2S="mufu split" each choice again with a quarter of the predicted
  # wgmma tiles' exponentials on the FMA pipe; KERNELS="- ws" each again on the warp-specialised kernel,
  # bf16's included), into $out/narrow_reference_ab_<date>.json.
  # REFERENCE_SIZES (else SIZES) picks its sizes, so one call can run the bench stage on its own sizes.
  BENCH="$build/bench/flashsinkhorn_gpu_bench" PRECISIONS="${REFERENCE_PRECISIONS:-fp32}" \
    SIZES="${REFERENCE_SIZES:-${SIZES:-}}" timeout "${REFERENCE_TIMEOUT:-150}" \
    bench/narrow_reference_ab.sh "$out/narrow_reference_ab_$(date -u +%F).json" > "$logs/reference.log" 2>&1 \
    || { echo "reference A/B failed"; status=1; }
  cat "$logs/reference.log"
fi
if has l2; then
  # The streamed softmin kernels' L2 rule (key_splits.hpp, streamed_query_splits) under several
  # budgets, FLASHSINKHORN_STREAMED_L2_MIB (L2_BUDGETS, L2_SIZES, L2_PRECISIONS; not in the default
  # list), with and without the key pairs when L2_PAIRS="off on" (FLASHSINKHORN_STREAMED_KEY_PAIRS;
  # "on+query" adds the last row block's query pairs, FLASHSINKHORN_STREAMED_QUERY_PAIRS),
  # into $out/streamed_l2_ab_<date>.json; then the plan bench on L2_PLAN_SIZES (the plan passes'
  # CTAs of one row block side by side, plan_cta_work_of), once per L2_PLAN_PAIRS value.
  BENCH="$build/bench/flashsinkhorn_gpu_bench" BUDGETS="${L2_BUDGETS:-0 12 24 40}" SIZES="${L2_SIZES:-50000x512,50000x1024,10000x1024}" \
    PAIRS="${L2_PAIRS:-auto}" \
    PRECISIONS="${L2_PRECISIONS:-tf32,bf16}" timeout "${L2_TIMEOUT:-200}" \
    bench/streamed_l2_ab.sh "$out/streamed_l2_ab_$(date -u +%F).json" > "$logs/l2.log" 2>&1 || { echo "L2 A/B failed"; status=1; }
  if [[ -n "${L2_PLAN_SIZES:-}" ]]; then  # merged as the plan stage's files are (no peer rows)
    # L2_PLAN_PAIRS="off multicast split": the plan pass's cluster pairs (FLASHSINKHORN_PLAN_CLUSTER_PAIRS,
    # auto by default: split in tf32, multicast in bf16) off, sharing panels, splitting the scores.
    for plan_pairs in ${L2_PLAN_PAIRS:-on}; do
      FLASHSINKHORN_PLAN_CLUSTER_PAIRS="$plan_pairs" timeout 150 "$build/bench/flashsinkhorn_plan_bench" \
        --sizes "$L2_PLAN_SIZES" --precisions "${L2_PRECISIONS:-tf32,bf16}" \
        >> "$logs/plan_l2.jsonl" 2>> "$logs/l2.log" || { echo "plan bench failed"; status=1; }
    done
    FS_COMMIT="${FS_COMMIT:-unknown}" python3 bench/merge_gradient_results.py "$out/plan_pass_l2_$(date -u +%F).json" \
      "$logs/plan_l2.jsonl" >> "$logs/l2.log" 2>&1 || { echo "plan merge failed"; status=1; }
  fi
  cat "$logs/l2.log"
fi
if has baseline; then
  # This tree's forward benchmark beside BASELINE_TREE's (an earlier commit, tools/stage_baseline_tree.sh),
  # interleaved on this machine (bench/baseline_ab.sh: BASELINE_SIZES, BASELINE_PRECISIONS, BASELINE_ROUNDS,
  # BASELINE_ENV / CURRENT_ENV / BOTH_ENV), into $out/baseline_ab_<date>.json. Not in the default list.
  if [[ -z "${BASELINE_TREE:-}" ]]; then
    echo "stage baseline: set BASELINE_TREE (tools/stage_baseline_tree.sh COMMIT)"; status=1
  elif [[ -n "$baseline_build" ]] && ! wait "$baseline_build"; then
    echo "the baseline tree failed to build"; tail -5 "$logs/baseline_build.log"; status=1
  else
    BASELINE_BENCH="$BASELINE_TREE/build-gpu/bench/flashsinkhorn_gpu_bench" BENCH="$build/bench/flashsinkhorn_gpu_bench" \
      BASELINE_COMMIT="$(cat "$BASELINE_TREE/BASELINE_COMMIT")" SIZES="${BASELINE_SIZES:-50000x1024,10000x512}" \
      PRECISIONS="${BASELINE_PRECISIONS:-tf32,bf16}" ROUNDS="${BASELINE_ROUNDS:-2}" timeout "${BASELINE_TIMEOUT:-200}" \
      bench/baseline_ab.sh "$out/baseline_ab_$(date -u +%F).json" > "$logs/baseline.log" 2>&1 \
      || { echo "baseline A/B failed"; status=1; }
    cat "$logs/baseline.log"
  fi
fi
if has hvp; then
  # The streaming HVP against flash-sinkhorn's (issue 5): CG iterations and time against n, the
  # peer's reached CG residual as our tolerance (bench/hvp_bench.sh), lines into $out/hvp.jsonl.
  peer_site
  timeout "${HVP_TIMEOUT:-400}" bench/hvp_bench.sh "$out/hvp.jsonl" "$build/apps/cli/flashsinkhorn" \
    "${HVP_SIZES:-10000x64,50000x64,200000x64}" "${HVP_PRECISIONS:-tf32 fp32}" "${HVP_PEER_SIZES:-10000x64}" \
    > "$logs/hvp.log" 2>&1 || { echo "hvp bench failed"; status=1; }
  cat "$out/hvp.jsonl" "$logs/hvp.log" 2>/dev/null | cut -c1-600
fi
if has suite; then
  # The whole remaining budget goes to the suite: run.py starts no case after SUITE_DEADLINE, and the
  # rows already written stay if the stage is stopped.
  left=$(( deadline - SECONDS ))
  (( left > 60 )) || left=60
  # SUITE_LANES (bench/suite/run_lanes.sh) splits the grid over the machine's GPUs, one lane each.
  runner=bench/suite/run_device.sh
  [[ -n "${SUITE_LANES:-}" ]] && runner=bench/suite/run_lanes.sh
  SUITE_DEADLINE="${SUITE_DEADLINE:-$(( left - 60 > 30 ? left - 60 : 30 ))}" OUT="$out" BUILD_DIR="$build" \
    SUITE_LOG_DIR="$logs/suite" timeout "$(( left + 30 ))" "$runner" > "$logs/suite.log" 2>&1 ||
    { echo "suite failed or cut short"; status=1; }
  tail -60 "$logs/suite.log"
fi
if has ab; then
  # An A/B of one FLASHSINKHORN_* setting on the suite's rows (bench/suite/run_ab.sh: AB_SETTING,
  # AB_VALUES, AB_ROUNDS, AB_TRACE and the SUITE_* grid; not in the default list), within the budget left.
  left=$(( deadline - SECONDS ))
  (( left > 60 )) || left=60
  OUT="$out" BUILD_DIR="$build" timeout "$(( left + 30 ))" bench/suite/run_ab.sh > "$logs/ab.log" 2>&1 ||
    { echo "A/B failed or cut short"; status=1; }
  tail -20 "$logs/ab.log"
fi
if has overhead; then
  # Where a Python call's host time goes on CUDA tensors (issue 6; not in the default list): the
  # extension built in $build, bench/studies/solve_path_profile.py (CUDA events, the kernels and the
  # CUDA API calls' host time under torch.profiler), bench/studies/cuda_call_breakdown.py (each
  # step of the call's path, medians of many warm calls), bench/studies/samplesloss_call_breakdown.py
  # (SamplesLoss forward and backward apart, and their torch operators) and the CUDA rows of
  # bench/python_call_overhead.py against the C++ program of the same tree. Knobs: OVERHEAD_PROFILE_NS / _D /
  # _PRECISION (the profile), OVERHEAD_BREAKDOWN_NS / _D / _PRECISION (SamplesLoss), OVERHEAD_BENCH=0,
  # OVERHEAD_STUDIES=0 (those three studies left out), OVERHEAD_GRADIENT="10000x8,10000x3" (first,
  # bench/studies/gradient_call_breakdown.py: what the gradient adds to a call; OVERHEAD_GRADIENT_PRECISIONS),
  # OVERHEAD_TIMELINE="10000x8 tf32" (bench/studies/call_timeline.py first; its traces and summary are
  # packed into $out/timeline.tgz).
  {
    cmake -S . -B "$build" -DFLASHSINKHORN_PYTHON=ON &&
      cmake --build "$build" -j "$jobs" --target flashsinkhorn_python_modules &&
      if [[ -n "${OVERHEAD_TIMELINE:-}" ]]; then  # e.g. "10000x8 tf32": bench/studies/call_timeline.py, packed
        IFS=x read -r tl_n tl_d <<< "${OVERHEAD_TIMELINE% *}"
        timeline="$(dirname "$logs")/timeline"
        rm -rf "$timeline" && mkdir -p "$timeline" &&
          PYTHONPATH="$PWD/$build/python" timeout 120 python3 bench/studies/call_timeline.py --n "$tl_n" --d "$tl_d" \
            --precision "${OVERHEAD_TIMELINE#* }" --out-dir "$timeline" &&
          tar czf "$out/timeline.tgz" -C "$(dirname "$timeline")" timeline
      fi &&
      if [[ -n "${OVERHEAD_GRADIENT:-}" ]]; then  # e.g. "10000x8,10000x3": bench/studies/gradient_call_breakdown.py
        PYTHONPATH="$PWD/$build/python" timeout 150 python3 bench/studies/gradient_call_breakdown.py \
          --sizes "$OVERHEAD_GRADIENT" --precisions "${OVERHEAD_GRADIENT_PRECISIONS:-tf32,fp32}" \
          --out "$out/gradient_call_breakdown.jsonl"
      fi &&
      if [[ "${OVERHEAD_STUDIES:-1}" != 0 ]]; then  # OVERHEAD_STUDIES=0: the three studies below left out
        PYTHONPATH="$PWD/$build/python" timeout 120 python3 bench/studies/solve_path_profile.py \
          --ns "${OVERHEAD_PROFILE_NS:-1000,10000}" --d "${OVERHEAD_PROFILE_D:-64}" \
          --precision "${OVERHEAD_PROFILE_PRECISION:-tf32}" --out "$out/solve_path_profile.jsonl" &&
        PYTHONPATH="$PWD/$build/python" timeout 120 python3 bench/studies/cuda_call_breakdown.py \
          --ns 1,1000 --out "$out/cuda_call_breakdown.jsonl" &&
        PYTHONPATH="$PWD/$build/python" timeout 120 python3 bench/studies/samplesloss_call_breakdown.py \
          --device cuda --ns "${OVERHEAD_BREAKDOWN_NS:-1,1000}" --d "${OVERHEAD_BREAKDOWN_D:-3}" \
          --precision "${OVERHEAD_BREAKDOWN_PRECISION:-fp32}" --out "$out/samplesloss_call_breakdown.jsonl"
      fi &&
      if [[ "${OVERHEAD_BENCH:-1}" != 0 ]]; then  # OVERHEAD_BENCH=0: the studies only
        PYTHONPATH="$PWD/$build/python" timeout 150 python3 bench/python_call_overhead.py \
          --bin "$build/bench/flashsinkhorn_call_overhead" --devices cuda --rounds 3 --budget-s 120 --label "${card}_cuda" \
          --out "$out/python_call_overhead_${card}_cuda.json" \
          --note "extension and C++ program from one build tree ($build), tools/gpu_check.sh stage overhead"
      fi
  } > "$logs/overhead.log" 2>&1 || { echo "overhead studies failed"; status=1; }
  grep -vE "^--|^\[|Warning|_warn_once" "$logs/overhead.log" | tail -60
fi
if has profile; then
  # Nsight Compute on one softmin launch per precision at n = m = 50,000, d = 64 (PROFILE_SIZE; the
  # warm-up call's first half-step unless PROFILE_SKIP, with PROFILE_ITERS iterations in it: by
  # default as few as leave a launch past the skip);
  # PROFILE_KERNEL=ws (any FLASHSINKHORN_KERNEL value) profiles a variant instead of the default;
  # PROFILE_SKIP=k skips the first k softmin launches (from the second half-step on, the wgmma and
  # narrow kernels predict their row references: PROFILE_SKIP=4 profiles such a launch).
  profile_precisions="${PROFILE_PRECISIONS:-tf32 bf16}"
  # An iteration is two softmin launches: enough of them that PROFILE_SKIP leaves one to profile even
  # in a single call (session 41's skip of 4 at 1 iteration profiled nothing).
  profile_iters="${PROFILE_ITERS:-$(( ${PROFILE_SKIP:-0} / 2 + 1 ))}"
  for precision in $profile_precisions; do
    FLASHSINKHORN_KERNEL="${PROFILE_KERNEL-}" timeout 120 ncu --clock-control none -k regex:"softmin_(wgmma|mma|narrow)" -s "${PROFILE_SKIP:-0}" -c 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      "$build/bench/flashsinkhorn_gpu_bench" --sizes "${PROFILE_SIZE:-50000x64}" --precisions "$precision" \
      --iters "$profile_iters" --repeats 1 >> "$logs/profile.log" 2>&1 || echo "ncu $precision failed"
  done
  # Where the warps wait: the stall reasons of the first precision's launch, as raw per-warp cycle counters.
  FLASHSINKHORN_KERNEL="${PROFILE_KERNEL-}" timeout 120 ncu --clock-control none -k regex:"softmin_(wgmma|mma|narrow)" -s "${PROFILE_SKIP:-0}" -c 1 \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio \
    "$build/bench/flashsinkhorn_gpu_bench" --sizes "${PROFILE_SIZE:-50000x64}" --precisions "${profile_precisions%% *}" --iters "$profile_iters" --repeats 1 \
    2>&1 | grep -E "stalled" | sort -k3 -n -r | head -12 | tee -a "$logs/profile.log" || echo "ncu stall metrics failed"
  grep -E "Duration|Throughput|Pipe|Registers|Achieved Occupancy|Theoretical Occupancy|Warp Cycles|Issue|Stall" "$logs/profile.log" | head -60
fi
if has sanitize; then
  # (+ the Hopper one-column / LSE-only pass with and without key splits, and the device matrix store)
  small='*plan_pass_test.*/n7_m97_d3_k1:*plan_pass_test.*/n300_m517_d20_k65:sizes/cuda_backend_test.*/n7_m97_d3_random:sizes/cuda_backend_test.*/n97_m7_d8_uniform:sizes/cuda_backend_test.*/n129_m65_d512_random:cuda_backend_errors.*:*vector_pass_test.*/n7_m97_d3_k1:*vector_pass_test.*/n300_m5000_d20_k1:*matrix_store_gpu_test.*-*out_of_memory*'
  # (the out-of-memory test is left out: its failed cudaMalloc is the point, and memcheck counts it)
  # SANITIZE_KERNEL (a FLASHSINKHORN_KERNEL value) checks a kernel variant instead of the default.
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool" >> "$logs/sanitizer.log"
    FLASHSINKHORN_KERNEL="${SANITIZE_KERNEL-}" timeout "${SANITIZER_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$gpu_tests" --gtest_filter="$small" \
      --gtest_brief=1 >> "$logs/sanitizer.log" 2>&1 || { echo "sanitizer $tool: failures"; status=1; }
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$logs/sanitizer.log" | tail -8
fi
if has python; then
  # The wheel builds here from the repository alone (no network: --no-build-isolation uses the
  # machine's scikit-build-core and nanobind), then the package tests run against it, CUDA included.
  # A nanobind wheel in .whl/ (the version the development machine builds with) takes precedence
  # over the machine's own.
  if ls .whl/nanobind-*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/nbsite .whl/nanobind-*.whl &&
      export PYTHONPATH="/tmp/nbsite${PYTHONPATH:+:$PYTHONPATH}"
  fi
  {
    python3 -c "import nanobind, sys; print('nanobind', nanobind.__version__, 'python', sys.version.split()[0])"
    # The wheel's build tree is kept (/tmp/wheel-build) and configures the benchmarks, so that the C++
    # side of the call-overhead benchmark below is built from the same library objects and flags.
    python3 -m pip wheel . --no-build-isolation --no-deps -w /tmp/wheel -Cbuild-dir=/tmp/wheel-build \
      -Ccmake.define.FLASHSINKHORN_CUDA_ARCHITECTURES="$arch" -Ccmake.define.FLASHSINKHORN_NATIVE=OFF \
      -Ccmake.define.FLASHSINKHORN_BENCH=ON &&
    python3 -m pip install -q --no-deps --no-index --target /tmp/pysite /tmp/wheel/flashsinkhorn-*.whl &&
    # Whether the wheel's optional torch module loads here (flashsinkhorn._torch_calls; None: the
    # package's Python short path serves CUDA calls). Informational: a failure is logged (unbuffered,
    # with the faulthandler's trace) and the tests still run.
    { (cd /tmp && PYTHONPATH=/tmp/pysite python3 -X faulthandler -u -c \
      "from flashsinkhorn import _functional; print('flashsinkhorn._torch_calls:', _functional._TORCH_CALLS)") ||
      echo "flashsinkhorn._torch_calls: the import check failed (exit $?)"; } &&
    if [[ "${PYTHON_TESTS:-1}" != 0 ]]; then  # PYTHON_TESTS=0: the wheel only (for the examples stage)
      (cd /tmp && PYTHONPATH=/tmp/pysite timeout "${PYTHON_TEST_TIMEOUT:-180}" python3 -X faulthandler -m pytest -q \
        -p no:cacheprovider "$OLDPWD/tests/python" -k package)
    fi
  } > "$logs/python.log" 2>&1 || { echo "python stage failed"; status=1; }
  ls /tmp/wheel >> "$logs/python.log" 2>&1
  grep -m1 "flashsinkhorn._torch_calls:" "$logs/python.log"
  tail -4 "$logs/python.log"
  # Issue 6's call overhead on this machine's (unshared) CPU, with the wheel just built. Like for like:
  # the C++ program is built in the wheel's own build tree (same compiler, flags — portable, not
  # -march=native — and library objects), not in $build (native: its core is several times faster,
  # 25 vs 206 ms a call at n = 1,000, which is a different build, not overhead). --budget-s keeps the
  # run inside the timeout; a failure prints its exit status and the log's tail (the traceback).
  # The CUDA rows (torch CUDA tensors, fp32 and tf32, against the C++ program on CUDA views; the wheel's
  # build tree has the CUDA backend, so the program does too) run first (estimated under a minute at
  # 400 calls per round: not yet timed on the GPU machine); the CPU rows
  # share what is left (a case that cannot fit is skipped, named in the report's "skipped").
  # OVERHEAD_DEVICES=cuda runs the CUDA rows only; OVERHEAD_ROUNDS (3) alternations of the C++ and Python
  # sides; OVERHEAD_CPUS (e.g. 2,3) pins both to those CPUs.
  if [[ "${OVERHEAD:-1}" != 0 ]] && ls /tmp/pysite/flashsinkhorn > /dev/null 2>&1; then
    overhead_timeout="${OVERHEAD_TIMEOUT:-180}"
    overhead_bin=/tmp/wheel-build/bench/flashsinkhorn_call_overhead
    cmake --build /tmp/wheel-build --target flashsinkhorn_call_overhead >> "$logs/python.log" 2>&1 &&
    PYTHONPATH=/tmp/pysite timeout "$overhead_timeout" python3 bench/python_call_overhead.py \
      --bin "$overhead_bin" --rounds "${OVERHEAD_ROUNDS:-3}" --label "$card" --budget-s $((overhead_timeout - 30)) \
      --devices "${OVERHEAD_DEVICES:-cuda,cpu}" ${OVERHEAD_CPUS:+--cpus "$OVERHEAD_CPUS"} \
      --out "$out/python_call_overhead_${card}.json" \
      --note "wheel and C++ program built on the GPU machine by tools/gpu_check.sh, one build tree (NATIVE=OFF)" \
      >> "$logs/python.log" 2>&1 ||
      { echo "call-overhead bench failed (exit $?; 124: timeout)"; tail -n 25 "$logs/python.log"; status=1; }
  fi
fi
if has examples; then
  # Issue 8's examples on the GPU with the python stage's wheel (/tmp/pysite; run `python` first) and
  # the carried peers (GeomLoss): the OTDD at EXAMPLES_OTDD_SIZES with the dense float64 check at
  # n = 2,000 and GeomLoss tensorized at every size (where it runs out of memory), the C++ `otdd`
  # command at the largest size, the gradient flow, then the shuffled regression. The data come from
  # EXAMPLES_DATA (default .data: a carried copy of the four MNIST / Fashion-MNIST train files and
  # MD5SUMS, since ../shared does not travel). Everything they write comes back as examples.tgz.
  data="${EXAMPLES_DATA:-.data}"
  examples="$(dirname "$logs")/examples"  # beside the logs, not in logs.tgz
  rm -rf "$examples"
  mkdir -p "$examples"
  # GeomLoss alone (with pykeops beside it, its import compiles KeOps's engine first: 15 s for nothing here)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/geomloss_site .whl/geomloss-*.whl ||
    echo "GeomLoss is not installed: its rows will say so"
  site="/tmp/pysite:/tmp/geomloss_site"
  largest="${EXAMPLES_OTDD_SIZES:-2000,10000,20000,60000}"
  largest="${largest##*,}"
  {
    pack_examples() { tar czf "$out/examples.tgz" -C "$(dirname "$examples")" examples; }  # kept if cut short
    chosen() { [[ " ${EXAMPLES:-otdd cli flow regression} " == *" $1 "* ]]; }  # EXAMPLES picks some
    if chosen otdd; then
      echo "== otdd.py"  # EXAMPLES_OTDD_ARGS: e.g. --geomloss-memory-gb 40 (a smaller GPU's failure point)
      PYTHONPATH="$site" timeout "${EXAMPLES_OTDD_TIMEOUT:-240}" python3 -u examples/otdd/otdd.py --data "$data" \
        --sizes "${EXAMPLES_OTDD_SIZES:-2000,10000,20000,60000}" --device cuda --reference --geomloss \
        ${EXAMPLES_OTDD_ARGS:-} --out "$examples/otdd.json" || echo "otdd.py failed (exit $?)"
      cp "$logs/examples.log" "$examples/" 2> /dev/null; pack_examples
    fi
    if chosen cli; then
      cmake --build /tmp/wheel-build --target flashsinkhorn_cli > /dev/null || echo "the CLI did not build"
      for precision in ${EXAMPLES_CLI_PRECISIONS:-fp32}; do
        echo "== flashsinkhorn otdd --n $largest --precision $precision"
        timeout 120 /tmp/wheel-build/apps/cli/flashsinkhorn otdd --data "$data" --n "$largest" --device cuda \
          --precision "$precision" > "$examples/otdd_cli_$precision.json" || echo "flashsinkhorn otdd failed (exit $?)"
      done
      cp "$logs/examples.log" "$examples/" 2> /dev/null; pack_examples
    fi
    if chosen flow; then
      echo "== flow.py"
      PYTHONPATH="$site" timeout "${EXAMPLES_FLOW_TIMEOUT:-150}" python3 -u examples/otdd/flow.py --data "$data" \
        --n "${EXAMPLES_FLOW_N:-10000}" --steps "${EXAMPLES_FLOW_STEPS:-16}" --device cuda --out-dir "$examples/flow" \
        || echo "flow.py failed (exit $?)"
      cp "$logs/examples.log" "$examples/" 2> /dev/null; pack_examples
    fi
    if chosen hessian; then  # not in the default list: EXAMPLES="hessian ..." (the fp32 HVP's CG at scale)
      # EXAMPLES_HESSIAN_RUNS: the runs' argument lists, separated by ';'
      IFS=';' read -ra hessian_runs <<< "${EXAMPLES_HESSIAN_RUNS:---n 10000 --devices cuda --precisions fp32 --preconditioners sparse diagonal}"
      for hessian_args in "${hessian_runs[@]}"; do
        echo "== shuffled_regression/hessian_check.py $hessian_args"
        PYTHONPATH="$site" timeout "${EXAMPLES_HESSIAN_TIMEOUT:-200}" python3 -u examples/shuffled_regression/hessian_check.py \
          $hessian_args | tee -a "$examples/hessian_check.jsonl" || echo "hessian_check.py failed (exit $?)"
      done
      cp "$logs/examples.log" "$examples/" 2> /dev/null; pack_examples
    fi
    if chosen regression && [[ -f examples/shuffled_regression/run.py ]]; then
      echo "== shuffled_regression/run.py"
      PYTHONPATH="$site" timeout "${EXAMPLES_REGRESSION_TIMEOUT:-200}" python3 -u examples/shuffled_regression/run.py \
        ${EXAMPLES_REGRESSION_ARGS:---device cuda} --out-dir "$examples/shuffled_regression" \
        || echo "shuffled regression failed (exit $?)"
    fi
  } > "$logs/examples.log" 2>&1
  cp "$logs/examples.log" "$examples/"
  tar czf "$out/examples.tgz" -C "$(dirname "$examples")" examples
  grep -E "^==|failed|n=|OTDD|value" "$logs/examples.log" | tail -40
fi
if has cpu; then
  timeout "${CPU_TEST_TIMEOUT:-120}" ctest --test-dir "$build" -LE gpu -j "$jobs" --timeout 200 --output-on-failure > "$logs/cpu_tests.log" 2>&1 \
    || { echo "CPU tests failed"; status=1; }
  tail -3 "$logs/cpu_tests.log"
fi
echo "== done at ${SECONDS}s, status $status" >> "$logs/stages.log"
pack
exit $status
