#!/usr/bin/env python3
"""CPU forward-solve benchmark: flashsinkhorn vs POT vs GeomLoss (issue 2, item 8).

Axes (declared): n = m = 5,000, d = 64, ε = 0.1 on C = ‖x − y‖², 100 alternating iterations,
2 threads; then flashsinkhorn alone at n = m = 50,000, d = 8 (peak RSS must stay < 100 MB).
Data: x, y ~ N(0, I_d), weights U[0,1) + 0.1 normalised, seed 0, generated fresh in every process
(the authors' protocol, SPEC §5).

What is timed (wall clock, one process per measurement so peak RSS is that run's alone):
  flashsinkhorn   the whole `flashsinkhorn solve --iters 100 --tol 0 --threads 2` process (reading
                  the .npy files included); the JSON's solve_seconds (the loop alone) is reported too.
                  Peak RSS: the CLI's own VmHWM from its JSON (ru_maxrss of the child, os.wait4,
                  where the CLI predates the field: it keeps this parent's peak from before exec).
  POT             M = ot.dist(x, y) (dense n×m, float32 or float64) + ot.sinkhorn(a, b, M, 0.1,
                  method='sinkhorn_log', numItermax=100, stopThr=0): 100 iterations of (v, u) updates.
                  Data generation excluded. Peak RSS: VmHWM of the worker process minus nothing
                  (the interpreter + numpy baseline is reported separately as `baseline_rss_mb`).
  GeomLoss        SamplesLoss('sinkhorn', p=2, blur=√(ε/2), debias=False, backend='tensorized') on CPU
                  torch (set_num_threads(2)). GeomLoss has no fixed-iteration mode and its cost is
                  ½‖x − y‖², so ε_G = ε/2 = 0.05 is the same problem; `scaling` is chosen so that its
                  ε-schedule has 100 entries ending at ε_G: the loop then does 100 symmetric steps (each
                  = one f and one g softmin, like one alternating iteration) + 1 init + 1 extrapolation
                  = 102 softmin pairs. Time includes building the dense cost matrices (C_xy, C_yx).
Run: python3 bench/cpu_forward_bench.py [--bin PATH] [--skip-large] [--repeats K]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
THREADS = 2
SEED = 0
EPS = 0.1
ITERS = 100


# ----------------------------------------------------------------------------- worker side
def make_data(n, m, d, dtype):
    import numpy as np

    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((n, d)).astype(dtype)
    y = rng.standard_normal((m, d)).astype(dtype)
    a = (rng.random(n) + 0.1).astype(dtype)
    b = (rng.random(m) + 0.1).astype(dtype)
    return x, y, a / a.sum(), b / b.sum()


def vm_hwm_mb():
    text = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", text).group(1)) / 1024.0


def worker_pot(n, d, precision):
    import numpy as np
    import ot

    dtype = np.float32 if precision == "fp32" else np.float64
    x, y, a, b = make_data(n, n, d, dtype)
    baseline = vm_hwm_mb()
    t0 = time.perf_counter()
    M = ot.dist(x, y)  # squared Euclidean, dense (n, m)
    P, log = ot.sinkhorn(a, b, M, EPS, method="sinkhorn_log", numItermax=ITERS, stopThr=0, log=True, warn=False)
    seconds = time.perf_counter() - t0
    u, v = log["log_u"], log["log_v"]
    f = EPS * (u - np.log(a))
    g = EPS * (v - np.log(b))
    return {"seconds": seconds, "peak_rss_mb": vm_hwm_mb(), "baseline_rss_mb": baseline,
            "cost": float(a @ f + b @ g), "dtype": str(M.dtype), "iterations": ITERS}


def geomloss_scaling(diameter, blur, target_len):
    """`scaling` such that len(epsilon_schedule(2, diameter, blur, scaling)) == target_len."""
    import numpy as np
    from geomloss._legacy.sinkhorn_divergence import epsilon_schedule

    span = 2 * np.log(diameter) - 2 * np.log(blur)
    steps = target_len - 2  # arange entries
    scaling = float(np.exp(-span / (2 * (steps - 0.5))))  # arange count = ceil(span/(−2 log r)) = steps
    assert len(epsilon_schedule(2, diameter, blur, scaling)) == target_len
    return scaling


def worker_geomloss(n, d, precision):
    import numpy as np
    import torch
    from geomloss import SamplesLoss
    from geomloss._legacy.sinkhorn_divergence import max_diameter

    torch.set_num_threads(THREADS)
    dtype = np.float32 if precision == "fp32" else np.float64
    x, y, a, b = (torch.from_numpy(v) for v in make_data(n, n, d, dtype))
    blur = float(np.sqrt(EPS / 2))
    scaling = geomloss_scaling(max_diameter(x, y), blur, ITERS)
    loss = SamplesLoss("sinkhorn", p=2, blur=blur, scaling=scaling, debias=False, backend="tensorized")
    baseline = vm_hwm_mb()
    t0 = time.perf_counter()
    value = loss(a, x, b, y).item()
    seconds = time.perf_counter() - t0
    # ×2: GeomLoss's ½‖x−y‖² at ε/2 is our problem scaled by ½
    return {"seconds": seconds, "peak_rss_mb": vm_hwm_mb(), "baseline_rss_mb": baseline, "cost": 2 * value,
            "scaling": scaling, "eps_list_len": ITERS, "softmin_pairs": ITERS + 2}


# ----------------------------------------------------------------------------- parent side
def run_worker(kind, n, d, precision):
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS),
               OPENBLAS_NUM_THREADS=str(THREADS))
    proc = subprocess.run([sys.executable, __file__, "--worker", kind, "--n", str(n), "--d", str(d),
                           "--precision", precision], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-1500:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Our CLI as it runs by default, and with its CPU dot cache off (FLASHSINKHORN_CPU_DOT_CACHE_MIB=0,
# docs/environment.md): by default the n×m dot products are kept within a 1 GiB budget (100 MB in
# fp32 at n = 5,000), which halves the time and raises the peak RSS by as much; off, the memory is
# linear in n. Both run, so the table shows the trade.
OURS_VARIANTS = (("flashsinkhorn", {}), ("flashsinkhorn-no-dot-cache", {"FLASHSINKHORN_CPU_DOT_CACHE_MIB": "0"}))


def run_ours(binary, n, d, precision, iters, workdir, extra_env=None):
    import numpy as np

    x, y, a, b = make_data(n, n, d, np.float64)
    paths = {}
    for name, arr in (("x", x), ("y", y), ("a", a), ("b", b)):
        paths[name] = Path(workdir) / f"{name}_{n}_{d}.npy"
        np.save(paths[name], arr)
    cmd = [str(binary), "solve", "--x", paths["x"], "--y", paths["y"], "--a", paths["a"], "--b", paths["b"],
           "--eps", str(EPS), "--iters", str(iters), "--tol", "0", "--precision", precision, "--device", "cpu",
           "--threads", str(THREADS), "--quiet"]
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), **(extra_env or {}))
    t0 = time.perf_counter()
    child = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        return {"error": err.decode()[-1500:]}
    summary = json.loads(out)
    # The CLI's own VmHWM (apps/cli/peak_rss.cpp): a child's ru_maxrss keeps this Python parent's peak
    # from before exec (session 45), so it is only the fallback for a CLI without the field.
    own = summary.get("peak_host_rss_bytes")
    peak_mb, source = (own / 2**20, "the CLI's own VmHWM") if own else (usage.ru_maxrss / 1024.0, "ru_maxrss")
    return {"seconds": seconds, "solve_seconds": summary.get("solve_seconds"), "peak_rss_mb": peak_mb,
            "peak_rss_source": source, "cost": summary["cost"], "iterations": summary["iterations"],
            "marginal_error": summary["marginal_error"]}


def median_run(fn, repeats):
    runs = [fn() for _ in range(repeats)]
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]
    ok.sort(key=lambda r: r["seconds"])
    best = dict(ok[len(ok) // 2])
    best["repeats"] = len(ok)
    best["all_seconds"] = [r["seconds"] for r in runs if "error" not in r]
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in ok)
    return best


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(), "threads_used": THREADS}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for key in ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket", "Socket(s)"):
            m = re.search(rf"^{re.escape(key)}:\s+(.*)$", lscpu, re.M)
            if m:
                info[key.lower().replace("(s)", "s").replace(" ", "_")] = m.group(1).strip()
    except OSError:
        pass
    info["nproc"] = os.cpu_count()
    return info


def versions(binary):
    out = {}
    for mod in ("numpy", "ot", "torch", "geomloss"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as exc:  # noqa: BLE001 — report whatever is missing
            out[mod] = f"unavailable ({type(exc).__name__})"
    try:
        out["flashsinkhorn"] = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        out["flashsinkhorn"] = "unavailable"
    return out


def git_commit():
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=["pot", "geomloss"])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--bin", default=os.environ.get("FLASHSINKHORN_BIN", str(REPO / "build/apps/cli/flashsinkhorn")))
    ap.add_argument("--repeats", type=int, default=3, help="runs of flashsinkhorn (median reported)")
    ap.add_argument("--peer-repeats", type=int, default=1, help="runs of each peer (slow: O(n²) dense)")
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--large-iters", type=int, default=10,
                    help="iterations at n = 50,000 (the memory check; SPEC §5's 10 fixed iterations)")
    ap.add_argument("--output", default=None)
    args = ap.parse_args()

    if args.worker:
        fn = worker_pot if args.worker == "pot" else worker_geomloss
        print(json.dumps(fn(args.n, args.d, args.precision)))
        return

    binary = Path(args.bin)
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, extra_env in OURS_VARIANTS:
            for precision in ("fp32", "fp64"):
                r = median_run(lambda: run_ours(binary, 5000, 64, precision, ITERS, workdir, extra_env), args.repeats)
                results.append({"name": name, "precision": precision, "n": 5000, "d": 64, "iters": ITERS,
                                "environment": extra_env, **r})
                print(f"{name} {precision}: {r}", file=sys.stderr)
        if not args.skip_peers:
            for kind in ("pot", "geomloss"):
                for precision in ("fp32", "fp64"):
                    r = median_run(lambda: run_worker(kind, 5000, 64, precision), args.peer_repeats)
                    results.append({"name": kind, "precision": precision, "n": 5000, "d": 64, "iters": ITERS, **r})
                    print(f"{kind} {precision}: {r}", file=sys.stderr)
        if not args.skip_large:
            r = median_run(lambda: run_ours(binary, 50000, 8, "fp32", args.large_iters, workdir), 1)
            results.append({"name": "flashsinkhorn", "precision": "fp32", "n": 50000, "d": 8,
                            "iters": args.large_iters, **r})
            print(f"flashsinkhorn large: {r}", file=sys.stderr)

    # ratios at n = 5,000 per precision: ours vs the fastest peer
    ratios = {}
    ours_names = [name for name, _ in OURS_VARIANTS]
    for name, precision in ((name, precision) for name in ours_names for precision in ("fp32", "fp64")):
        ours = next((r for r in results if r["name"] == name and r["n"] == 5000
                     and r["precision"] == precision and "error" not in r), None)
        peers = [r for r in results if r["name"] not in ours_names and r["precision"] == precision and "error" not in r]
        if ours and peers:
            fastest = min(peers, key=lambda r: r["seconds"])
            ratios[precision if name == "flashsinkhorn" else f"{precision} ({name})"] = {
                "fastest_peer": fastest["name"],
                "speedup": fastest["seconds"] / ours["seconds"],
                "memory_ratio": ours["peak_rss_mb"] / fastest["peak_rss_mb"],
                "memory_ratio_vs_leanest_peer": ours["peak_rss_mb"] / min(p["peak_rss_mb"] for p in peers),
                "goal_met": fastest["seconds"] / ours["seconds"] >= 3
                and ours["peak_rss_mb"] <= min(p["peak_rss_mb"] for p in peers) / 10,
            }
    large = next((r for r in results if r["n"] == 50000 and "error" not in r), None)

    report = {
        "benchmark": "cpu_forward",
        "date": _dt.date.today().isoformat(),
        "commit": git_commit(),
        "machine": machine_info(),
        "versions": versions(binary),
        "protocol": {"eps": EPS, "cost": "‖x−y‖² (GeomLoss: ½‖x−y‖² at ε/2)", "iters": ITERS, "threads": THREADS,
                     "seed": SEED, "data": "x,y ~ N(0,I_d), weights U[0,1)+0.1 normalised"},
        "results": results,
        "ratios": ratios,
        "large_peak_rss_under_100mb": None if large is None else large["peak_rss_mb"] < 100,
    }
    out_path = Path(args.output) if args.output else REPO / "bench" / "results" / f"cpu_forward_{report['date']}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{'name':<28}{'prec':<6}{'n':>7}{'d':>4}{'iters':>6}{'wall s':>10}{'solve s':>10}{'peak RSS MB':>13}{'cost':>16}")
    for r in results:
        if "error" in r:
            print(f"{r['name']:<28}{r['precision']:<6}{r['n']:>7}{r['d']:>4}{r['iters']:>6}  ERROR {r['error'][:80]}")
            continue
        solve = r.get("solve_seconds")
        print(f"{r['name']:<28}{r['precision']:<6}{r['n']:>7}{r['d']:>4}{r['iters']:>6}{r['seconds']:>10.3f}"
              f"{(f'{solve:.3f}' if solve is not None else '-'):>10}{r['peak_rss_mb']:>13.1f}{r['cost']:>16.8g}")
    for precision, q in ratios.items():
        print(f"{precision}: {q['speedup']:.2f}× faster than {q['fastest_peer']}, peak RSS {q['memory_ratio']:.3f}× of it "
              f"({q['memory_ratio_vs_leanest_peer']:.3f}× of the leanest peer); goal met: {q['goal_met']}")
    if large is not None:
        print(f"n = 50,000, d = 8: peak RSS {large['peak_rss_mb']:.1f} MB (< 100 MB: {large['peak_rss_mb'] < 100})")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
