#!/usr/bin/env bash
# Stages the benchmark peers (issue 7) as wheels for the GPU machine (CPython 3.12, manylinux x86_64,
# no internet there) into the git-ignored .whl/, following the device README's `pip download` recipe.
#   tools/stage_peer_wheels.sh            # then: du -sh .whl (carry limit 64 MiB per call)
# .whl/        installed by every stage that runs peers (pip install --no-deps .whl/*.whl):
#              flash-sinkhorn, geomloss, pykeops + keopscore 2.3, ott-jax + jaxopt, pot
# .whl/alt/    pykeops + keopscore 2.2.3, the fallback bench/suite/keops_doctor.py tries when 2.3
#              fails (installed into a separate folder: two versions in one install stop it)
#   tools/stage_peer_wheels.sh --nvrtc 13.5.37
#              stages nvidia-cuda-nvrtc of that version into .whl_nvrtc/ as nvidia_cuda_nvrtc-V.tar.xz
#              (the wheel's nvidia/ tree, xz -9e: 13.5.37 58 -> 39 MB) beside copies of .whl's KeOps
#              wheels (and alt/), for bench/suite/keops_doctor.py's pykeops-2.3+nvrtc-V configuration
#              in a call that carries .whl_nvrtc alone (with the 26 MB tree it fills the 64 MiB carry):
#                pip install --target /tmp/site .whl_nvrtc/*.whl; keops_doctor.py --alt-wheels .whl_nvrtc/alt
# Already on the device (KINDS.md, not staged): torch 2.11, triton, jax 0.11 + jaxlib + CUDA plugin,
# numpy, scipy, optax, lineax, equinox, jaxtyping, pybind11 (pykeops builds its binder with it), matplotlib.
# Pins and why: pot 0.9.6.post1, not 0.9.7.post1 — the latter's wheel is 33 MB (175 MB unpacked:
# ot/bsp), half the carry limit; the suite uses none of ot.bsp. pykeops/keopscore publish sdists
# only: they are built into (pure-Python) wheels here.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${WHEEL_DIR:-.whl}"
mkdir -p "$dest/alt"
grep -qx '/.whl/' .gitignore 2> /dev/null || echo "warning: .whl/ is not in .gitignore" >&2
download() {  # pip download for CPython 3.12 manylinux x86_64, no dependencies
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 \
    --platform manylinux2010_x86_64 --platform manylinux1_x86_64 -d "$@"
}
if [[ "${1:-}" == --nvrtc ]]; then
  [[ -n "${2:-}" ]] || { echo "usage: $0 --nvrtc VERSION (e.g. 13.5.37)" >&2; exit 2; }
  grep -qx '/.whl_nvrtc/' .gitignore 2> /dev/null || echo "warning: .whl_nvrtc/ is not in .gitignore" >&2
  rm -rf .whl_nvrtc && mkdir -p .whl_nvrtc/alt
  wheels="$(mktemp -d)"
  trap 'rm -rf "$wheels"' EXIT
  download "$wheels" "nvidia-cuda-nvrtc==$2"
  (cd "$wheels" && unzip -q nvidia_cuda_nvrtc-*.whl 'nvidia/*' && tar cf - nvidia | xz -9e -T0) \
    > ".whl_nvrtc/nvidia_cuda_nvrtc-$2.tar.xz"
  cp "$dest"/pykeops-*.whl "$dest"/keopscore-*.whl .whl_nvrtc/ 2> /dev/null || true
  cp "$dest"/alt/*.whl .whl_nvrtc/alt/ 2> /dev/null || true
  ls -la .whl_nvrtc .whl_nvrtc/alt
  exit 0
fi
download "$dest" flash-sinkhorn==0.4.1 geomloss==0.3.1 ott-jax==0.6.0 jaxopt==0.8.5 pot==0.9.6.post1
sdists="$(mktemp -d)"
trap 'rm -rf "$sdists"' EXIT
build_sdist_wheels() {  # pure-Python sdists → wheels (built with this machine's Python; py3-none-any)
  local to="$1"; shift
  python3 -m pip download -q --no-deps --no-binary=:all: -d "$sdists" "$@"
  for spec in "$@"; do
    python3 -m pip wheel -q --no-deps -w "$to" "$sdists/${spec%%==*}-${spec##*==}.tar.gz"
  done
}
build_sdist_wheels "$dest" keopscore==2.3 pykeops==2.3
build_sdist_wheels "$dest/alt" keopscore==2.2.3 pykeops==2.2.3
# Requirements each wheel declares that the device lacks (a reminder, not a resolver).
for wheel in "$dest"/*.whl "$dest"/alt/*.whl; do
  unzip -p "$wheel" '*/METADATA' | grep '^Requires-Dist' | grep -v 'extra ==' | sed "s|^|$(basename "$wheel"): |" || true
done
ls -la "$dest" "$dest/alt"
du -sh "$dest"
