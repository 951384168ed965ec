#!/usr/bin/env bash
# Kernel lab: builds the GPU forward benchmark once per tile variant (FLASHSINKHORN_TUNE_* macros of
# src/cuda/tile_config.hpp) and runs each on a few sizes, so that one device call compares them.
#   OUT=out tools/tune_variants.sh "default:" "unroll1:-DFLASHSINKHORN_TUNE_K_UNROLL=1" ...
# Writes $OUT/variants.log (one JSON line per variant × case, with "variant" added).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/out}"
arch="${CUDA_ARCH:-sm_90a}"
sizes="${TUNE_SIZES:-10000x64,50000x8,50000x64}"
precisions="${TUNE_PRECISIONS:-tf32,bf16}"
mkdir -p "$out" /tmp/variants
sources="bench/gpu_forward_bench.cu src/cuda/cuda_backend.cu src/cuda/softmin_launch.cu src/cuda/plan_rows_kernel.cu"
for spec in "$@"; do
  name="${spec%%:*}"
  flags="${spec#*:}"
  # shellcheck disable=SC2086
  nvcc -O3 -std=c++17 -arch="$arch" --expt-relaxed-constexpr -Iinclude -Isrc $flags $sources \
    -o "/tmp/variants/$name" > "/tmp/variants/$name.build.log" 2>&1 &
done
wait
for spec in "$@"; do
  name="${spec%%:*}"
  if [[ ! -x "/tmp/variants/$name" ]]; then
    echo "{\"variant\":\"$name\",\"error\":\"build failed\"}" >> "$out/variants.log"
    tail -5 "/tmp/variants/$name.build.log" >> "$out/variants.log"
    continue
  fi
  timeout 120 "/tmp/variants/$name" --sizes "$sizes" --precisions "$precisions" --repeats 5 2>/dev/null \
    | sed "s/^{/{\"variant\":\"$name\",/" >> "$out/variants.log"
done
python3 - "$out/variants.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and "ms_per_iteration" in l]
for r in rows:
    print(f"{r['variant']:>12} n={r['n']:>6} d={r['d']:>4} {r['precision']}: {r['ms_per_iteration']:.4f} ms/iter "
          f"({r['roofline_fraction']:.0%} of floor)")
PY
