#!/usr/bin/env python3
"""Writes BENCHMARKS.md and the PNG plots under bench/plots/ from the committed results JSON.

    python3 bench/suite/report.py            # regenerates both from bench/results/
    python3 bench/suite/report.py --results DIR --markdown OUT.md --plots DIR

Reads: the suite's JSON lines (bench/suite/run.py and run_device.sh: `suite_*.jsonl`, C++ rows
stamped by run.py --stamp included) and the earlier formats, converted: gpu_forward_*.json
(bench/run_gpu_bench.sh), plan_pass_*.json (bench/merge_gradient_results.py) and cpu_forward_*.json
(bench/cpu_forward_bench.py); the HVP runs of bench/hvp_bench.sh (hvp_*.jsonl) go to report_hvp.py's
section. Other files are listed as not converted. Nothing is measured here.
Plots need matplotlib; without it the markdown is still written and says so.

Sections by module: the claims here (speed) with report_memory.py (linear memory) and report_reach.py
(the largest n within 10 minutes, also the suite's 'Largest n reached'); report_suite.py the suite's
tables; report_hvp.py the HVP; report_narrow.py the softmin's row references; report_tables.py the
table and number helpers.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sections, also when loaded by path (tests)
from report_hvp import claim_summary, hvp_plot, hvp_section, is_hvp_file  # noqa: E402
from report_memory import memory_claim  # noqa: E402
from report_narrow import is_narrow_reference, narrow_reference_section  # noqa: E402
from report_reach import reach_section, ten_minute_claim  # noqa: E402
from report_suite import keops_section, same_run_speedups, speedups, suite_section  # noqa: E402
from report_tables import best, cell, fmt_bytes, fmt_ms, fmt_x, table  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OURS = "flashsinkhorn"
PEER = "flash-sinkhorn"
FORWARD_GOAL, FORWARD_GRADIENT_GOAL = 2.0, 2.5


# ----------------------------------------------------------------------------- reading
def read_json_lines(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    return rows


def load(results: Path) -> tuple[list[dict], list[dict], list[str]]:
    """(rows, sources, not_converted): rows in one normalised form; sources: one entry per file (the
    narrow-reference A/B files too, whose rows report_narrow.py tabulates apart)."""
    rows, sources, skipped = [], [], []
    for path in sorted(results.glob("*.json*")):
        name = path.name
        try:
            if name.endswith(".jsonl"):
                if is_hvp_file(path) or name.startswith("hvp_agreement") or name.endswith("_keops.jsonl"):
                    continue  # report_hvp.py's section, report_suite.keops_section
                data = read_json_lines(path)
                machine = data[0].get("machine") if data else None
                options = machine.get("flashsinkhorn_env") if isinstance(machine, dict) else None
                if options:  # run.py records FLASHSINKHORN_* choices (protocol.machine): not the defaults
                    skipped.append(f"{name} (run with kernel options {options}: an A/B run, not the defaults)")
                    continue
                if data and "suite" in data[0]:
                    converted = [suite_row(r, name) for r in data]
                    sources.append(source(name, data[0], kind="suite", rows=len(converted)))
                else:
                    skipped.append(name)
                    continue
            else:
                data = json.loads(path.read_text())
                kind = data.get("benchmark") if isinstance(data, dict) else None
                if kind == "gpu_forward":
                    converted = [gpu_forward_row(r, data, name) for r in data["rows"]]
                elif kind in ("plan_pass", "plan_pass_and_gradient"):
                    converted = [plan_row(r, data, name) for r in data["rows"]]
                elif kind == "cpu_forward":
                    converted = [cpu_forward_row(r, data, name) for r in data["results"]]
                elif is_narrow_reference(data):
                    sources.append(source(name, data, kind=kind, rows=len(data["rows"])))
                    continue
                else:
                    skipped.append(name)
                    continue
                sources.append(source(name, data, kind=kind, rows=len(converted)))
        except (ValueError, KeyError, TypeError) as error:
            skipped.append(f"{name} (unreadable: {type(error).__name__}: {error})")
            continue
        rows.extend(converted)
    return rows, sources, skipped


def source(name: str, meta: dict, kind: str, rows: int) -> dict:
    machine = meta.get("machine")
    if isinstance(machine, dict):
        cpu = None
        if machine.get("cpu_family_model"):  # CPU rows since 2026-12-06 (protocol.machine)
            cpu = (f"{machine.get('host', '?')} ({machine.get('cpu_model', 'CPU')}, family/model "
                   f"{machine['cpu_family_model']}, {machine.get('cpu_simd', '?')})")
        machine = machine.get("gpu") or machine.get("model_name") or cpu or machine.get("host") or machine.get("platform")
    machine = "; ".join(line.strip() for line in str(machine or "?").splitlines() if line.strip())  # one per GPU
    return {"file": name, "kind": kind, "commit": str(meta.get("commit", "?"))[:60], "date": str(meta.get("date", "?")),
            "machine": machine, "rows": rows,
            "command": meta.get("command") or {
                "gpu_forward": "tools/gpu_check.sh, stage bench (bench/run_gpu_bench.sh); command not recorded in the file",
                "plan_pass": "STAGES='build gpu plan' tools/gpu_check.sh",
                "plan_pass_and_gradient": "tools/gpu_check.sh, stage plan (bench/merge_gradient_results.py)",
                "cpu_forward": "python3 bench/cpu_forward_bench.py",
                "narrow_reference_ab": "tools/gpu_check.sh, stage reference (bench/narrow_reference_ab.sh)",
            }.get(kind, "not recorded in the file")}


def base(file: str, meta: dict) -> dict:
    return {"file": file, "commit": meta.get("commit"), "date": meta.get("date")}


PROTOCOL_EPS = 0.1  # bench/suite/protocol.py's EPS (the authors' protocol)


def op_label(r: dict) -> str:
    """A suite row's operation, with its ε when it is not the protocol's (run.py --eps): rows at another
    ε get tables of their own instead of replacing the protocol's."""
    eps = r.get("eps", PROTOCOL_EPS)
    return r["op"] if eps is None or math.isclose(eps, PROTOCOL_EPS) else f"{r['op']} (ε = {eps:g})"


def run_budget(r: dict) -> float | None:
    """The per-case budget in seconds the run used (run.py --budget, read from its recorded command)."""
    match = re.search(r"--budget[ =]([0-9.]+)", str(r.get("command") or ""))
    return float(match.group(1)) if match else None


def gpu_card(meta: dict) -> str | None:
    """'H100', 'H200', … from a row's recorded machine (its GPU's name); None off the GPU or unrecorded.
    The device lends either card: suite cells and ratios are kept apart per card (report_suite.where)."""
    machine = meta.get("machine")
    name = machine.get("gpu") if isinstance(machine, dict) else machine
    match = re.search(r"\b([A-Z]\d{2,4})\b", str(name or ""))
    return match.group(1) if match else None


def suite_row(r: dict, file: str) -> dict:
    out = base(file, r)
    out["card"] = gpu_card(r)
    if "op" not in r:  # a C++ row stamped by run.py --stamp
        out.update(impl=OURS, variant=f"C++ {r.get('kernel') or r.get('bench', 'bench')}", n=r["n"], d=r["d"],
                   precision=r["precision"], device="gpu", status="ok" if r.get("finite", True) else "not finite")
        if "forward_gradient_ms" in r:
            out.update(op="forward_gradient", ms=r["forward_gradient_ms"])
        elif "ms_per_iteration" in r:
            iters = r.get("iterations", 10)
            out.update(op="forward", ms=r["ms_per_iteration"] * iters, ms_per_iteration=r["ms_per_iteration"],
                       roofline_floor_ms=r.get("roofline_floor_ms"), roofline_fraction=r.get("roofline_fraction"),
                       peak_bytes=r.get("device_bytes"), peak_source="device bytes held by the backend")
        else:
            out.update(op="plan_pass")
        return out
    impl = r["impl"]
    out.update(impl=OURS if impl.startswith("flashsinkhorn") else impl, variant=impl, op=op_label(r), n=r["n"], d=r["d"],
               precision=r["precision"], device="gpu" if r.get("device", "cuda").startswith("cuda") else "cpu",
               status=r["status"], ms=r.get("ms"), ms_per_iteration=r.get("ms_per_iteration"),
               marginal_error=r.get("marginal_error"), reached_tol=r.get("reached_tol"),
               iterations=r.get("iterations"), error=r.get("error") or r.get("reason"), budget=run_budget(r),
               forward_iterations=r.get("iters"), tol=r.get("tol"), converged=r.get("converged"),
               own_marginal_error=r.get("own_marginal_error"), reach=bool(r.get("reach")),
               timed_calls=len(r["ms_all"]) if r.get("ms_all") else r.get("repeats"),
               hvp_method=r.get("hvp_method"), cg_iterations=r.get("cg_iterations"),
               cg_relative_residual=r.get("cg_relative_residual"), redone_in_float64=r.get("redone_in_float64"))
    peak = r.get("peak_device_bytes") if out["device"] == "gpu" else r.get("peak_host_rss_bytes")
    source_name = r.get("peak_device_bytes_source") if out["device"] == "gpu" else r.get("peak_host_rss_source")
    if (impl == "flashsinkhorn-py" and out["device"] == "gpu" and "torch.cuda" in str(source_name)
            and "flashsinkhorn.max_memory_allocated" not in str(source_name)):
        peak = None  # torch's allocator alone does not see our library's own buffers (rows before the pool counters)
    if peak is None and r.get("peak_device_bytes_smi") is not None:
        peak, source_name = r["peak_device_bytes_smi"], "nvidia-smi memory.used, peak minus before"
        if r.get("peak_device_bytes_smi_scope") != "the timed calls (evaluation excluded)":
            source_name += " (the whole case: the marginal-error evaluation's dense blocks included)"
    out.update(peak_bytes=peak, peak_source=source_name)
    return out


def gpu_forward_row(r: dict, meta: dict, file: str) -> dict:
    out = base(file, meta)
    ours = r["impl"] == OURS
    iters = r.get("iterations", 10)
    out.update(impl=r["impl"], variant=(f"C++ {r.get('kernel', '?')}" if ours else r["impl"]), op="forward",
               n=r["n"], d=r["d"], precision=r["precision"], device="gpu",
               status="error" if r.get("error") else "ok", error=r.get("error"),
               ms_per_iteration=r.get("ms_per_iteration"),
               ms=None if r.get("ms_per_iteration") is None else r["ms_per_iteration"] * iters,
               roofline_floor_ms=r.get("roofline_floor_ms"), roofline_fraction=r.get("roofline_fraction"),
               peak_bytes=r.get("device_bytes") if ours else r.get("peak_bytes"),
               peak_source="device bytes held by the backend" if ours else "torch.cuda.max_memory_allocated")
    return out


def plan_row(r: dict, meta: dict, file: str) -> dict:
    out = base(file, meta)
    if r["impl"] == OURS and r.get("forward_gradient_ms") is not None:
        out.update(op="forward_gradient", ms=r["forward_gradient_ms"])
    elif r["impl"] == PEER and r.get("ms_forward_gradient") is not None:
        out.update(op="forward_gradient", ms=r["ms_forward_gradient"], peak_bytes=r.get("peak_bytes"),
                   peak_source="torch.cuda.max_memory_allocated")
    else:
        out.update(op="plan_pass")
    out.update(impl=r["impl"], variant="C++ plan bench" if r["impl"] == OURS else r["impl"], n=r["n"], d=r["d"],
               precision=r["precision"], device="gpu", status="error" if r.get("error") else "ok",
               half_step_ms=r.get("half_step_ms"), plan_ms=r.get("plan_ms"), gradient_ms=r.get("gradient_ms"),
               k=r.get("k"), card=gpu_card({"machine": r.get("device")}) or gpu_card(meta),
               pairing=plan_pairing_of(r.get("plan_cluster_pairs")))
    return out


# The plan pass's pairing by precision when FLASHSINKHORN_PLAN_CLUSTER_PAIRS is unset
# (src/cuda/kernel_variant.hpp, default_plan_pairing; since session 44).
DEFAULT_PLAN_PAIRING = {"tf32": "split", "bf16": "multicast"}


def plan_pairing_of(value) -> str | None:
    """The plan bench's plan_cluster_pairs field as a pairing name: before session 44 a bool (on meant
    multicast), since then the name; None where the bench did not say."""
    if isinstance(value, bool):
        return "multicast" if value else "off"
    return value if isinstance(value, str) else None


def cpu_forward_row(r: dict, meta: dict, file: str) -> dict:
    out = base(file, meta)
    names = {"flashsinkhorn": OURS, "pot": "pot-dense-log", "geomloss": "geomloss-tensorized"}
    out.update(impl=names.get(r["name"], r["name"]), variant=r["name"], op="forward", n=r["n"], d=r["d"],
               precision=r["precision"], device="cpu", status="error" if "error" in r else "ok",
               error=r.get("error"), ms=None if "seconds" not in r else 1e3 * r["seconds"], iterations=r.get("iters"),
               ms_per_iteration=None if "seconds" not in r else 1e3 * r["seconds"] / r["iters"],
               peak_bytes=None if "peak_rss_mb" not in r else r["peak_rss_mb"] * 2 ** 20,
               peak_source="peak RSS of the process", marginal_error=r.get("marginal_error"))
    return out


# ----------------------------------------------------------------------------- helpers
def latest(rows: list[dict], sources: list[dict], kind: str) -> tuple[str | None, list[dict]]:
    files = sorted((s for s in sources if s["kind"] == kind), key=lambda s: s["date"])
    if not files:
        return None, []
    name = files[-1]["file"]
    return name, [r for r in rows if r["file"] == name]


# ----------------------------------------------------------------------------- sections
def gpu_forward_section(rows, sources) -> tuple[list[str], list[dict]]:
    name, chosen = latest(rows, sources, "gpu_forward")
    out = ["## GPU forward, fixed iterations (C++ benchmark + flash-sinkhorn, same session)", ""]
    if not name:
        return out + ["No gpu_forward results.", ""], []
    out += [f"Latest session: `{name}`. ms per iteration (10 alternating iterations, ε = 0.1, CUDA-event "
            "medians); speedup = flash-sinkhorn's tf32 (or same-precision) time over ours; floor = the roofline "
            "floor max(4n²d / tensor peak, 2n² / ex2 rate) of SPEC §6.", ""]
    peers = {(r["n"], r["d"], r["precision"]): r for r in chosen if r["impl"] == PEER and r["status"] == "ok"}
    body, claims = [], []
    for r in sorted((r for r in chosen if r["impl"] == OURS), key=lambda r: (r["d"], r["n"], r["precision"], r["variant"])):
        peer = peers.get((r["n"], r["d"], r["precision"])) or peers.get((r["n"], r["d"], "tf32"))
        speedup = None if not peer or not r.get("ms_per_iteration") else peer["ms_per_iteration"] / r["ms_per_iteration"]
        body.append([f"{r['n']:,}", r["d"], r["precision"], r["variant"].replace("C++ ", ""), fmt_ms(r["ms_per_iteration"]),
                     fmt_ms(peer["ms_per_iteration"]) if peer else "–", fmt_x(speedup), fmt_ms(r.get("roofline_floor_ms")),
                     "–" if r.get("roofline_fraction") is None else f"{r['roofline_fraction']:.0%}",
                     fmt_bytes(r.get("peak_bytes")), fmt_bytes(peer.get("peak_bytes")) if peer else "–"])
        claims.append({**r, "speedup": speedup})
    out += table(["n", "d", "precision", "kernel", "ours ms/iter", "flash-sinkhorn ms/iter", "speedup", "floor ms",
                  "of floor", "ours device bytes", "flash-sinkhorn peak"], body)
    earlier = sorted((s for s in sources if s["kind"] == "gpu_forward" and s["file"] != name), key=lambda s: s["date"])
    if earlier:
        out += ["Earlier sessions (same protocol; kept for the history of the kernels):", ""]
        summary = []
        for s in earlier:
            speeds = [r.get("speedup") for r in speedups_of(rows, s["file"]) if r.get("speedup")]
            summary.append([f"`{s['file']}`", s["commit"][:12], s["date"][:16], s["rows"],
                            f"{min(speeds):.2f}–{max(speeds):.2f}×" if speeds else "–"])
        out += table(["file", "commit", "date", "rows", "speedup range vs flash-sinkhorn"], summary)
    return out, claims


def speedups_of(rows, file):
    chosen = [r for r in rows if r["file"] == file]
    peers = {(r["n"], r["d"], r["precision"]): r for r in chosen if r["impl"] == PEER and r["status"] == "ok"}
    out = []
    for r in chosen:
        if r["impl"] != OURS or not r.get("ms_per_iteration"):
            continue
        peer = peers.get((r["n"], r["d"], r["precision"])) or peers.get((r["n"], r["d"], "tf32"))
        if peer:
            out.append({**r, "speedup": peer["ms_per_iteration"] / r["ms_per_iteration"]})
    return out


def plan_section(rows, sources) -> list[str]:
    """The newest row of ours per (n, d, precision, card) over every plan-pass file: a run that measured
    a few sizes does not hide the sizes an earlier run measured."""
    files = sorted((s for s in sources if s["kind"] in ("plan_pass", "plan_pass_and_gradient")), key=lambda s: s["date"])
    out = ["## Plan pass and gradient (C++ benchmark)", ""]
    if not files:
        return out + ["No plan-pass results.", ""]
    def is_default(r):
        return r.get("pairing") in (None, DEFAULT_PLAN_PAIRING.get(r["precision"]))

    newest: dict[tuple, dict] = {}
    for source in files:  # oldest first: a later file's row replaces an earlier one's
        for r in rows:
            if r["file"] == source["file"] and r["impl"] == OURS:
                key = (r["n"], r["d"], r["precision"], r.get("card") or "?")
                if key not in newest or is_default(r) or not is_default(newest[key]):
                    newest[key] = r  # (a row of a forced pairing never replaces one of the default's)
    out += ["One softmin half-step against the plan pass (P·V with V = Y, k = d; host upload and download "
            "included) and, where measured, the gradient pass (results on the device); the newest row per size, "
            "precision and card over the plan-pass files, each from the file in the last column, a row of the "
            "plan pass's default pairing (tf32: split scores, bf16: multicast; docs/cuda_backend.md) before one "
            "of a forced pairing. 'pairs': the pairing the row ran ('–': not recorded).", ""]
    body = [[f"{n:,}", d, precision, card, r.get("pairing") or "–", fmt_ms(r.get("half_step_ms")),
             fmt_ms(r.get("plan_ms")), fmt_ms(r.get("gradient_ms")),
             fmt_ms(r.get("ms") if r.get("op") == "forward_gradient" else None), f"`{r['file']}`"]
            for (n, d, precision, card), r in sorted(newest.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2], kv[0][3]))]
    return out + table(["n", "d", "precision", "card", "pairs", "half-step ms", "plan pass ms", "gradient ms",
                        "forward+gradient ms", "file"], body)


def cpu_section(rows, sources) -> list[str]:
    name, chosen = latest(rows, sources, "cpu_forward")
    out = ["## CPU (2 cores): ours vs POT vs GeomLoss tensorized on CPU torch", ""]
    if not name:
        return out + ["No CPU results.", ""]
    out += [f"`{name}` (committed; not re-measured when this file was generated): 100 alternating iterations "
            "(GeomLoss: its ε-schedule made 100 entries long at the same ε), wall clock of the whole call, peak RSS "
            "per process. ratio = peer time / ours at the same precision.", ""]
    ours = {(r["n"], r["d"], r["precision"]): r for r in chosen if r["impl"] == OURS and r["status"] == "ok"}
    body = []
    for r in sorted(chosen, key=lambda r: (r["n"], r["precision"], r["impl"] != OURS, r["impl"])):
        mine = ours.get((r["n"], r["d"], r["precision"]))
        ratio = None if r["impl"] == OURS or not mine or not r.get("ms") else r["ms"] / mine["ms"]
        body.append([r["impl"], f"{r['n']:,}", r["d"], r["precision"], r.get("iterations", "–"),
                     cell(r, "ms", lambda v: f"{v / 1e3:.3g} s"), fmt_x(ratio), cell(r, "peak_bytes", fmt_bytes)])
    return out + table(["implementation", "n", "d", "precision", "iterations", "time", "ratio to ours", "peak RSS"], body)


def forward_claims_by_size(rows, sources) -> dict[tuple, dict]:
    """Per (n, d, precision) at n ≥ 10,000 in tf32 / bf16: our fastest kernel against flash-sinkhorn in the
    newest gpu_forward session that timed both at that size (a session whose peer run was cut short
    leaves its sizes to the session before)."""
    files = sorted((s for s in sources if s["kind"] == "gpu_forward"), key=lambda s: s["date"], reverse=True)
    best: dict[tuple, dict] = {}
    for source in files:
        per_size = defaultdict(list)
        for r in speedups_of(rows, source["file"]):
            if r["n"] >= 10000 and r["precision"] in ("tf32", "bf16"):
                per_size[(r["n"], r["d"], r["precision"])].append(r)
        for key, group in per_size.items():
            best.setdefault(key, max(group, key=lambda r: r["speedup"]))
    return best


def floor_allows(r: dict) -> float | None:
    """The largest speedup over flash-sinkhorn a kernel at the roofline floor would show: the peer's ms an
    iteration (speedup × ours) over our floor (gpu_forward_bench: max(GEMM at the mode's peak, 2nm exp2 at
    the MUFU rate), SPEC §6's H200 ceilings)."""
    floor = r.get("roofline_floor_ms")
    if not floor or not r.get("ms_per_iteration") or not r.get("speedup"):
        return None
    return r["speedup"] * r["ms_per_iteration"] / floor


def claims_section(suite_rows, suite_with_reach, rows, sources, results: Path) -> list[str]:
    out = ["## Claims checked", ""]
    # 1. forward ≥ 2× flash-sinkhorn at n ≥ 10,000 (best of our tf32 / bf16 kernels per size)
    suite_fw = same_run_speedups(rows, "forward")
    lines = []
    for key, top in sorted(forward_claims_by_size(rows, sources).items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        verdict = "met" if top["speedup"] >= FORWARD_GOAL else f"short by {FORWARD_GOAL / top['speedup']:.2f}×"
        lines.append([f"{key[0]:,}", key[1], key[2], top["variant"].replace("C++ ", ""), fmt_x(top["speedup"]),
                      fmt_x(floor_allows(top)), verdict, f"`{top['file']}`"])
    out += [f"**Forward ≥ {FORWARD_GOAL:g}× flash-sinkhorn at n ≥ 10,000** (our fastest kernel per size and precision "
            "against flash-sinkhorn's tf32, both from the newest gpu_forward session that timed both at that size; "
            "'floor allows': flash-sinkhorn's time over our roofline floor in that precision — max(the GEMM at the mode's "
            "peak, the 2nm exponentials on the MUFU) at SPEC §6's measured ceilings — so a claim above it cannot be met "
            "in that precision without moving exponentials off the MUFU):", ""]
    out += table(["n", "d", "precision", "kernel", "speedup", "floor allows", "verdict", "session"], lines) if lines else ["No rows.", ""]
    if suite_fw:
        out += ["Suite rows (same arrays). End to end: ours (the Python package's call on the arrays in device "
                "memory) and flash-sinkhorn from the SAME run — the newest suite file that holds both, named in "
                "the last column. Kernels (cross-run): our newest C++ benchmark rows against flash-sinkhorn's "
                "newest suite row, which come from different runs; for reference only:", ""]
        out += speedup_table(suite_fw, speedups(suite_rows, "forward", kernels=True), FORWARD_GOAL)
    # 2. forward + gradient ≥ 2.5×
    fg = same_run_speedups(rows, "forward_gradient")
    fg_kernels = speedups(suite_rows, "forward_gradient", kernels=True)
    fg_kernels.update({k: v for k, v in plan_speedups(rows).items() if k not in fg_kernels})
    out += [f"**Forward + gradient ≥ {FORWARD_GRADIENT_GOAL:g}× flash-sinkhorn at n ≥ 10,000** (end to end: ours, "
            "the cost through torch autograd, and flash-sinkhorn from the same run, named in the last column; "
            "kernels (cross-run): the C++ plan benchmark's 10 iterations + gradient pass against flash-sinkhorn's "
            "newest suite row, or its row in the same plan-benchmark file):", ""]
    if any(k[0] >= 10000 for k in (*fg, *fg_kernels)):
        out += speedup_table(fg, fg_kernels, FORWARD_GRADIENT_GOAL)
    else:
        out += ["Not measured yet: no committed result holds both our forward + gradient time and "
                "flash-sinkhorn's on the same sizes (the suite's `forward_gradient` operation and the plan "
                "stage of tools/gpu_check.sh produce them).", ""]
    # 3. linear memory up to n = 1e6, dense peers out of memory (report_memory.py)
    out += memory_claim(suite_rows)
    # 4. the largest n within 10 minutes (report_reach.py)
    out += ten_minute_claim(suite_with_reach)
    # 5. HVP ≥ 5× (report_hvp.py)
    return out + claim_summary(results)


# A same-run ratio is judged only when each side has at least this many timed calls: before session 35
# the suite sized its repeats by the first call, and flash-sinkhorn's (autotuning, 7–44 s at n = 10⁴)
# left one or two samples of a 3 ms call that read up to 2× slow (suite_h100_2026-12-05_s34a.jsonl).
MIN_JUDGED_CALLS = 3


def speedup_table(end_to_end: dict, kernels: dict, goal: float) -> list[str]:
    """Rows at n ≥ 10,000: the same-run end-to-end speedup (report_suite.same_run_speedups) and its
    verdict (the kernels' when there is no end-to-end pair, said so), the kernels' cross-run speedup
    beside it, and the run the end-to-end pair comes from; '–' where no run holds both, with the
    reason in a footnote."""
    def verdict(value):
        return "met" if value >= goal else f"short by {goal / value:.2f}×"
    body, notes = [], []
    for key in sorted(k for k in {*end_to_end, *kernels} if k[0] >= 10000):
        n, d, p = key
        pair, kern = end_to_end.get(key) or {}, kernels.get(key)
        e2e = pair.get("ratio")
        if e2e:
            card = f"{pair['card']}: " if pair.get("card") else ""
            judged, run = verdict(e2e), f"`{pair['file']}` ({card}{fmt_ms(pair['ours_ms'])} / {fmt_ms(pair['peer_ms'])} ms)"
            few = [f"{side} {calls} timed call{'s' if calls > 1 else ''}"
                   for side, calls in (("ours", pair.get("ours_calls")), ("flash-sinkhorn", pair.get("peer_calls")))
                   if calls is not None and calls < MIN_JUDGED_CALLS]
            if few:
                judged = f"not judged ({', '.join(few)})"
        else:
            judged = f"{verdict(kern)} (kernels only)" if kern else "not judged"
            if pair.get("why"):
                notes.append(f"n = {n:,}, d = {d}, {p}: {pair['why']}.")
                run = f"– (note {len(notes)})"
            else:
                run = "– (no end-to-end row of ours)"
        body.append([f"{n:,}", d, p, fmt_x(e2e), fmt_x(kern), judged, run])
    out = table(["n", "d", "precision", "speedup end to end (same run)", "speedup kernels (cross-run)", "verdict",
                 "run (card: ours / flash-sinkhorn ms)"], body)
    if notes:
        out += ["Notes — end to end '–': ours and flash-sinkhorn were each measured at this size, but never in "
                "the same run, and a cross-run ratio is not shown: "
                + " ".join(f"({i}) {note}" for i, note in enumerate(notes, 1)), ""]
    return out


def plan_speedups(rows) -> dict:
    out = {}
    for file in {r["file"] for r in rows if r.get("op") == "forward_gradient" and not r["file"].startswith("suite")}:
        at = [r for r in rows if r["file"] == file and r.get("op") == "forward_gradient" and r["status"] == "ok"]
        peers = {(r["n"], r["d"]): r for r in at if r["impl"] == PEER}
        for r in at:
            peer = peers.get((r["n"], r["d"]))
            if r["impl"] == OURS and peer:
                out[(r["n"], r["d"], r["precision"])] = peer["ms"] / r["ms"]
    return out


# ----------------------------------------------------------------------------- plots
def plots(rows, sources, forward_claims, suite_rows, plot_dir: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    plot_dir.mkdir(parents=True, exist_ok=True)
    written = []
    # Series: suite rows when there are any, else the latest gpu_forward session.
    if any(r["op"] == "forward" and r["device"] == "gpu" for r in suite_rows):
        series_rows = [r for r in suite_rows if r["device"] == "gpu"]
        label = lambda r: f"{r['variant']} {r['precision']}" + (f" [{r['card']}]" if r.get("card") not in (None, "H200") else "")  # noqa: E731
        what = "suite (the H200's rows; other cards named in brackets)"
    else:
        _, series_rows = latest(rows, sources, "gpu_forward")
        label = lambda r: f"{r['impl']} {r['precision']}" + (f" [{r['variant'][4:]}]" if r["impl"] == OURS else "")  # noqa: E731
        what = "gpu_forward (latest session)"

    def figure(name, title, ylabel, pick, value, logy=True):
        ds = sorted({r["d"] for r in series_rows if pick(r)})
        if not ds:
            return
        fig, axes = plt.subplots(1, len(ds), figsize=(4.6 * len(ds), 3.8), squeeze=False)
        labels = sorted({label(r) for r in series_rows if pick(r)})
        colour = {name_: plt.cm.tab20(i % 20) for i, name_ in enumerate(labels)}  # one colour per series
        for ax, d in zip(axes[0], ds):
            lines = defaultdict(list)
            for r in series_rows:
                if r["d"] == d and pick(r) and r.get("status") == "ok" and value(r) is not None:
                    lines[label(r)].append((r["n"], value(r)))
            for name_, pts in sorted(lines.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name_, color=colour[name_])
            ax.legend(fontsize=6)
            ax.set_xscale("log")
            if logy:
                ax.set_yscale("log")
            ax.set_title(f"d = {d}")
            ax.set_xlabel("n = m")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel(ylabel)
        fig.suptitle(f"{title} — {what}", fontsize=9)
        fig.tight_layout()
        path = plot_dir / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))

    figure("time_vs_n.png", "forward, 10 iterations", "ms per iteration", lambda r: r["op"] == "forward",
           lambda r: r.get("ms_per_iteration") or (r["ms"] / 10 if r.get("ms") else None))
    figure("memory_vs_n.png", "peak device memory (forward)", "bytes", lambda r: r["op"] == "forward",
           lambda r: r.get("peak_bytes"))
    # speedup vs flash-sinkhorn: the kernels of the latest gpu_forward session, per precision and kernel
    panels: dict = defaultdict(lambda: defaultdict(list))
    for r in forward_claims:
        if r.get("speedup"):
            panels[r["d"]][f"{r['precision']} [{r['variant'][4:]}]"].append((r["n"], r["speedup"]))
    if panels:
        written.append(speedup_figure(plt, panels, [(FORWARD_GOAL, "--")], "flash-sinkhorn time / ours (forward)",
                                      "speedup over flash-sinkhorn (dashed: the 2× goal) — latest gpu_forward session",
                                      plot_dir / "speedup_vs_flash_sinkhorn.png"))
    # and the suite's end-to-end speedups (same arrays, the whole call on both sides), per operation
    panels = defaultdict(lambda: defaultdict(list))
    for op in ("forward", "forward_gradient", "hvp"):
        for (n, d, precision), pair in same_run_speedups(rows, op).items():
            if pair["ratio"]:  # one series per card: a line never joins an H100 pair to an H200 pair
                panels[d][f"{op} {precision} [{pair.get('card') or 'GPU'}]"].append((n, pair["ratio"]))
    if panels:
        written.append(speedup_figure(plt, panels, [(FORWARD_GOAL, "--"), (FORWARD_GRADIENT_GOAL, ":")],
                                      "flash-sinkhorn time / ours, end to end",
                                      "suite, same arrays, both from one run on one card [named]: speedup over flash-sinkhorn\n"
                                      "(goals: dashed 2×, dotted 2.5×)",
                                      plot_dir / "suite_speedup_vs_flash_sinkhorn.png"))
    return written


def speedup_figure(plt, panels: dict, goals: list, ylabel: str, title: str, path: Path) -> str:
    """One panel per d of {label: [(n, speedup)]} on a log n axis, the goals as horizontal lines
    (value, line style); written to `path`, which is returned."""
    ds = sorted(panels)
    fig, axes = plt.subplots(1, len(ds), figsize=(4.2 * len(ds), 3.6), squeeze=False)
    for ax, d in zip(axes[0], ds):
        for label, pts in sorted(panels[d].items()):
            pts = sorted(pts)
            ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", label=label)
        ax.legend(fontsize=6)
        for value, style in goals:
            ax.axhline(value, color="k", ls=style, lw=0.8)
        ax.axhline(1.0, color="grey", lw=0.6)
        ax.set_xscale("log")
        ax.set_title(f"d = {d}")
        ax.set_xlabel("n = m")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    fig.suptitle(title, fontsize=8 if "\n" in title else 9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


# ----------------------------------------------------------------------------- main
def render(results: Path, markdown: Path, plot_dir: Path) -> str:
    rows, sources, skipped = load(results)
    forward, forward_claims = gpu_forward_section(rows, sources)
    suite, suite_rows, suite_with_reach = suite_section(rows)
    written = plots(rows, sources, forward_claims, suite_rows, plot_dir)
    hvp_figure = hvp_plot(results, plot_dir)
    if hvp_figure:
        written.append(hvp_figure)
    rel = lambda p: Path(p).resolve().relative_to(markdown.resolve().parent) if Path(p).resolve().is_relative_to(markdown.resolve().parent) else Path(p)  # noqa: E731
    lines = ["# Benchmarks", "",
             "Generated by `python3 bench/suite/report.py` from the JSON under `bench/results/` (do not edit by hand; "
             "rerun it after adding results). Every number below is read from a committed file named in its section; "
             "the commands and commits that produced each file are listed at the end.", ""]
    lines += claims_section(suite_rows, suite_with_reach, rows, sources, results)
    lines += forward + plan_section(rows, sources) + hvp_section(results, sources) + suite
    lines += reach_section(suite_with_reach) + keops_section(results)
    lines += cpu_section(rows, sources)
    lines += narrow_reference_section(results, sources)
    lines += ["## Plots", ""]
    lines += [f"![{Path(p).stem}]({rel(p)})" for p in written] if written else \
        ["(matplotlib is not installed: no plots were written.)"]
    lines += ["", "## Sources", ""]
    lines += table(["file", "kind", "rows", "commit", "date", "machine", "command"],
                   [[f"`{s['file']}`", s["kind"], s["rows"], f"`{s['commit']}`", s["date"], s["machine"],
                     f"`{s['command']}`" if s["command"] and not s["command"].startswith("not ") else s["command"]]
                    for s in sources])
    if skipped:
        lines += ["Not converted (other formats, reported elsewhere): " + ", ".join(f"`{s}`" for s in skipped), ""]
    text = "\n".join(lines).rstrip() + "\n"
    markdown.write_text(text)
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=str(REPO / "bench/results"))
    ap.add_argument("--markdown", default=str(REPO / "BENCHMARKS.md"))
    ap.add_argument("--plots", default=str(REPO / "bench/plots"))
    args = ap.parse_args(argv)
    render(Path(args.results), Path(args.markdown), Path(args.plots))
    print(f"wrote {args.markdown} and the plots under {args.plots}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
