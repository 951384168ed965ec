#!/usr/bin/env bash
# Kernel lab: builds the GPU forward benchmark once per tile variant (FLASHSINKHORN_TUNE_* macros of
# src/cuda/tile_config.hpp) and runs each on a few sizes, so that one device call compares them.
#   OUT=out tools/tune_variants.sh "default:" "unroll1:-DFLASHSINKHORN_TUNE_K_UNROLL=1" ...
# Writes $OUT/variants.log (one JSON line per variant × case, with "variant" added).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-$PWD/out}"
arch="${CUDA_ARCH:-90a}"
sizes="${TUNE_SIZES:-10000x64,50000x8,50000x64}"
precisions="${TUNE_PRECISIONS:-tf32,bf16}"
mkdir -p "$out" /tmp/variants
# One CMake build of the benchmark per variant (the macros reach the CUDA sources only), in parallel.
jobs=$(( $(nproc) / $# > 1 ? $(nproc) / $# : 1 ))
for spec in "$@"; do
  name="${spec%%:*}"
  flags="${spec#*:}"
  (cmake -G Ninja -S . -B "/tmp/variants/$name.build" -DCMAKE_BUILD_TYPE=Release -DFLASHSINKHORN_CUDA=ON \
      -DFLASHSINKHORN_CUDA_ARCHITECTURES="$arch" -DFLASHSINKHORN_PYTHON=OFF -DFLASHSINKHORN_TESTS=OFF \
      -DCMAKE_CUDA_FLAGS="$flags" &&
    cmake --build "/tmp/variants/$name.build" -j "$jobs" --target flashsinkhorn_gpu_bench &&
    cp "/tmp/variants/$name.build/bench/flashsinkhorn_gpu_bench" "/tmp/variants/$name") \
    > "/tmp/variants/$name.build.log" 2>&1 &
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
  if [[ -n "${TUNE_MMA_SYNC:-}" ]]; then  # the same binary on the mma.sync kernel, for reference
    FLASHSINKHORN_KERNEL=mma timeout 120 "/tmp/variants/$name" --sizes "$sizes" --precisions "$precisions" --repeats 5 \
      2>/dev/null | sed "s/^{/{\"variant\":\"$name-mma\",/" >> "$out/variants.log"
  fi
done
python3 - "$out/variants.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and "ms_per_iteration" in l]
for r in rows:
    print(f"{r['variant']:>12} [{r.get('kernel', '?')}] n={r['n']:>6} d={r['d']:>4} {r['precision']}: {r['ms_per_iteration']:.4f} ms/iter "
          f"({r['roofline_fraction']:.0%} of floor)")
PY
