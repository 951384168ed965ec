"""Markdown table helpers shared by the report's sections (bench/suite/report.py, report_hvp.py)."""

from __future__ import annotations


def table(header: list[str], body: list[list]) -> list[str]:
    """A GitHub table, then a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return lines + [""]
