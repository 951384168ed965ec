#!/usr/bin/env bash
# Configures and builds into build/ (CUDA code too when nvcc is found). Extra args go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
else
  cmake -S . -B build "$@" >/dev/null
fi
cmake --build build -j "$(nproc)"
