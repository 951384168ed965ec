"""The benchmark suite's section of BENCHMARKS.md (bench/suite/report.py): the rows of every
`suite_*.jsonl` merged into one table per (device, operation).

Merging: one cell per (device, operation, d, n, implementation, precision), from the newest file
that ran the case (status other than 'not_run'); a sweep is split over several device calls and
lanes (run_lanes.sh), and a later run of a case replaces an earlier one. Rows measured before a
change that made them stale are listed in SUPERSEDED with the reason, shown in the report, and left
out of the tables; the JSON files are never edited.

Ratios: peer / ours, where ours is the Python package's row: the whole call on the same arrays in
device memory, timed as the peers are (END_TO_END). The CLI's rows time the solve loop alone (its
files and the device preparation of the points excluded), so they are neither end to end nor
kernels only: shown as their own column, never used for a ratio. Our C++ kernel rows (stamped by
run.py --stamp: kernels only, no preparation) are shown as their own columns and in the claims as
a second figure, never as the end-to-end one.

Runs: a merged table's cell is the newest run of its case, so a ratio there may pair rows of two runs
(marked §). The claims' end-to-end speedups (same_run_speedups) pair ours and flash-sinkhorn from one
file only, the newest that holds both, and show '–' with the reason where none does.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from report_tables import best, cell, fmt_bytes, table

OURS = "flashsinkhorn"
END_TO_END = "flashsinkhorn-py"  # our row that ratios and claims use
PEER = "flash-sinkhorn"
OPS = ("forward", "forward_gradient", "hvp", "converge")


def base_op(op: str | None) -> str | None:
    """'converge (ε = 1)' → 'converge': the operation of a row labelled with a non-protocol ε (report.py)."""
    return None if op is None else op.split(" (", 1)[0]

# (file name prefix, implementation, operation, the sizes n it covers (None: all), the precisions it
# covers (None: all), why the rows no longer describe the library)
SUPERSEDED = (
    ("suite_h200_2026-11-30_s10a_", "flashsinkhorn-cli", "forward", None, None,
     "f73d02b: every solve also ran the primal-terms pass (about three half-steps); dc2c7b8 made it on demand"),
    ("suite_h200_2026-11-30_s10a_", "flashsinkhorn-py", "forward", None, None,
     "f73d02b: every solve also ran the primal-terms pass; re-measured at d6397f0 (s10b)"),
    ("suite_h200_2026-11-30_s10a_", "flashsinkhorn-py", "forward_gradient", None, None,
     "f73d02b: every solve also ran the primal-terms pass; re-measured at d6397f0 (s10b)"),
    ("suite_cpu_2026-12-07_s49_hvp.jsonl", "flashsinkhorn-py", "hvp", None, None,
     "the diagonal preconditioner (~950 CG iterations at d = 64); re-measured with the sparse one (s49_hvp_sparse)"),
    ("suite_h100_2026-12-07_s53b.jsonl", "flashsinkhorn-py", "hvp", (1000,), None,
     "n = 1,000: 9a491d9 solved S_k in one CTA there, slower, reverted in b6779ce (the s53a rows stand)"),
    ("suite_h100_2026-12-07_s55b.jsonl", "flashsinkhorn-py", "hvp", (1000, 2000), ("tf32",),
     "tf32 at 1,000 and 2,000: e9b273d built its dense preconditioner's s in float64 (4 CG iterations instead of 1 at "
     "1,000), kept for fp64 and fp32 only since (the s55a tf32 rows stand)"),
)


def where(row: dict) -> str:
    """'gpu H200', 'gpu H100', 'cpu': the device a row ran on, with the card — cells of one card never
    replace another's, and each card gets tables of its own."""
    return f"{row['device']} {row['card']}" if row["device"] == "gpu" and row.get("card") else row["device"]


def is_kernel_row(row: dict) -> bool:
    """Our C++ benchmark rows: the kernels alone (variant 'C++ <kernel>')."""
    return str(row.get("variant", "")).startswith("C++")


def superseded_by(row: dict) -> str | None:
    for prefix, variant, op, ns, precisions, why in SUPERSEDED:
        if row["file"].startswith(prefix) and row["variant"] == variant and row["op"] == op and \
                (ns is None or row.get("n") in ns) and (precisions is None or row.get("precision") in precisions):
            return why
    return None


def merge(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(merged, superseded): the suite's operation rows, one per case (the newest run of it)."""
    suite = [r for r in rows if r["file"].startswith("suite") and base_op(r.get("op")) in OPS]
    stale = [r for r in suite if superseded_by(r)]
    chosen: dict[tuple, dict] = {}
    for r in sorted((r for r in suite if not superseded_by(r)), key=lambda r: str(r.get("date") or "")):
        key = (where(r), r["op"], r["d"], r["n"], r["variant"], r["precision"], bool(r.get("reach")))
        if r["status"] == "not_run" and key in chosen:
            continue  # a later sweep that did not reach the case leaves the earlier run in place
        if key in chosen and _timed_out_sooner(r, chosen[key]):
            continue  # it says less than the earlier success, which needed more time than it was given
        chosen[key] = r
    return list(chosen.values()), stale


def _timed_out_sooner(later: dict, earlier: dict) -> bool:
    """A later timeout under a shorter budget than the one an earlier run of the case succeeded in: no
    contradiction (session 49: flash-sinkhorn's 10⁶ × 3 forward, 324 s in a 540 s reach run, then a
    timeout in a 110 s one), so the success stays. Under an equal or longer budget the newest run wins."""
    budgets = (later.get("budget"), earlier.get("budget"))
    return (later["status"] == "timeout" and earlier["status"] == "ok" and None not in budgets
            and float(budgets[0]) < float(budgets[1]))


def ours_end_to_end(rows: list[dict]) -> dict | None:
    return best([r for r in rows if r["variant"] == END_TO_END])


def speedups(merged: list[dict], op: str, kernels: bool = False) -> dict:
    """{(n, d, precision): flash-sinkhorn's ms / ours} for `op`: ours end to end, or (kernels=True)
    our C++ kernel rows."""
    out = {}
    # Both sides on one card: a ratio across cards would measure the cards. The H200 goes last, so
    # its pair is the one kept where several cards have one.
    places = sorted({where(r) for r in merged if r["op"] == op}, key=lambda w: w == "gpu H200")
    for place in places:
        for key in {(r["n"], r["d"], r["precision"]) for r in merged if r["op"] == op and where(r) == place}:
            at = [r for r in merged if r["op"] == op and where(r) == place and (r["n"], r["d"], r["precision"]) == key]
            ours = best([r for r in at if r["impl"] == OURS and is_kernel_row(r)]) if kernels else ours_end_to_end(at)
            peer = best([r for r in at if r["impl"] == PEER])
            if ours and peer:
                out[key] = peer["ms"] / ours["ms"]
    return out


def same_run_speedups(rows: list[dict], op: str) -> dict:
    """{(n, d, precision): pair} for `op` on the GPU, ours end to end (END_TO_END) against flash-sinkhorn,
    both rows from the SAME run (one suite file): the newest file that holds an ok row of each. pair:
    {"ratio", "file", "ours_ms", "peer_ms", "card", "ours_calls", "peer_calls"} (the timed calls of each
    side, None if unknown); where each side was measured but never in one file, {"ratio": None, "why": ...}.
    Keys: the sizes where both sides have an ok row in some file (reach runs' first calls left out)."""
    measured = [r for r in rows if r["file"].startswith("suite") and r.get("op") == op and r.get("device") == "gpu"
                and r.get("status") == "ok" and r.get("ms") and not r.get("reach")]  # reach rows: first calls
    at_op = [r for r in measured if not superseded_by(r)]
    stale = {(r["n"], r["d"], r["precision"], r["file"]): superseded_by(r) for r in measured
             if superseded_by(r) and r["variant"] == END_TO_END}
    out = {}
    for key in sorted({(r["n"], r["d"], r["precision"]) for r in at_op}):
        at = [r for r in at_op if (r["n"], r["d"], r["precision"]) == key]
        ours_files = sorted({r["file"] for r in at if r["variant"] == END_TO_END})
        peer_files = sorted({r["file"] for r in at if r["impl"] == PEER})
        if not ours_files or not peer_files:
            continue
        pairs = []
        for file in set(ours_files) & set(peer_files):
            group = [r for r in at if r["file"] == file]
            ours, peer = ours_end_to_end(group), best([r for r in group if r["impl"] == PEER])
            pairs.append((str(ours.get("date") or ""), file, ours, peer))
        if pairs:
            _, file, ours, peer = max(pairs, key=lambda p: (p[0], p[1]))
            out[key] = {"ratio": peer["ms"] / ours["ms"], "file": file, "ours_ms": ours["ms"], "peer_ms": peer["ms"],
                        "card": ours.get("card"), "ours_calls": ours.get("timed_calls"),
                        "peer_calls": peer.get("timed_calls")}
        else:
            why = ("ours end to end in " + ", ".join(f"`{f}`" for f in ours_files) + "; flash-sinkhorn in "
                   + ", ".join(f"`{f}`" for f in peer_files))
            superseded = [(f, stale[(*key, f)]) for f in peer_files if (*key, f) in stale]
            if superseded:
                why += "; " + "; ".join(f"our row in `{f}` beside it is superseded ({reason})"
                                        for f, reason in superseded)
            out[key] = {"ratio": None, "why": why}
    return out


ERROR_RATIO_LIMIT = 10.0  # converge: times compare only between marginal errors within this factor, either way
NO_PLAN_ERROR = 1.0  # an L1 marginal error (row + column) this large: half the mass misplaced, no plan to compare


def _comparable_errors(peer: dict, ours: dict) -> bool:
    """Converge rows: times compare only between runs that reached about the same marginal error: the
    two errors within 10× of each other, either way (an error below the tolerance counts as the
    tolerance: both met it), and both under NO_PLAN_ERROR. A peer that stopped far short (GeomLoss's
    fixed ε-schedule) did less; a peer that went far further (POT lazy at d = 64) did more: neither time
    is comparable with ours. Near 1 the ratio says little (GeomLoss's 1.4 at d = 512 lies within 10× of
    our tf32 floor of 0.17), so an error that large is no plan at all."""
    mine, theirs = ours.get("marginal_error"), peer.get("marginal_error")
    if mine is None or theirs is None:
        return True
    if max(mine, theirs) >= NO_PLAN_ERROR:
        return False
    tol = ours.get("tol") or 0.0
    mine, theirs = max(mine, tol), max(theirs, tol)
    return max(mine, theirs) <= ERROR_RATIO_LIMIT * min(mine, theirs)


def evaluator_above_tol(row: dict | None) -> bool:
    """Our converge row whose solver reported converged (its own check) while the shared float64
    evaluator's marginal error of the returned potentials exceeds the tolerance."""
    return bool(row and row.get("status") == "ok" and row.get("converged") and row.get("tol")
                and row.get("marginal_error") is not None and row["marginal_error"] > row["tol"])


def hvp_tolerance(row: dict) -> float | None:
    """The CG tolerance our HVP row asked for, from its hvp_method ("CG to 2e-05 relative")."""
    found = re.search(r"CG to ([0-9.eE+-]+) relative", str(row.get("hvp_method", "")))
    return float(found.group(1)) if found else None


def cg_above_tol(row: dict | None) -> bool:
    """Our HVP row whose CG stopped with its recomputed residual above the tolerance it asked for
    (single-precision stalls, breakdowns): its time is that of an unfinished product."""
    tolerance = hvp_tolerance(row) if row else None
    return bool(row and row.get("status") == "ok" and tolerance is not None
                and row.get("cg_relative_residual") is not None and row["cg_relative_residual"] > tolerance)


def _column(sel: list[dict], variant: str, key: tuple) -> dict | None:
    return next((r for r in sel if r["variant"] == variant and (r["d"], r["n"], r["precision"]) == key), None)


def hvp_methods(sel: list[dict], variants: list[str]) -> list[str]:
    """What each HVP column computes, from its rows' `hvp_method`: the ratios compare one H·v only where
    both sides differentiate OT_ε implicitly (the potentials' linear system solved); a double backward
    through an unrolled last step is another, cheaper product."""
    out = ["What each column computes (its rows' `hvp_method`; the ratios compare one product only where both "
           "differentiate OT_ε implicitly, solving the potentials' linear system — a double backward through "
           "the loop's last step differentiates that step alone):", ""]
    for v in variants:
        methods = sorted({str(r["hvp_method"]) for r in sel if r["variant"] == v and r.get("hvp_method")})
        out.append(f"- {v}: {'; '.join(methods) or 'not recorded'}")
    return out + [""]


def _op_tables(sel: list[dict], op: str, device: str) -> list[str]:
    variants = sorted({r["variant"] for r in sel}, key=lambda v: (not v.startswith(("flashsinkhorn", "C++")), v))
    keys = sorted({(r["d"], r["n"], r["precision"]) for r in sel})
    iterations = sorted({r["forward_iterations"] for r in sel if r.get("forward_iterations")})
    out = [f"### {op} ({device})", "",
           "ms per call (median); OOM / TIMEOUT / error / skipped (stop rule) / unsupported / not_run as recorded; "
           "(ratio) = peer / ours, ours = the Python package's call (flashsinkhorn-py; the CLI column times "
           "its solve loop alone, the C++ columns the kernels alone)."
           + (" Converge: a ratio only where the peer's marginal error and ours are within 10× of each other, "
              "either way (an error below the tolerance counts as the tolerance), and both under "
              f"{NO_PLAN_ERROR:g} (half the mass misplaced); otherwise '–' with the two "
              "errors (the peer's, then ours)." if base_op(op) == "converge" else "")
           + (f" Forward iterations in these rows: {', '.join(map(str, iterations))}." if base_op(op) != "converge" and iterations
              else "")
           + (" HVP: no ratio where our CG stopped above its tolerance ('–: our CG residual …'; the last column "
              "names those rows: their time is that of an unfinished product); '(redone in float64)': on a plan "
              "close to a matching our single-precision product ran on float64 passes — after its CG fell short, "
              "the time including both attempts, or from the start where the plan foresaw the fall (rows from "
              "session 56 on; docs/math.md)." if base_op(op) == "hvp" else "")
           + " § after a ratio: ours and the peer come from different runs (files), each cell being the newest "
             "run of its case; the claims above pair rows of one run only.", ""]
    body = []
    for key in keys:
        at = [r for r in sel if (r["d"], r["n"], r["precision"]) == key]
        ours = ours_end_to_end(at)
        cells = []
        for v in variants:
            r = _column(sel, v, key)
            text = cell(r)
            if base_op(op) == "hvp" and r is not None and r.get("redone_in_float64"):
                text += " (redone in float64)"
            if r is not None and r["impl"] != OURS and ours and r.get("status") == "ok" and r.get("ms"):
                if base_op(op) == "converge" and not _comparable_errors(r, ours):
                    text += f" (–: error {r['marginal_error']:.1e} vs ours {ours['marginal_error']:.1e})"
                elif base_op(op) == "hvp" and cg_above_tol(ours):
                    text += f" (–: our CG residual {ours['cg_relative_residual']:.1e})"
                else:
                    text += f" ({r['ms'] / ours['ms']:.2f}×{'' if r['file'] == ours['file'] else '§'})"
            cells.append(text)
        row = [key[0], f"{key[1]:,}", key[2], *cells]
        if base_op(op) == "converge":
            flagged = [r for r in (_column(sel, v, key) for v in variants if v.startswith(OURS))
                       if evaluator_above_tol(r)]
            row.append("; ".join(f"{r['variant']}: own {r['own_marginal_error']:.1e}, evaluator "
                                 f"{r['marginal_error']:.1e} > tol {r['tol']:.0e}" for r in flagged) or "–")
        if base_op(op) == "hvp":
            flagged = [r for r in (_column(sel, v, key) for v in variants if v.startswith(OURS)) if cg_above_tol(r)]
            row.append("; ".join(f"{r['variant']}: {r['cg_relative_residual']:.1e} after {r.get('cg_iterations', '?')} "
                                 f"iterations > tol {hvp_tolerance(r):.0e}" for r in flagged) or "–")
        body.append(row)
    extra = {"converge": ["evaluator > tol (ours)"], "hvp": ["CG residual > tol (ours)"]}.get(base_op(op), [])
    out += table(["d", "n", "precision", *variants, *extra], body)
    if base_op(op) == "hvp":
        out += hvp_methods(sel, variants)
    if base_op(op) == "converge":
        out += ["evaluator > tol (ours): our solver's own check — the L1 marginal error of SPEC §1 that the "
                "solver itself computes every 10 iterations ('own') — was at or below the tolerance and it "
                "reported converged, but the shared float64 evaluator, which recomputes the marginal error of "
                "every implementation from its returned potentials ('evaluator'), measured more than the "
                "tolerance. The evaluator's figure is the one in the table of errors below and the one the ratio "
                "rule uses: by it, that row did not reach the tolerance.", ""]
    out += ["Peak memory: the framework's allocator or JAX's memory stats (inputs included), the backend's own "
            "buffers for the C++ rows; † nvidia-smi's memory.used minus its value before the process — the whole "
            "device, CUDA context (~0.5 GB) and torch's cache included, and for rows before the `SUITE_MEASURED` "
            "change the marginal-error evaluation's dense blocks too: not comparable with the allocator figures.", ""]

    def memory(row: dict | None) -> str:
        text = cell(row, "peak_bytes", fmt_bytes)
        return text + " †" if row and row.get("status") == "ok" and "nvidia-smi" in str(row.get("peak_source")) else text
    out += table(["d", "n", "precision", *variants],
                 [[k[0], f"{k[1]:,}", k[2], *[memory(_column(sel, v, k)) for v in variants]] for k in keys])
    if base_op(op) in ("forward", "converge"):
        error = lambda v: "–" if v is None else f"{v:.1e}"  # noqa: E731
        out += ["Marginal error reached (max of the L1 row and column errors, one float64 evaluator for all, "
                "from each implementation's potentials):", ""]
        out += table(["d", "n", "precision", *variants],
                     [[k[0], f"{k[1]:,}", k[2], *[cell(_column(sel, v, k), "marginal_error", error) for v in variants]]
                      for k in keys])
    return out


COVERAGE_STATUSES = (("ok", ("ok",)), ("failed", ("oom", "timeout", "error", "crash")), ("skipped", ("skipped",)),
                     ("unsupported", ("unsupported",)), ("not run", ("not_run",)))


def _coverage_table(merged: list[dict]) -> list[str]:
    """What of the grid the committed runs cover, GPU rows: per implementation and operation, for each
    d, how many sizes were measured (ok), failed (OOM, timeout, crash, error), skipped after a
    failure (the stop rule), unsupported, and not yet run — so that the next device calls can be
    aimed at the gaps."""
    gpu = [r for r in merged if r["device"] == "gpu" and not is_kernel_row(r)]
    if not gpu:
        return []
    ds = sorted({r["d"] for r in gpu})
    body = []
    for variant, op, place in sorted({(r["variant"], r["op"], where(r)) for r in gpu}):
        cells = []
        for d in ds:
            at = [r for r in gpu if (r["variant"], r["op"], where(r), r["d"]) == (variant, op, place, d)]
            counts = {label: sum(r["status"] in statuses for r in at) for label, statuses in COVERAGE_STATUSES}
            cells.append(", ".join(f"{c} {label}" for label, c in counts.items() if c or label == "ok") if at else "–")
        card = place.removeprefix("gpu ") if place != "gpu" else "–"  # '–': the row did not name its GPU
        body.append([variant, op, card, *cells])
    out = ["### Coverage of the grid (GPU; sizes per cell, '–': never attempted)", ""]
    return out + table(["implementation", "operation", "card", *[f"d = {d}" for d in ds]], body)


def suite_section(rows: list[dict]) -> tuple[list[str], list[dict], list[dict]]:
    """The section's lines, the merged rows (for the claims and the plots) and the merged rows with the
    reach runs' (for report_reach.py, whose section follows this one)."""
    with_reach, stale = merge(rows)
    merged = [r for r in with_reach if not r.get("reach")]  # reach runs time first calls: the reach table's
    out = ["## Benchmark suite (bench/suite: every peer on the same arrays)", ""]
    if not merged:
        return out + ["No suite results committed yet: run `bench/suite/run_device.sh` on the GPU machine "
                      "(tools/gpu_check.sh stage `suite`) and commit its `suite_*.jsonl` under bench/results/.", ""], [], []
    files = sorted({r["file"] for r in merged})
    out += ["Merged from " + ", ".join(f"`{f}`" for f in files) + " (each cell: the newest run of its case; the "
            "files' commits and commands are under Sources).", ""]
    # The H200 first (most rows), then any other card, then the CPU.
    places = sorted({where(r) for r in merged}, key=lambda w: (w.startswith("cpu"), w != "gpu H200", w))
    for device in places:
        for op in sorted({r["op"] for r in merged}, key=lambda o: (OPS.index(base_op(o)), o)):
            sel = [r for r in merged if r["op"] == op and where(r) == device]
            if sel:
                out += _op_tables(sel, op, device)
    out += _coverage_table(merged)
    if stale:
        out += ["### Superseded rows (left out above; still in their files)", ""]
        groups = sorted({(r["file"], r["variant"], r["op"], superseded_by(r)) for r in stale})
        out += table(["file", "implementation", "operation", "why"], [[f"`{f}`", v, o, w] for f, v, o, w in groups])
    return out, merged, with_reach


def keops_section(results: Path) -> list[str]:
    """Each KeOps configuration keops_doctor.py tried (files suite_*_keops.jsonl): GeomLoss's online
    backend runs only where one passed; otherwise its exact outcome is the result."""
    attempts = []
    for path in sorted(results.glob("suite_*_keops.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip().startswith("{"):
                attempts.append((path.name, json.loads(line)))
    if not attempts:
        return []
    out = ["### KeOps (GeomLoss online): the configurations tried on the GPU machine", "",
           "`bench/suite/keops_doctor.py`: pykeops.test_torch_bindings() and a LazyTensor log-sum-exp checked "
           "against torch, one process per configuration. A status other than ok is the exact outcome "
           "(exit status; the last line KeOps printed; where it stopped: the innermost Python frame of a "
           "crash, else stderr's tail; the native frames below it, innermost first, where cuda-gdb ran it).",
           ""]
    body = []
    for name, r in attempts:
        last = (r.get("stdout_tail") or "").strip().splitlines()[-1:] or ["–"]
        config = r.get("config", "?") + (" (diagnostic, never used by GeomLoss)" if r.get("diagnostic") else "")
        body.append([f"`{name}`", config, r.get("status", "?"), r.get("returncode", "–"),
                     f"`{last[0][:160]}`", stopped_at(r).replace("|", "/"), native_frames(r).replace("|", "/"),
                     nvrtc_copies(r)])
    return out + table(["file", "configuration", "status", "exit", "last line printed", "where it stopped",
                        "native frames (cuda-gdb)", "libnvrtc: mapped before KeOps / KeOps's binders link"], body)


def stopped_at(attempt: dict) -> str:
    """A doctor attempt's innermost Python frame when faulthandler printed the stack of a crash
    ('file:line in function'), else the last 300 characters of its stderr (or error)."""
    stderr = attempt.get("stderr_tail") or attempt.get("error") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', stderr)
    if frames and "most recent call first" in stderr:
        path, line, function = frames[0]
        return f"{Path(path).name}:{line} in {function}"
    return " ".join(stderr.split())[-300:] or "–"


def native_frames(attempt: dict) -> str:
    """The first native frames of cuda-gdb's backtrace of a crash ('function (library)', innermost
    first), or why there is none; '–' where the doctor did not trace the attempt."""
    trace = attempt.get("native_backtrace")
    if not trace:
        return "–"
    if "frames" not in trace:
        return f"cuda-gdb: {trace.get('error', '?')}"
    shown = []
    for frame in trace["frames"][:4]:
        # '#k  0xADDR in NAME(ARGS) [const] () from LIBRARY' or '... at FILE:LINE'; NAME may hold spaces
        match = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(.+?)(?: (?:from|at) (\S+))?$", frame)
        if match is None:
            shown.append(frame[:80])
            continue
        function, where = match.groups()
        function = function.split("(")[0].strip() or function
        shown.append(function + (f" ({Path(where.split(':')[0]).name})" if where else ""))
    return " ← ".join(shown)


def nvrtc_copies(attempt: dict) -> str:
    """The libnvrtc paths a doctor attempt saw: mapped by the process before KeOps compiled (its
    'mapped:' lines), and those KeOps's binders link to (ldd; 'none' where they link no libnvrtc) —
    '–' for what the attempt did not record (no 'mapped:' printed before a crash; rows from before
    the doctor recorded either)."""
    lines = (attempt.get("stdout_tail") or "").splitlines()
    mapped = sorted({line.strip() for line in lines if line.startswith("  ") and "nvrtc" in line})
    links = attempt.get("binder_links", [])
    linked = sorted({entry.split("=>")[-1].split("(")[0].strip() for entry in links
                     if "=>" in entry and "nvrtc" in entry.split("=>")[-1]})
    mapped_text = (", ".join(mapped) or "none") if "mapped:" in lines else "–"
    linked_text = (", ".join(linked) or "none") if links else "–"
    return "–" if mapped_text == linked_text == "–" else f"{mapped_text} / {linked_text}"
