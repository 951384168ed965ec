#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the built-in example
# (on the GPU when one is present, else on the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup_deps.sh
tools/build.sh
build/apps/cli/flashsinkhorn demo "$@"
