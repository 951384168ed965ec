#!/usr/bin/env python3
"""Join a hybrid run and an Adam-alone run made by separate `run.py --runs …` calls into one report.

    python3 examples/shuffled_regression/merge.py HYBRID.json ADAM.json --out-dir DIR [--no-plots]

When one call cannot hold both runs (the GPU machine stops a command at 10 minutes), each run is made
on its own with the same problem and the same options; this checks that they are (data, ε, learning
rate, tolerances, W0, precision, device; the hybrid-only settings, HYBRID_ONLY, may differ and are the
hybrid's), then writes shuffled_regression_n{n}.json with both traces,
their comparison (regression_runs.compare) and the three figures. The two budgets may differ: the
comparison reads each run's own clock. Exit status 1 with the differing settings when they do not match.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from regression_config import HYBRID_ONLY, PER_CALL, differing_settings  # noqa: E402
from regression_runs import compare  # noqa: E402
from run import log_comparison, parse, write_report  # noqa: E402


def merge(hybrid_report: dict, adam_report: dict) -> dict:
    """The joined report; ValueError naming the settings that differ, or a run that is missing."""
    if "hybrid" not in hybrid_report:
        raise ValueError("the first report holds no hybrid run")
    if "adam" not in adam_report:
        raise ValueError("the second report holds no Adam run")
    a, b = hybrid_report["config"], adam_report["config"]
    # A setting added to run.py after a run was made is absent from its config: that run had the default.
    differ = differing_settings(a, b, vars(parse(["--out-dir", "-"])), PER_CALL | HYBRID_ONLY)
    if differ:
        raise ValueError("the two runs solved different problems: " + ", ".join(differ))
    config = dict(a, runs=["hybrid", "adam"], budget_seconds=dict(hybrid=a.get("budget_seconds"),
                                                                 adam=b.get("budget_seconds")))
    rtol, tol = a["rtol"], a["tol"]
    final_lambda = dict(hybrid_report.get("final_lambda", {}))
    final_lambda.update({k: v for k, v in adam_report.get("final_lambda", {}).items() if k == "adam"})
    return dict(config=config, loss_at_w_star=hybrid_report["loss_at_w_star"],
                loss_at_w_star_adam_call=adam_report["loss_at_w_star"],
                flashsinkhorn_version=hybrid_report["flashsinkhorn_version"],
                torch_version=hybrid_report["torch_version"], hybrid=hybrid_report["hybrid"],
                adam=adam_report["adam"], final_lambda=final_lambda,
                comparison=compare(hybrid_report["hybrid"], adam_report["adam"], rtol=rtol, gradient_target=tol),
                merged_from=dict(hybrid=hybrid_report.get("source"), adam=adam_report.get("source")),
                complete=bool(hybrid_report.get("complete") and adam_report.get("complete")))


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("hybrid", type=Path, help="run.py's JSON holding the hybrid run")
    p.add_argument("adam", type=Path, help="run.py's JSON holding the Adam-alone run")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    reports = []
    for path in (args.hybrid, args.adam):
        report = json.loads(path.read_text())
        report["source"] = str(path)
        reports.append(report)
    try:
        report = merge(*reports)
    except ValueError as problem:
        sys.exit(f"merge.py: {problem}")
    n = report["config"]["n"]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"shuffled_regression_n{n}.json"
    write_report(out, report)
    c = report["comparison"]
    print(f"n = {n}: Adam's best {c['adam']['best_loss']:.6e} in {c['adam']['wall_seconds']:.1f} s; wrote {out}")
    log_comparison(c)
    if not args.no_plots:
        from regression_plots import plot_all
        plot_all(report, args.out_dir, f"_n{n}")
    return out


if __name__ == "__main__":
    main()
