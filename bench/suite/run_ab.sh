#!/usr/bin/env bash
# An A/B of one of our FLASHSINKHORN_* settings on the suite's rows, in one device call: run_device.sh
# once per value of AB_SETTING (AB_VALUES; name the default too, so both sides carry the setting
# explicitly), the values in turn AB_ROUNDS times so that the machine's drift hits each, on one grid
# (the SUITE_* variables of run_device.sh; here SUITE_IMPLS defaults to flashsinkhorn-py and SUITE_CPP
# to 0), then bench/suite/ab_merge.py gathers every row into one JSON. E.g. (session 59's pending one):
#   FS_COMMIT=<hash> AB_SETTING=FLASHSINKHORN_FP32_PASS_EXP AB_VALUES="float64 ex2" SUITE_OPS=hvp \
#     SUITE_NS=10000,50000 SUITE_DS=3,8 SUITE_PRECISIONS=fp32 SUITE_REPEATS=3 bench/suite/run_ab.sh
# With AB_TRACE="50000x3 10000x3" each value also runs bench/studies/hvp_trace.py at those n×d (fp32,
# cuda) into $OUT/<name>_traces.txt: where the product's time goes under each value.
# Writes $OUT/<name>_ab_<card>_<date>.json (name: the setting without FLASHSINKHORN_, lower case) — the
# rows carry the setting in machine.flashsinkhorn_env, so that bench/suite/report.py keeps them out of
# the tables — and the runs' logs beside it; run_device.sh's suite files stay in a scratch folder.
set -uo pipefail
cd "$(dirname "$0")/../.."
setting="${AB_SETTING:?set AB_SETTING (a FLASHSINKHORN_* variable)}"
read -r -a values <<< "${AB_VALUES:?set AB_VALUES (its values, space-separated)}"
out="${OUT:-$PWD/out}"
card="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 | grep -oE 'H[0-9]+' | tr 'H' 'h')"
name="$(echo "${setting#FLASHSINKHORN_}" | tr '[:upper:]' '[:lower:]')_ab_${card:-gpu}_$(date -u +%F)"
runs="${AB_SCRATCH:-/tmp/ab_runs}"
rm -rf "$runs" && mkdir -p "$out" "$runs"
export SUITE_IMPLS="${SUITE_IMPLS:-flashsinkhorn-py}" SUITE_CPP="${SUITE_CPP:-0}"
for round in $(seq "${AB_ROUNDS:-1}"); do
  for value in "${values[@]}"; do
    env "$setting=$value" SUITE_TAG="${value}_round$round" OUT="$runs" SUITE_LOG="$out/${name}_${value}_round$round.log" \
      bench/suite/run_device.sh > /dev/null 2>&1 || echo "run_ab: $setting=$value, round $round failed or was cut short"
    for size in ${AB_TRACE:-}; do
      echo "== $setting=$value $size" >> "$out/${name}_traces.txt"
      env "$setting=$value" PYTHONPATH="$PWD/${BUILD_DIR:-build-gpu}/python${PYTHONPATH:+:$PYTHONPATH}" timeout 90 \
        python3 bench/studies/hvp_trace.py --n "${size%x*}" --d "${size#*x}" --precision fp32 --device cuda \
        >> "$out/${name}_traces.txt" 2>&1
    done
  done
done
python3 bench/suite/ab_merge.py --out "$out/$name.json" --setting "$setting" \
  --command "bench/suite/run_ab.sh with AB_SETTING=$setting AB_VALUES=\"${AB_VALUES}\" AB_ROUNDS=${AB_ROUNDS:-1}; each row keeps run.py's own command" \
  "$runs"/suite_*.jsonl
