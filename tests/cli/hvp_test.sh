#!/usr/bin/env bash
# The `flashsinkhorn hvp` contract: exit 0 with one JSON line holding the CG report; DIR holds
# exactly hvp.npy (the direction's shape; float64 in fp64, float32 otherwise) and hvp.json; the
# product is symmetric (<B, H A> = <A, H B>); --wrt y; --wrt xy (hvp_x.npy, hvp_y.npy: with B = 0
# its X block is the --wrt x product); --wrt self on X = Y (the joint product at (A, A) summed); bad
# input exits 2 with one error line and leaves no files.
#
# usage: hvp_test.sh FLASHSINKHORN_BINARY SCRATCH_DIR
set -u

binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
scratch=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
rm -rf "$scratch"
mkdir -p "$scratch/fixtures"
"$python" "$here/hvp_fixtures.py" make "$scratch/fixtures" || { echo "FAIL: cannot write fixtures"; exit 1; }
cd "$scratch/fixtures" || exit 1

failures=0
pass() { echo "ok    $1"; }
fail() { failures=$((failures + 1)); echo "FAIL  $1: $2"; }

keys="cost iterations converged n m d eps wrt part cg_iterations cg_relative_residual cg_converged cg_ridge cg_preconditioner plan_passes device precision out"
# good NAME OUTDIR DESCR SHAPE ARGS...: exit 0, JSON with the keys, exactly hvp.npy + hvp.json.
good() {
  local name=$1 out=$2 descr=$3 shape=$4
  shift 4
  "$binary" hvp "$@" --out "$out" --quiet >"$scratch/$name.json" 2>"$scratch/$name.stderr"
  local status=$?
  [[ $status -eq 0 ]] || { fail "$name" "exit $status: $(head -c 400 "$scratch/$name.stderr")"; return; }
  local problem
  problem=$("$python" -c '
import json, sys
summary = json.loads(open(sys.argv[1]).read())
missing = [k for k in sys.argv[2].split() if k not in summary]
if missing: sys.exit("missing keys: " + " ".join(missing))
if not summary["cg_converged"] and summary["part"] != "fixed": sys.exit("CG did not converge")
stored = json.loads(open(sys.argv[3]).read())
if stored != summary: sys.exit("hvp.json differs from stdout")
' "$scratch/$name.json" "$keys" "$out/hvp.json" 2>&1) || { fail "$name" "$problem"; return; }
  local listing
  listing=$(ls -A "$out" | tr '\n' ' ')
  [[ $listing == "hvp.json hvp.npy " ]] || { fail "$name" "DIR holds: $listing"; return; }
  problem=$("$python" "$here/npy_fixtures.py" check "$out/hvp.npy" "$descr" "$shape" 2>&1) || { fail "$name" "$problem"; return; }
  pass "$name"
}

# good_joint NAME OUTDIR SHAPE_Y ARGS...: --wrt xy, exit 0, exactly hvp_x.npy (7,2), hvp_y.npy
# (SHAPE_Y) and hvp.json, in float64.
good_joint() {
  local name=$1 out=$2 shape_y=$3
  shift 3
  "$binary" hvp "$@" --wrt xy --out "$out" --quiet >"$scratch/$name.json" 2>"$scratch/$name.stderr"
  local status=$?
  [[ $status -eq 0 ]] || { fail "$name" "exit $status: $(head -c 400 "$scratch/$name.stderr")"; return; }
  local listing
  listing=$(ls -A "$out" | tr '\n' ' ')
  [[ $listing == "hvp.json hvp_x.npy hvp_y.npy " ]] || { fail "$name" "DIR holds: $listing"; return; }
  local problem
  problem=$("$python" "$here/npy_fixtures.py" check "$out/hvp_x.npy" "<f8" "7,2" 2>&1 &&
            "$python" "$here/npy_fixtures.py" check "$out/hvp_y.npy" "<f8" "$shape_y" 2>&1) || { fail "$name" "$problem"; return; }
  pass "$name"
}

# bad NAME ARGS...: exit 2, one stderr line, no output directory left behind.
bad() {
  local name=$1
  shift
  rm -rf "$scratch/bad_out"
  "$binary" hvp "$@" >"$scratch/$name.out" 2>"$scratch/$name.stderr"
  local status=$?
  [[ $status -eq 2 ]] || { fail "$name" "exit $status, expected 2: $(head -c 300 "$scratch/$name.stderr")"; return; }
  [[ $(wc -l <"$scratch/$name.stderr") -eq 1 ]] || { fail "$name" "stderr is not one line"; return; }
  [[ ! -e "$scratch/bad_out" ]] || { fail "$name" "left $scratch/bad_out behind"; return; }
  pass "$name"
}

common=(--x x.npy --y y.npy --eps 0.3)
good fp64_a "$scratch/a" "<f8" "7,2" "${common[@]}" --dir dir_a.npy --precision fp64 --tol 1e-12 --cg-tol 1e-12
good fp64_b "$scratch/b" "<f8" "7,2" "${common[@]}" --dir dir_b.npy --precision fp64 --tol 1e-12 --cg-tol 1e-12
if problem=$("$python" "$here/hvp_fixtures.py" symmetric dir_a.npy "$scratch/a/hvp.npy" dir_b.npy "$scratch/b/hvp.npy" 2>&1); then
  pass symmetric
else
  fail symmetric "$problem"
fi
good wrt_y "$scratch/y" "<f8" "6,2" "${common[@]}" --dir dir_y.npy --wrt y --precision fp64 --two-gemm generic
good fp32 "$scratch/f32" "<f4" "7,2" "${common[@]}" --dir dir_a.npy --device cpu
good implicit "$scratch/imp" "<f8" "7,2" "${common[@]}" --dir dir_a.npy --part implicit --precision fp64 --preconditioner none
good fixed "$scratch/fix" "<f8" "7,2" "${common[@]}" --dir dir_a.npy --part fixed --precision fp64
# --preconditioner sparse: the same product as the diagonal's (fp64_a), named in the JSON.
good sparse "$scratch/sp" "<f8" "7,2" "${common[@]}" --dir dir_a.npy --precision fp64 --tol 1e-12 --cg-tol 1e-12 \
  --preconditioner sparse
if problem=$("$python" "$here/hvp_fixtures.py" same "$scratch/sp/hvp.npy" "$scratch/a/hvp.npy" 2>&1) &&
   grep -q '"cg_preconditioner": "sparse"' "$scratch/sp/hvp.json"; then
  pass sparse_same_product
else
  fail sparse_same_product "${problem:-hvp.json does not name the sparse preconditioner}"
fi

# The joint product: with B = 0 its X block is H_xx·A (fp64_a); its Y block with A = 0 is H_yy·B.
tight=(--precision fp64 --tol 1e-12 --cg-tol 1e-12)
good_joint joint "$scratch/xy" "6,2" "${common[@]}" --dir dir_a.npy --dir-y dir_y.npy "${tight[@]}"
good_joint joint_a "$scratch/xy_a" "6,2" "${common[@]}" --dir dir_a.npy "${tight[@]}"
if problem=$("$python" "$here/hvp_fixtures.py" same "$scratch/xy_a/hvp_x.npy" "$scratch/a/hvp.npy" 2>&1); then
  pass joint_x_block
else
  fail joint_x_block "$problem"
fi
# The self product on X = Y is the joint product at (A, A) summed.
good self "$scratch/self" "<f8" "7,2" --x x.npy --y x.npy --eps 0.3 --dir dir_a.npy --wrt self --solver symmetric "${tight[@]}"
good_joint self_joint "$scratch/self_xy" "7,2" --x x.npy --y x.npy --eps 0.3 --dir dir_a.npy --dir-y dir_a.npy \
  --solver symmetric "${tight[@]}"
if problem=$("$python" "$here/hvp_fixtures.py" summed "$scratch/self/hvp.npy" "$scratch/self_xy/hvp_x.npy" \
             "$scratch/self_xy/hvp_y.npy" 2>&1); then
  pass self_is_joint_summed
else
  fail self_is_joint_summed "$problem"
fi

bad wrong_shape "${common[@]}" --dir dir_bad.npy --out "$scratch/bad_out"
bad wrong_side "${common[@]}" --dir dir_a.npy --wrt y --out "$scratch/bad_out"
bad missing_dir "${common[@]}" --out "$scratch/bad_out"
bad missing_out "${common[@]}" --dir dir_a.npy
bad missing_file "${common[@]}" --dir nowhere.npy --out "$scratch/bad_out"
bad bad_part "${common[@]}" --dir dir_a.npy --part everything --out "$scratch/bad_out"
bad bad_cg_tol "${common[@]}" --dir dir_a.npy --cg-tol -1 --out "$scratch/bad_out"
bad bad_eps --x x.npy --y y.npy --eps -1 --dir dir_a.npy --out "$scratch/bad_out"
bad bad_wrt "${common[@]}" --dir dir_a.npy --wrt z --out "$scratch/bad_out"
bad dir_y_without_xy "${common[@]}" --dir dir_a.npy --dir-y dir_y.npy --out "$scratch/bad_out"
# (found after the solve, by the library: --quiet keeps stderr to the error line)
bad self_not_symmetric "${common[@]}" --dir dir_a.npy --wrt self --quiet --out "$scratch/bad_out"

if "$binary" hvp --help | grep -q -- "--cg-tol"; then pass help; else fail help "--help does not list --cg-tol"; fi

if [[ $failures -ne 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all hvp CLI cases passed"
