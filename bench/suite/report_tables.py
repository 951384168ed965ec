"""Markdown table and number helpers shared by the report's sections (bench/suite/report.py,
report_hvp.py, report_suite.py)."""

from __future__ import annotations

import math


def table(header: list[str], body: list[list]) -> list[str]:
    """A GitHub table, then a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return lines + [""]


def fmt_ms(value) -> str:
    if value is None or not isinstance(value, (int, float)) or math.isnan(value):
        return "–"
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def fmt_bytes(value) -> str:
    if value is None:
        return "–"
    for unit, size in (("GB", 2 ** 30), ("MB", 2 ** 20), ("kB", 2 ** 10)):
        if value >= size:  # (1,000–1,023 of a unit: whole, not "1.02e+03")
            scaled = value / size
            return f"{scaled:.3g} {unit}" if scaled < 1000 else f"{scaled:,.0f} {unit}"
    return f"{value:.0f} B"


def fmt_x(value) -> str:
    return "–" if value is None else f"{value:.2f}×"


def cell(row: dict | None, key: str = "ms", fmt=fmt_ms) -> str:
    if row is None:
        return "–"
    if row.get("status") not in (None, "ok"):
        text = row["status"].upper() if row["status"] in ("oom", "timeout", "crash") else row["status"]
        phase = row.get("timed_out_in", "")  # run.py: in the first call (JIT, autotuning) or the timed ones
        return text + (" (first call)" if phase.startswith("the first call") else
                       " (timed calls)" if phase == "the timed calls" else "")
    return fmt(row.get(key))


def best(rows: list[dict], key: str = "ms") -> dict | None:
    ok = [r for r in rows if r.get("status") == "ok" and r.get(key) is not None]
    return min(ok, key=lambda r: r[key]) if ok else None
