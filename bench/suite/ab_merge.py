#!/usr/bin/env python3
"""The rows of an A/B's suite runs (bench/suite/run_ab.sh) in one JSON: {benchmark, setting, commit,
date, machine, command, rows}, each row as run.py wrote it (its machine.flashsinkhorn_env names the
value it ran under), and a summary per case and value — the median of the rows' ms, then each value's
ratio to the first value's — printed and stored under "summary".

    python3 bench/suite/ab_merge.py --out X.json --setting FLASHSINKHORN_FP32_PASS_EXP --command "..." RUN.jsonl...
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def value_of(row: dict, setting: str) -> str:
    """The setting's value a row ran under ('unset' when the row's environment did not name it)."""
    return str(((row.get("machine") or {}).get("flashsinkhorn_env") or {}).get(setting, "unset"))


def summary(rows: list[dict], setting: str) -> list[dict]:
    """Per (op, n, d, precision): each value's median ms over its ok rows, and its ratio to the value
    first seen (the baseline)."""
    order: list[str] = []
    cases: dict[tuple, dict[str, list[float]]] = {}
    for row in rows:
        value = value_of(row, setting)
        if value not in order:
            order.append(value)
        if row.get("status") == "ok" and row.get("ms"):
            key = (row.get("op"), row.get("n"), row.get("d"), row.get("precision"))
            cases.setdefault(key, {}).setdefault(value, []).append(float(row["ms"]))
    out = []
    for (op, n, d, precision), by_value in sorted(cases.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        medians = {v: statistics.median(by_value[v]) for v in order if v in by_value}
        base = medians.get(order[0])
        out.append({"op": op, "n": n, "d": d, "precision": precision, "median_ms": medians,
                    "ratio_to_" + order[0]: {v: (m / base if base else None) for v, m in medians.items()}})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--setting", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("runs", nargs="*")
    args = ap.parse_args()
    rows = [json.loads(line) for path in args.runs for line in Path(path).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("suite") == "flashsinkhorn-bench-suite"]
    if not rows:
        raise SystemExit(f"ab_merge: no suite rows in {args.runs}")
    first = rows[0]
    machine = {k: v for k, v in (first.get("machine") or {}).items() if k != "flashsinkhorn_env"}
    merged = {"benchmark": args.setting.removeprefix("FLASHSINKHORN_").lower() + "_ab", "setting": args.setting,
              "commit": first.get("commit"), "date": first.get("date"), "machine": machine, "command": args.command,
              "summary": summary(rows, args.setting), "rows": rows}
    Path(args.out).write_text(json.dumps(merged, indent=1) + "\n")
    for case in merged["summary"]:
        print(json.dumps(case))


if __name__ == "__main__":
    main()
