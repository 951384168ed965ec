#!/usr/bin/env bash
# The README's second command: install what is missing, build everything with warnings as errors
# (the CUDA code too when nvcc is found — compiled, so a broken kernel cannot land), run every
# C++ test (GPU tests skip without a GPU) and the Python suite (peer tests skip when a peer is
# not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup_deps.sh "$@"
python=${PYTHON:-python3}
# The Python extension is built with everything else when nanobind and Python.h are present, and
# imported from build/python (no pip install here; `pip install .` is the user's path).
python_flags=(-DFLASHSINKHORN_PYTHON=OFF)
if "$python" -c "import nanobind, os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" 2>/dev/null; then
  python_flags=(-DFLASHSINKHORN_PYTHON=ON "-DPython_EXECUTABLE=$(command -v "$python")")
fi
tools/build.sh -DFLASHSINKHORN_WERROR=ON "${python_flags[@]}"
(cd build && ctest --output-on-failure -j "$(nproc)")
PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" \
FLASHSINKHORN_BIN="$PWD/build/apps/cli/flashsinkhorn" "$python" -m pytest -q tests/python
