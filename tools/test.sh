#!/usr/bin/env bash
# The README's second command: install what is missing, build everything with warnings as errors
# (the CUDA code too when nvcc is found — compiled, so a broken kernel cannot land), run every
# C++ test (GPU tests skip without a GPU) and the Python suite (peer tests skip when a peer is
# not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup_deps.sh "$@"
tools/build.sh -DFLASHSINKHORN_WERROR=ON
(cd build && ctest --output-on-failure -j "$(nproc)")
FLASHSINKHORN_BIN="$PWD/build/apps/cli/flashsinkhorn" "${PYTHON:-python3}" -m pytest -q tests/python
