#!/usr/bin/env bash
# The CPU section of the suite (issue 7): ours vs POT (dense sinkhorn_log) vs GeomLoss tensorized on
# CPU torch, 2 threads, in the suite's format (bench/suite/run.py --device cpu), plus, with CLASSIC=1,
# the earlier 100-iteration table of bench/cpu_forward_bench.py (same data generator and seed).
#   CPU_NS=1000,5000 CPU_DS=64 bench/suite/run_cpu.sh     # → bench/results/suite_cpu_<date>.jsonl
#   CPU_OPS=forward_gradient CPU_IMPLS=flashsinkhorn-py,geomloss-tensorized,pot-dense-log CPU_NS=1000,5000 \
#     PYTHONPATH=build/python bench/suite/run_cpu.sh   # gradients: our Python package (the CLI has none)
# Environment: CPU_NS [1000,5000,10000], CPU_DS [3,64], CPU_OPS [forward,converge],
# CPU_IMPLS [flashsinkhorn-cli,pot-dense-log,geomloss-tensorized],
# CPU_PRECISIONS [fp32,fp64], CPU_BUDGET seconds per case [600], CPU_OUT [the dated file], FLASHSINKHORN_BIN (our CLI),
# CLASSIC [0], CPU_REACH [0; 1: run.py --reach, one call per case — the largest n within CPU_BUDGET]. Needs POT and GeomLoss importable, and a 2-core machine that nothing else loads:
# the numbers are noise otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 bench/suite/run.py --device cpu --threads 2 --impls "${CPU_IMPLS:-flashsinkhorn-cli,pot-dense-log,geomloss-tensorized}" \
  --ops "${CPU_OPS:-forward,converge}" --ns "${CPU_NS:-1000,5000,10000}" --ds "${CPU_DS:-3,64}" \
  --precisions "${CPU_PRECISIONS:-fp32,fp64}" --budget "${CPU_BUDGET:-600}" --repeats "${CPU_REPEATS:-3}" \
  $([[ "${CPU_REACH:-0}" != 0 ]] && echo --reach) --out "${CPU_OUT:-bench/results/suite_cpu_$(date -u +%F).jsonl}"
if [[ "${CLASSIC:-0}" != 0 ]]; then
  python3 bench/cpu_forward_bench.py ${FLASHSINKHORN_BIN:+--bin "$FLASHSINKHORN_BIN"}
fi
