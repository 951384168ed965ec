"""The claim 'linear memory up to n = 10⁶ while dense peers run out' (bench/suite/report.py): our peak
device memory per size, one line per (operation, d, entry point, card, precision, how it was measured),
and the dense peers' out-of-memory failures."""

from __future__ import annotations

from report_suite import OURS, where
from report_tables import fmt_bytes, table

DENSE_PEERS = ("geomloss-tensorized", "ott-dense", "pot-dense-log")


def _line_key(r: dict) -> tuple:
    card = where(r).removeprefix("gpu ").strip() or "–"
    return r["op"], r["d"], r["variant"], card, r["precision"], r.get("peak_source") or "–"


def memory_claim(suite_rows: list[dict]) -> list[str]:
    """Our GPU rows with a peak (the C++ rows: the backend's own buffers; the others: see 'measured by'),
    one column per n; the last column is the peak at the line's largest n over the two clouds' bytes
    (2·n·d·4 B), which stays flat where the memory is linear in n."""
    mem = [r for r in suite_rows if r["impl"] == OURS and r["status"] == "ok" and r.get("peak_bytes")
           and r["device"] == "gpu"]
    out = ["**Linear memory up to n = 10⁶ while dense peers run out:**", ""]
    if not mem:
        return out + ["Not measured yet: no committed suite rows with our peak device memory (the gpu_forward rows "
                      "give the backend's own buffers only: see the forward table's 'ours device bytes').", ""]
    ns = sorted({r["n"] for r in mem})
    lines: dict[tuple, dict[int, dict]] = {}
    for r in mem:
        lines.setdefault(_line_key(r), {})[r["n"]] = r  # suite_rows are merged: one row per case
    body = []
    for key, by_n in sorted(lines.items()):
        largest = by_n[max(by_n)]
        ratio = largest["peak_bytes"] / (largest["n"] * largest["d"] * 4 * 2)
        body.append([*key[:5], *[fmt_bytes(by_n[n]["peak_bytes"]) if n in by_n else "–" for n in ns],
                     f"{ratio:.1f} (n = {largest['n']:,})", key[5]])
    out += table(["operation", "d", "ours", "card", "precision", *[f"n = {n:,}" for n in ns],
                  "peak / (2·n·d·4 B)", "measured by"], body)
    dense = [r for r in suite_rows if r["variant"] in DENSE_PEERS and r["status"] == "oom"]
    out += [("Dense peers out of memory: " + ", ".join(sorted({f"{r['variant']} at n = {r['n']:,} (d = {r['d']})"
                                                                 for r in dense}))) if dense
            else "No dense peer ran out of memory in the committed suite rows.", ""]
    return out
