"""The narrow softmin's row references in BENCHMARKS.md, from bench/narrow_reference_ab.sh's files
(`bench/results/narrow_reference_ab_*.json`, benchmark "narrow_reference_ab": the forward benchmark once
per FLASHSINKHORN_NARROW_REFERENCE choice on the same sizes and seeds, each row carrying its
`narrow_reference` and the `kernel` it ran). These are the figures behind softmin_launch.cu's
predicted_reference_pays (fp32) and tf32_runs_narrow (tf32, where `online` is the wgmma kernel).
Nothing is measured here.

Per size the table gives each choice's ms an iteration and kernel, and whether `auto` (the library's
default) ran the fastest of the choices measured: within AUTO_SLACK of it counts as the fastest, as two
runs of one kernel differ by that much.
"""

from __future__ import annotations

import json
from pathlib import Path

from report_tables import table

KIND = "narrow_reference_ab"
AUTO_SLACK = 0.02
CHOICES = ("online", "predicted", "auto")


def is_narrow_reference(data) -> bool:
    return isinstance(data, dict) and data.get("benchmark") == KIND


def choice_label(row: dict, margins: set) -> str:
    """The row's FLASHSINKHORN_NARROW_REFERENCE choice, with its FLASHSINKHORN_NARROW_MARGIN where its
    file measured several margins (`margins`: the file's values) and this one is not 0, and
    " exp2=split" where a quarter of its exponentials ran on the FMA pipe (FLASHSINKHORN_EXP2), and
    " kernel=<v>" where a wgmma variant was forced for every precision (FLASHSINKHORN_KERNEL)."""
    margin = row.get("narrow_margin") or 0
    return (str(row.get("narrow_reference")) + (f" M={margin:g}" if margin and len(margins) > 1 else "")
            + (" exp2=split" if row.get("exp2") == "split" else "")
            + (f" kernel={row['forced_kernel']}" if row.get("forced_kernel") else ""))


def margins_of(rows: list[dict]) -> set:
    return {r.get("narrow_margin") or 0 for r in rows}


def _verdict(cells: dict) -> str:
    """Whether auto ran the fastest choice measured at this size (the others' best beside it)."""
    auto = cells.get("auto")
    others = [r["ms_per_iteration"] for c, r in cells.items() if c != "auto"]
    if auto is None or not others:
        return "–"
    best = min(others)
    ratio = auto["ms_per_iteration"] / best
    return "fastest" if ratio <= 1 + AUTO_SLACK else f"{ratio:.2f}× the fastest"


def narrow_reference_section(results: Path, sources: list[dict]) -> list[str]:
    """The section's lines for the files of this kind among `sources` (report.load), in name order."""
    files = [(s["file"], json.loads((results / s["file"]).read_text())) for s in sources if s["kind"] == KIND]
    if not files:
        return []
    out = ["## The softmin's row references (bench/narrow_reference_ab.sh)", "",
           "ms an iteration (authors' protocol, 10 alternating iterations, CUDA-event medians) under each "
           "`FLASHSINKHORN_NARROW_REFERENCE` choice, with the kernel it ran; `auto` is the default, and the last "
           f"column says whether it ran the fastest choice measured (within {AUTO_SLACK:.0%}). In tf32, `online` "
           "is the wgmma kernel and `auto` the narrow one where it predicts (softmin_launch.cu, tf32_runs_narrow); "
           "from session 35 (files `wgmma_reference_ab_*`) the warp-specialised wgmma kernel predicts too, so in "
           "tf32 `predicted` is that kernel with predicted references (bf16 runs the copy-engine wgmma kernel, "
           "which keeps the online maximum). Columns marked `exp2=split` ran with `FLASHSINKHORN_EXP2=split`: "
           "a quarter of the warp-specialised wgmma kernel's predicted exponentials by a cubic on the FMA pipe "
           "(math/exp2_cubic.hpp); `kernel=ws` columns forced that kernel for every precision (bf16's default is "
           "the two-CTA one). "
           "Each file shows `auto` as it was at that file's commit: a row where it lost is what a later rule "
           "was changed for (the code's comments cite the file).",
           ""]
    for name, data in sorted(files):
        rows = data.get("rows", [])
        devices = sorted({str(r.get("device", "?")) for r in rows})
        out += [f"`{name}` ({', '.join(devices)}; commit `{str(data.get('commit', '?'))[:12]}`, "
                f"{data.get('date', '?')}):", ""]
        margins = margins_of(rows)
        labels = {choice_label(r, margins) for r in rows}
        measured = [c for c in CHOICES if c in labels] + sorted(labels - set(CHOICES))
        cases = sorted({(r["precision"], r["d"], r["n"]) for r in rows})
        body = []
        for precision, d, n in cases:
            cells = {choice_label(r, margins): r for r in rows if (r["precision"], r["d"], r["n"]) == (precision, d, n)}
            body.append([precision, d, f"{n:,}",
                         *[f"{cells[c]['ms_per_iteration']:.4g} ({cells[c].get('kernel', '?')})" if c in cells else "–"
                           for c in measured],
                         _verdict(cells)])
        out += table(["precision", "d", "n", *measured, "auto ran"], body)
    return out
