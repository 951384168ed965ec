#!/usr/bin/env bash
# install_test <build dir> <scratch dir>: installs the build into a prefix, then configures, builds
# and runs tests/install as an outside project would.
set -euo pipefail
build=$1 scratch=$2
source_dir=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/consumer" >/dev/null
"$scratch/consumer/consumer"
"$scratch/prefix/bin/flashsinkhorn" --version
