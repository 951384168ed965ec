#!/usr/bin/env bash
# Stages the sources of an earlier commit into .baseline/<commit>/ (git-ignored) for gpu_check's
# stage `baseline`, which builds its forward benchmark on the device beside this tree's and runs the
# two interleaved (bench/baseline_ab.sh): a kernel's speed before and after a change, on one machine.
# (Session 43 found a 13% slowdown of the key pairs only that way: two H100s of the same kind
# differed by as much between sessions.) Only what the build needs is staged (no results, plots or
# examples), a few MiB to carry.
#   tools/stage_baseline_tree.sh 5dc5e35
#   then run on the device with carry [".baseline/5dc5e35", ...]:
#   FS_COMMIT=<hash> STAGES="build baseline" BASELINE_TREE=.baseline/5dc5e35 tools/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
commit="${1:?usage: tools/stage_baseline_tree.sh COMMIT}"
full="$(git rev-parse --verify "$commit^{commit}")"
short="$(git rev-parse --short "$full")"
target=".baseline/$short"
rm -rf "$target"
mkdir -p "$target"
git archive "$full" CMakeLists.txt cmake include src apps bench python tests | tar -x -C "$target"
rm -rf "$target/bench/results" "$target/bench/plots"
echo "$short" > "$target/BASELINE_COMMIT"
echo "staged $short into $target ($(du -sh "$target" | cut -f1)); carry \"$target\" and set BASELINE_TREE=$target"
