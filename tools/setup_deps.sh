#!/usr/bin/env bash
# Installs what building and testing need, only what is missing:
#   apt: a C++20 compiler, CMake, GoogleTest, zlib (for deflated .npz), Eigen (label cost embedding)
#   pip: numpy, pytest, scipy, POT (the independent oracle), nanobind (the Python extension);
#        --peers adds torch and geomloss (parity tests; large downloads)
# Safe to run repeatedly; on a machine without apt (or not root) it only reports what is missing.
set -euo pipefail

want_peers=0
[[ "${1:-}" == "--peers" ]] && want_peers=1

apt_packages=(g++ cmake make libgtest-dev zlib1g-dev libeigen3-dev python3 python3-pip python3-dev)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
    echo "setup: apt-get install ${missing[*]}" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
      echo "setup: apt-get failed (offline?); continuing with what is installed" >&2
  else
    echo "setup: not installing (no apt-get or not root): ${missing[*]}" >&2
  fi
fi

python=${PYTHON:-python3}
pip_install() {  # pip_install <import name> <pip spec>...
  local module=$1; shift
  if ! "$python" -c "import $module" >/dev/null 2>&1; then
    echo "setup: pip install $*" >&2
    # A distribution's own Python refuses plain pip installs (PEP 668): then install for this user.
    "$python" -m pip install -q "$@" 2>/dev/null ||
      "$python" -m pip install -q --user --break-system-packages "$@" ||
      echo "setup: could not install $* (tests that need it will skip)" >&2
  fi
}
pip_install numpy numpy
pip_install pytest pytest
pip_install scipy scipy
pip_install ot pot
pip_install nanobind nanobind
pip_install matplotlib matplotlib
if ((want_peers)); then
  pip_install torch torch
  pip_install geomloss geomloss
fi
