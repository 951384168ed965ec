#!/usr/bin/env bash
# Bad input must never crash the CLI: for each case, exit status 2, exactly one stderr line of
# the form "flashsinkhorn: error: ..." naming the problem, nothing on stdout, and no file left
# in --out.
#
# usage: bad_input_test.sh FLASHSINKHORN_BINARY SCRATCH_DIR
set -u

binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
scratch=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}  # the standard library is enough
rm -rf "$scratch"
mkdir -p "$scratch/fixtures"
"$python" "$here/npy_fixtures.py" make "$scratch/fixtures" || { echo "FAIL: cannot write fixtures"; exit 1; }
cd "$scratch/fixtures" || exit 1

failures=0
cases=0

# expect_bad_input NAME KEYWORD ARGS...: KEYWORD is an extended regex the error line must match
# (case-insensitive). Each solve case writes to its own --out directory unless ARGS name one or
# the caller sets no_out=1.
expect_bad_input() {
  local name=$1 keyword=$2
  shift 2
  local out="$scratch/out_$name"
  local args=("$@")
  if [[ ${args[0]-} == solve && " ${args[*]} " != *" --out "* && -z ${no_out-} ]]; then args+=(--out "$out"); fi
  cases=$((cases + 1))
  "$binary" "${args[@]}" >"$scratch/$name.stdout" 2>"$scratch/$name.stderr"
  local status=$?
  local problems=()
  [[ $status -eq 2 ]] || problems+=("exit status $status, expected 2")
  local lines
  lines=$(wc -l <"$scratch/$name.stderr")
  [[ $lines -eq 1 ]] || problems+=("$lines stderr lines, expected 1")
  grep -q '^flashsinkhorn: error: ' "$scratch/$name.stderr" || problems+=("stderr lacks 'flashsinkhorn: error: '")
  grep -qiE -- "$keyword" "$scratch/$name.stderr" || problems+=("stderr does not match /$keyword/")
  [[ ! -s "$scratch/$name.stdout" ]] || problems+=("stdout is not empty")
  if [[ -d $out && -n $(ls -A "$out") ]]; then problems+=("files left in --out: $(ls -A "$out" | tr '\n' ' ')"); fi
  if [[ ${#problems[@]} -eq 0 ]]; then
    echo "ok    $name: $(cat "$scratch/$name.stderr")"
  else
    failures=$((failures + 1))
    echo "FAIL  $name: $(IFS=';'; echo "${problems[*]}")"
    echo "      command: $binary ${args[*]}"
    sed 's/^/      stderr: /' "$scratch/$name.stderr"
  fi
}

solve=(solve --quiet)
expect_bad_input nan_in_x       'NaN'                "${solve[@]}" --x x_nan.npy --y y.npy --eps 0.1
expect_bad_input inf_in_y       'Inf'                "${solve[@]}" --x x.npy --y y_inf.npy --eps 0.1
expect_bad_input nan_in_a       'NaN'                "${solve[@]}" --x x.npy --y y.npy --a a_nan.npy --eps 0.1
expect_bad_input negative_b     'negative'           "${solve[@]}" --x x.npy --y y.npy --b b_negative.npy --eps 0.1
expect_bad_input zero_weights   'zero'               "${solve[@]}" --x x.npy --y y.npy --b b_zero.npy --eps 0.1
expect_bad_input wrong_length   'weights'            "${solve[@]}" --x x.npy --y y.npy --a a_short.npy --eps 0.1
expect_bad_input mismatched_d   'dimension|d ='      "${solve[@]}" --x x.npy --y y_d3.npy --eps 0.1
expect_bad_input empty_cloud    'empty'              "${solve[@]}" --x x_empty.npy --y y.npy --eps 0.1
expect_bad_input eps_zero       'eps'                "${solve[@]}" --x x.npy --y y.npy --eps 0
expect_bad_input eps_negative   'eps'                "${solve[@]}" --x x.npy --y y.npy --eps -1
expect_bad_input eps_nan        'eps'                "${solve[@]}" --x x.npy --y y.npy --eps nan
expect_bad_input eps_missing    'eps'                "${solve[@]}" --x x.npy --y y.npy
expect_bad_input eps_garbage    'eps'                "${solve[@]}" --x x.npy --y y.npy --eps abc
expect_bad_input iters_garbage  'iters'              "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --iters abc
expect_bad_input txt_file       'x\.txt'             "${solve[@]}" --x x.txt --y y.npy --eps 0.1
expect_bad_input missing_file   'no_such\.npy'       "${solve[@]}" --x no_such.npy --y y.npy --eps 0.1
expect_bad_input truncated_npy  'x_truncated\.npy.*truncated' "${solve[@]}" --x x_truncated.npy --y y.npy --eps 0.1
expect_bad_input int64_npy      'x_int64\.npy: dtype <i8 is not supported; use float32 or float64' \
                                                     "${solve[@]}" --x x_int64.npy --y y.npy --eps 0.1
expect_bad_input fortran_npy    'Fortran'            "${solve[@]}" --x x_fortran.npy --y y.npy --eps 0.1
expect_bad_input bad_magic      'x_bad_magic\.npy'   "${solve[@]}" --x x_bad_magic.npy --y y.npy --eps 0.1
expect_bad_input rank3_npy      'x_rank3\.npy'       "${solve[@]}" --x x_rank3.npy --y y.npy --eps 0.1
expect_bad_input ragged_csv     'x_ragged\.csv'      "${solve[@]}" --x x_ragged.csv --y y.npy --eps 0.1
expect_bad_input two_array_npz  'xy\.npz'            "${solve[@]}" --x xy.npz --y y.npy --eps 0.1
expect_bad_input unwritable_out '/dev/null/x'        "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --out /dev/null/x
expect_bad_input unknown_flag   '--frobnicate'       "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --frobnicate
expect_bad_input missing_x      '--x'                "${solve[@]}" --y y.npy --eps 0.1
expect_bad_input bad_precision  'precision'          "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --precision fp8
expect_bad_input bad_device     'device'             "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --device tpu
# A GPU index no machine has: "no CUDA device is visible" without a GPU, "does not exist" with one.
expect_bad_input absent_gpu     'cuda'               "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --device cuda:99
# --grad writes into --out: without it, or with input the solve refuses, nothing is written.
no_out=1 expect_bad_input grad_without_out '--grad needs --out' "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --grad
expect_bad_input grad_nan_in_x  'NaN'                "${solve[@]}" --x x_nan.npy --y y.npy --eps 0.1 --grad
expect_bad_input grad_unwritable_out '/dev/null/x'   "${solve[@]}" --x x.npy --y y.npy --eps 0.1 --grad --out /dev/null/x
expect_bad_input grad_on_demo   '--grad'             demo --grad
expect_bad_input unknown_command 'frobnicate'        frobnicate
expect_bad_input no_command     'command'

echo "$((cases - failures))/$cases bad-input cases passed"
[[ $failures -eq 0 ]]
