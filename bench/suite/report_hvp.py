"""The Hessian-vector product section of BENCHMARKS.md (issue 5), from bench/hvp_bench.sh's JSON lines
(`bench/results/hvp_h200_*.jsonl`: header lines {"bench": "bench/hvp_bench.sh", commit, machine, date,
command, protocol}, then one line per run: ours from `flashsinkhorn hvp`, flash-sinkhorn's from
bench/hvp_peer.py). Nothing is measured here.

The claim checked is the issue's: an HVP at the same CG tolerance at least 5× faster than
flash-sinkhorn's forward (50 iterations) + HVP. Our rows time the HVP alone (the forward is timed by
the solve, which includes set-up), so the ratio printed is flash-sinkhorn's forward + HVP over our
HVP: it overstates our advantage by our forward's share, and it is reported as such.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from report_tables import table

HVP_GOAL = 5.0


def is_hvp_file(path: Path) -> bool:
    first = path.read_text().splitlines()[:1]
    return bool(first) and json.loads(first[0]).get("bench") == "bench/hvp_bench.sh"


def read_runs(path: Path) -> tuple[list[dict], list[dict]]:
    """(headers, rows) of one file; each row carries the header it follows (`run`)."""
    headers, rows = [], []
    for line in path.read_text().splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if record.get("bench") == "bench/hvp_bench.sh":
            headers.append(record)
        elif headers:
            rows.append({**record, "run": headers[-1]})
    return headers, rows


def is_peer(row: dict) -> bool:
    return row.get("impl") == "flash-sinkhorn"


def fmt_seconds_as_ms(seconds) -> str:
    if seconds is None:
        return "–"
    ms = 1000 * seconds
    return f"{ms:.3g}" if ms < 100 else f"{ms:,.0f}"


def our_row(r: dict) -> list[str]:
    ridge = r.get("cg_ridge", 0)
    return [f"{r['n']:,}", r["d"], r.get("precision", "?"), r.get("part", "full"),
            "exact" if ridge == 0 else f"{ridge:.3g}", r.get("cg_preconditioner", r.get("preconditioner", "diagonal")),
            f"{r['cg_tolerance']:.0e}" if r.get("part", "full") == "full" and "cg_tolerance" in r else "–",
            r.get("cg_iterations", "–"), f"{r.get('cg_relative_residual', 0):.1e}",
            "yes" if r.get("cg_converged") else "no", fmt_seconds_as_ms(r.get("hvp_seconds")), f"`{r['run']['commit']}`"]


def hvp_section(results: Path, sources: list[dict]) -> list[str]:
    files = sorted(p for p in results.glob("hvp*.jsonl") if is_hvp_file(p))
    out = ["## Hessian-vector products (issue 5: bench/hvp_bench.sh, same protocol as flash-sinkhorn's)", ""]
    if not files:
        return out + ["No HVP results.", ""]
    latest = files[-1]
    headers, rows = read_runs(latest)
    for path in files:
        h, r = read_runs(path)
        sources.append({"file": path.name, "kind": "hvp", "rows": len(r), "commit": ", ".join(x["commit"] for x in h),
                        "date": h[0]["date"] if h else "?", "machine": h[0]["machine"] if h else "?",
                        "command": "; ".join(x["command"] for x in h)})
    out += [f"`{latest.name}`. Protocol: {headers[0]['protocol']}.", ""]
    ours = [r for r in rows if not is_peer(r) and "error" not in r]
    ours.sort(key=lambda r: (r["n"], r.get("precision", ""), r.get("part", ""), r.get("cg_ridge", 0)))
    ours.sort(key=lambda r: (r["n"], r.get("precision", ""), r.get("part", ""), r.get("cg_ridge", 0),
                             -r.get("cg_tolerance", 0)))
    out += table(["n", "d", "precision", "part", "ridge", "preconditioner", "CG tol", "CG its", "CG residual",
                  "converged", "HVP ms", "commit"], [our_row(r) for r in ours])
    peers = [r for r in rows if is_peer(r)]
    if peers:
        out += ["flash-sinkhorn in the same run:", ""]
        out += table(["n", "d", "tf32", "forward (50 its) + HVP ms", "CG its", "CG residual reached", "first call s"],
                     [[f"{p['n']:,}", p["d"], p.get("allow_tf32"), f"{p['ms_forward_hvp']:.3g}" if "ms_forward_hvp" in p
                       else p.get("error", "–"), p.get("cg_iterations", "–"),
                       f"{p['cg_relative_residual']:.1e}" if "cg_relative_residual" in p else "–",
                       f"{p['ms_first_call'] / 1000:.0f}" if "ms_first_call" in p else "–"] for p in peers])
    out += claim_lines(ours, peers, forward_ms_per_iteration(results, headers[-1].get("machine", "")))
    out += agreement_lines(results, sources)
    errors = [r for r in rows if "error" in r]
    if errors:
        out += ["Runs that failed: " + "; ".join(f"{r.get('impl')} n={r.get('n')}: {r['error']}" for r in errors), ""]
    return out


def agreement_lines(results: Path, sources: list[dict]) -> list[str]:
    """The newest bench/hvp_agreement.py file: do the two libraries compute the same product?"""
    files = sorted(results.glob("hvp_agreement*.jsonl"))
    if not files:
        return []
    lines = [json.loads(line) for line in files[-1].read_text().splitlines() if line.startswith("{")]
    header, rows = lines[0], lines[1:]
    sources.append({"file": files[-1].name, "kind": "hvp agreement", "rows": len(rows), "commit": header["commit"],
                    "date": header["date"], "machine": header["machine"], "command": header["command"]})
    out = [f"Do the two products agree? (`{files[-1].name}`, bench/hvp_agreement.py: the same data, fp32, our CG to "
           "1e-6; at 50 iterations the potentials are far from converged and each library builds its plan from them "
           f"its own way — ours f̃ = T_f(g); with many iterations both are HVPs of the converged problem. {header.get('note', '')})", ""]
    return out + table(["n", "d", "Sinkhorn its", "our marginal error", "our ‖H·A‖", "their ‖H·A‖", "‖ours − theirs‖/‖theirs‖"],
                       [[f"{r['n']:,}", r["d"], r["sinkhorn_iterations"], f"{r['our_marginal_error']:.1e}",
                         f"{r['our_norm']:.4g}", f"{r['their_norm']:.4g}", f"{r['relative_difference']:.3g}"] for r in rows])


def card_of(machine: str) -> str | None:
    """The GPU model a result file's machine names (H100, H200), None where it names none."""
    found = re.search(r"H\d00", machine or "")
    return found.group(0) if found else None


def forward_ms_per_iteration(results: Path, machine: str = "") -> dict:
    """(n, d, precision) → (ms per forward iteration, file) of our rows in the newest GPU forward
    benchmark file (bench/run_gpu_bench.sh's gpu_forward_*.json) that has them, from the card
    `machine` names: files of another card are left out, files that name none serve where no file of
    that card has the row."""
    wanted = card_of(machine)
    same, unnamed = {}, {}
    for path in sorted(results.glob("gpu_forward_*.json")):
        try:
            data = json.loads(path.read_text())
            rows = data.get("rows", [])
        except (json.JSONDecodeError, AttributeError):
            continue
        card = card_of(data.get("machine", ""))
        if wanted and card and card != wanted:
            continue
        found = unnamed if wanted and not card else same
        for r in rows:
            if r.get("impl") == "flashsinkhorn" and "ms_per_iteration" in r:
                key = (r["n"], r["d"], r["precision"])
                if key not in found or found[key][1] != path.name:  # newer files win; the first kernel row of a file
                    found[key] = (r["ms_per_iteration"], path.name)
    return {**unnamed, **same}


def claim_summary(results: Path) -> list[str]:
    """The HVP claim for BENCHMARKS.md's "Claims checked": the newest run of the newest HVP file that
    has flash-sinkhorn, at the tolerance its CG reached (our rows at the largest CG tolerance not
    above that residual), our best precision per size; details in the HVP section."""
    title = f"**HVP ≥ {HVP_GOAL:g}× flash-sinkhorn at the same CG tolerance** (flash-sinkhorn's forward + HVP over our HVP"
    files = sorted(p for p in results.glob("hvp*.jsonl") if is_hvp_file(p))
    runs = [] if not files else read_runs(files[-1])[1]
    peers = [r for r in runs if is_peer(r) and "ms_forward_hvp" in r]
    if not peers:
        return [title + "):", "", "Not measured yet.", ""]
    peer = peers[-1]
    reached = peer.get("cg_relative_residual", 0)
    ours = [r for r in runs if not is_peer(r) and r["run"] is peer["run"] and r["n"] == peer["n"] and r["d"] == peer["d"]
            and r.get("part") == "full" and r.get("cg_ridge", 0) > 0 and "hvp_seconds" in r
            and r.get("cg_tolerance", 1) <= max(reached, 2e-5)]
    if not ours:
        return [title + "):", "", "No run of ours at that tolerance.", ""]
    best_row = min(ours, key=lambda r: r["hvp_seconds"])
    ratio = peer["ms_forward_hvp"] / (1000 * best_row["hvp_seconds"])
    verdict = "met" if ratio >= HVP_GOAL else f"short by {HVP_GOAL / ratio:.2f}×"
    forward = forward_ms_per_iteration(results, peer["run"].get("machine", "")).get(
        (best_row["n"], best_row["d"], best_row["precision"]))
    like = ""
    if "ms_hvp_only" in peer:
        alone = peer["ms_hvp_only"] / (1000 * best_row["hvp_seconds"])
        like += (f"; against its HVP alone ({peer['ms_hvp_only']:.3g} ms, its forward timed apart) {alone:.2f}×, "
                 + ("met" if alone >= HVP_GOAL else f"short by {HVP_GOAL / alone:.2f}×"))
    if forward is not None:
        total = 50 * forward[0] + 1000 * best_row["hvp_seconds"]
        like += f"; with our forward of 50 iterations added, {peer['ms_forward_hvp'] / total:.2f}×"
    return [title + f" alone, the same run, commit `{best_row['run']['commit']}`; the HVP section has the rest):", "",
            f"{best_row['n']:,} × {best_row['d']}, {best_row['precision']}, "
            f"{best_row.get('cg_preconditioner', 'diagonal')} preconditioner, CG tolerance {best_row['cg_tolerance']:.0e} "
            f"(flash-sinkhorn reached {reached:.1e}): ours {fmt_seconds_as_ms(best_row['hvp_seconds'])} ms, theirs "
            f"{peer['ms_forward_hvp']:.3g} ms: **{ratio:.2f}×**, {verdict}{like}.", ""]


def claim_lines(ours: list[dict], peers: list[dict], forward: dict) -> list[str]:
    out = [f"**HVP ≥ {HVP_GOAL:g}× flash-sinkhorn at the same CG tolerance** (flash-sinkhorn's forward + HVP over "
           "our HVP alone, in the same run, on its damped system: our ridge = its ε·tau2·n; our CG tolerance 2e-5 "
           "is the residual its CG reached, 1e-4 is looser). Our HVP alone leaves out our forward, which theirs "
           "includes; the last column adds our forward of 50 iterations (ms per iteration from our newest GPU "
           "forward benchmark file, named below) for the like-for-like ratio; where flash-sinkhorn's forward was "
           "also timed alone (bench/hvp_peer.py's ms_forward), the column before compares the two HVPs alone:", ""]
    body = []
    for p in peers:
        if "ms_forward_hvp" not in p:
            continue
        precision = "tf32" if p.get("allow_tf32") in (True, "tf32", "True") else "fp32"
        for r in ours:
            same_run = r["run"] is p["run"]
            if same_run and r["n"] == p["n"] and r["d"] == p["d"] and r.get("part") == "full" and r.get("cg_ridge", 0) > 0:
                ratio = p["ms_forward_hvp"] / (1000 * r["hvp_seconds"])
                verdict = "met" if ratio >= HVP_GOAL else f"short by {HVP_GOAL / ratio:.1f}×"
                ours_forward = forward.get((r["n"], r["d"], r["precision"]))
                like_for_like = "–"
                if ours_forward is not None:
                    total_ms = 50 * ours_forward[0] + 1000 * r["hvp_seconds"]
                    like_for_like = f"{p['ms_forward_hvp'] / total_ms:.2f}× ({total_ms:.3g} ms, {ours_forward[1]})"
                hvp_only = (f"{p['ms_hvp_only'] / (1000 * r['hvp_seconds']):.2f}× ({p['ms_hvp_only']:.3g} ms)"
                            if "ms_hvp_only" in p else "–")
                body.append([f"{r['n']:,}", r["d"], f"{r['precision']} vs {precision}",
                             r.get("cg_preconditioner", "diagonal"), f"{r.get('cg_tolerance', 0):.0e}",
                             fmt_seconds_as_ms(r["hvp_seconds"]), f"{p['ms_forward_hvp']:.3g}", f"{ratio:.2f}×", verdict,
                             hvp_only, like_for_like])
    if not body:
        return out + ["No run with both.", ""]
    return out + table(["n", "d", "ours vs theirs", "our preconditioner", "our CG tol", "our HVP ms", "their fwd+HVP ms",
                        "ratio", "verdict", "vs their HVP alone (fwd+HVP − fwd)", "our fwd (50 its) + HVP: ratio"], body)


def hvp_plot(results: Path, plot_dir: Path) -> str | None:
    """hvp_time_vs_n.png: our HVP time against n for each precision and system (the latest file's
    full products), flash-sinkhorn's forward + HVP as points; None without matplotlib or results."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    files = sorted(p for p in results.glob("hvp*.jsonl") if is_hvp_file(p))
    if not files:
        return None
    _, rows = read_runs(files[-1])
    series: dict[str, dict[int, float]] = {}
    for r in rows:
        if is_peer(r) or "error" in r or r.get("part") != "full" or not r.get("cg_converged"):
            continue
        if r.get("cg_preconditioner", r.get("preconditioner", "diagonal")) != "diagonal":
            continue  # the default preconditioner only
        name = f"ours {r['precision']}, " + ("exact system" if r.get("cg_ridge", 0) == 0 else "flash-sinkhorn's ridge")
        # a size measured by several runs of the file: the last run's (the newest code)
        series.setdefault(name, {})[r["n"]] = 1000 * r["hvp_seconds"]
    if not series:
        return None
    plot_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for name, points in sorted(series.items()):
        ns = sorted(points)
        ax.plot(ns, [points[n] for n in ns], marker="o", label=name)
    peers = [p for p in rows if is_peer(p) and "ms_forward_hvp" in p]
    if peers:
        ax.scatter([p["n"] for p in peers], [p["ms_forward_hvp"] for p in peers], marker="x", color="k",
                   label="flash-sinkhorn forward (50 its) + HVP", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n = m (d = 64)")
    ax.set_ylabel("ms per HVP (CG tol 1e-4, converged runs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    ax.set_title(f"Hessian-vector product — {files[-1].name}", fontsize=8)
    fig.tight_layout()
    path = plot_dir / "hvp_time_vs_n.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)

