#!/usr/bin/env bash
# What the CLI must do with good input: demo and solve print one valid JSON object with the
# documented keys; --out writes f.npy, g.npy, transport_x.npy with the right dtype and shape and
# nothing else; .csv, .npz (stored and, with zlib, deflated) and big-endian .npy inputs give the
# same cost as .npy; --help lists every option; --version prints the version.
#
# usage: good_input_test.sh FLASHSINKHORN_BINARY SCRATCH_DIR HAS_ZLIB(ON|OFF|TRUE|FALSE|1|0)
set -u

binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
scratch=$(mkdir -p "$2" && cd "$2" && pwd)
case ${3^^} in ON | TRUE | 1 | YES) has_zlib=1 ;; *) has_zlib=0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}  # the standard library is enough
fixtures="$here/npy_fixtures.py"
rm -rf "$scratch"
mkdir -p "$scratch/fixtures"
"$python" "$fixtures" make "$scratch/fixtures" || { echo "FAIL: cannot write fixtures"; exit 1; }
cd "$scratch/fixtures" || exit 1

failures=0
cases=0
pass() { cases=$((cases + 1)); echo "ok    $1"; }
fail() { cases=$((cases + 1)); failures=$((failures + 1)); echo "FAIL  $1: $2"; }

# run_json NAME ARGS...: runs the binary, requires exit 0 and one line of valid JSON holding every
# documented key, all numbers finite; leaves the JSON in $scratch/NAME.json.
required_keys="cost primal_cost relative_entropy iterations marginal_error converged n m d eps device seconds solver precision cost_kind cost_scale debias version"
run_json() {
  local name=$1
  shift
  "$binary" "$@" >"$scratch/$name.json" 2>"$scratch/$name.stderr"
  local status=$?
  if [[ $status -ne 0 ]]; then
    fail "$name" "exit status $status: $(head -c 400 "$scratch/$name.stderr")"
    return 1
  fi
  local problem
  problem=$("$python" -c '
import json, math, sys
text = open(sys.argv[1]).read()
if text.count("\n") != 1: sys.exit("stdout has %d lines, expected 1" % text.count("\n"))
summary = json.loads(text, parse_constant=lambda c: sys.exit("non-JSON constant " + c))
missing = [k for k in sys.argv[2].split() if k not in summary]
if missing: sys.exit("missing keys: " + " ".join(missing))
bad = [k for k, v in summary.items() if isinstance(v, float) and not math.isfinite(v)]
if bad: sys.exit("non-finite: " + " ".join(bad))
' "$scratch/$name.json" "$required_keys" 2>&1)
  if [[ $? -ne 0 ]]; then
    fail "$name" "$problem"
    return 1
  fi
  pass "$name"
}

# expect_outputs NAME DIR DESCR: the three solution files and nothing else.
expect_outputs() {
  local name=$1 dir=$2 descr=$3
  local listing problem
  listing=$(ls -A "$dir" 2>&1 | tr '\n' ' ')
  if [[ $listing != "f.npy g.npy transport_x.npy " ]]; then
    fail "$name" "--out holds '$listing', expected exactly f.npy g.npy transport_x.npy"
    return
  fi
  problem=$("$python" "$fixtures" check "$dir/f.npy" "$descr" 7 2>&1 &&
            "$python" "$fixtures" check "$dir/g.npy" "$descr" 6 2>&1 &&
            "$python" "$fixtures" check "$dir/transport_x.npy" "$descr" 7,2 2>&1)
  if [[ $? -eq 0 ]]; then pass "$name"; else fail "$name" "$problem"; fi
}

# expect_gradient_outputs NAME DIR DESCR FILES: --grad's directory holds exactly FILES (sorted,
# space-separated) with the shapes of n = 7, m = 6, d = 2.
expect_gradient_outputs() {
  local name=$1 dir=$2 descr=$3 files=$4
  local listing problem="" file shape
  listing=$(ls -A "$dir" 2>&1 | tr '\n' ' ')
  if [[ $listing != "$files " ]]; then
    fail "$name" "--out holds '$listing', expected exactly $files"
    return
  fi
  for file in $files; do
    case $file in
      grad_x.npy | transport_x.npy) shape=7,2 ;;
      grad_y.npy) shape=6,2 ;;
      f.npy | grad_a.npy) shape=7 ;;
      g.npy | grad_b.npy) shape=6 ;;
    esac
    problem+=$("$python" "$fixtures" check "$dir/$file" "$descr" "$shape" 2>&1)
  done
  if [[ -z $problem ]]; then pass "$name"; else fail "$name" "$problem"; fi
}

# expect_same_cost NAME REFERENCE OTHER: the two runs' costs agree.
expect_same_cost() {
  local problem
  problem=$("$python" "$fixtures" same-cost "$scratch/$2.json" "$scratch/$3.json" 2>&1)
  if [[ $? -eq 0 ]]; then pass "$1"; else fail "$1" "$problem"; fi
}

solve=(solve --quiet --eps 0.1 --tol 1e-9 --iters 50 --device cpu)

run_json demo demo --quiet --device cpu &&
  { "$python" -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("demo") is True else 1)' \
      <"$scratch/demo.json" && pass demo_flag || fail demo_flag '"demo": true missing'; }

run_json solve_fp64 "${solve[@]}" --x x.npy --y y.npy --a a.npy --b b.npy --precision fp64 --out "$scratch/out64" &&
  expect_outputs outputs_fp64 "$scratch/out64" '<f8'
run_json solve_fp32 "${solve[@]}" --x x.npy --y y.npy --precision fp32 --out "$scratch/out32" &&
  expect_outputs outputs_fp32 "$scratch/out32" '<f4'
# --grad adds the gradients, in the same dtype; grad_a/grad_b only on sides without a reach.
run_json grad_fp64 "${solve[@]}" --x x.npy --y y.npy --a a.npy --b b.npy --precision fp64 --out "$scratch/grad64" --grad &&
  expect_gradient_outputs grad_outputs_fp64 "$scratch/grad64" '<f8' \
    "f.npy g.npy grad_a.npy grad_b.npy grad_x.npy grad_y.npy transport_x.npy"
run_json grad_fp32_reach_x "${solve[@]}" --x x.npy --y y.npy --reach-x 1 --out "$scratch/grad32" --grad &&
  expect_gradient_outputs grad_outputs_reach_x "$scratch/grad32" '<f4' \
    "f.npy g.npy grad_b.npy grad_x.npy grad_y.npy transport_x.npy"
# A second run into the same directory replaces the files and leaves no temp files.
run_json solve_again "${solve[@]}" --x x.npy --y y.npy --precision fp32 --out "$scratch/out32" &&
  expect_outputs outputs_replaced "$scratch/out32" '<f4'

run_json npy "${solve[@]}" --x x.npy --y y.npy
run_json csv "${solve[@]}" --x x.csv --y y.csv && expect_same_cost csv_cost npy csv
run_json npz_stored "${solve[@]}" --x x_stored.npz --y y.npy && expect_same_cost npz_stored_cost npy npz_stored
run_json big_endian "${solve[@]}" --x x_big_endian.npy --y y.npy && expect_same_cost big_endian_cost npy big_endian
run_json positional "${solve[@]}" x.npy y.npy && expect_same_cost positional_cost npy positional
if [[ $has_zlib -eq 1 ]]; then
  run_json npz_deflated "${solve[@]}" --x x_deflated.npz --y y.npy && expect_same_cost npz_deflated_cost npy npz_deflated
else
  "$binary" "${solve[@]}" --x x_deflated.npz --y y.npy >/dev/null 2>"$scratch/deflated.stderr"
  if [[ $? -eq 2 ]] && grep -q zlib "$scratch/deflated.stderr"; then pass npz_deflated_refused
  else fail npz_deflated_refused "expected exit 2 naming zlib"; fi
fi
run_json float32_input "${solve[@]}" --x x32.npy --y y.npy
run_json options "${solve[@]}" --x x.npy --y y.npy --solver symmetric --scaling 0.5 --cost-scale 0.5 \
  --check-every 5 --reach 1 --debias --threads 1 --cost cosine
# --relaxation auto: adaptive from 1.8, and the summary says so.
if run_json relaxation_auto "${solve[@]}" --x x.npy --y y.npy --scaling 0.5 --relaxation auto; then
  if "$python" -c 'import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(0 if s["adaptive_relaxation"] is True and s["relaxation"] == 1.8 else 1)' "$scratch/relaxation_auto.json"; then
    pass relaxation_auto_reported
  else fail relaxation_auto_reported "expected adaptive_relaxation true, relaxation 1.8"; fi
fi

# Help lists every option of the contract; --version prints flashsinkhorn's version.
help_text=$("$binary" solve --help 2>&1)
if [[ $? -eq 0 ]]; then
  missing=""
  for flag in --x --y --a --b --eps --cost-scale --cost --solver --iters --tol --check-every --relaxation --scaling \
              --reach --reach-x --reach-y --debias --device --precision --threads --out --grad --quiet; do
    grep -qE -- "^  $flag( |$)" <<<"$help_text" || missing+=" $flag"
  done
  if [[ -z $missing ]]; then pass solve_help; else fail solve_help "not described:$missing"; fi
else
  fail solve_help "exit status not 0"
fi
"$binary" --help | grep -q solve && "$binary" demo --help | grep -q -- --n && pass help || fail help "usage text"
version=$("$binary" --version)
if [[ $? -eq 0 && $version =~ ^flashsinkhorn\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then pass version
else fail version "got '$version'"; fi

echo "$((cases - failures))/$cases good-input cases passed"
[[ $failures -eq 0 ]]
