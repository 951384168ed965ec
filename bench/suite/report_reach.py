"""The issue's third claim, the largest n each implementation reaches within 10 minutes, from the
suite's rows (bench/suite/report.py): timing runs and reach runs (`run.py --reach`, one call per case)
together, one group per (implementation, operation, d, device, precision).

A group's answer is exact where the next size of the grid failed for a reason no budget changes
(memory, a crash), exceeded a budget of at least 10 minutes, or where the grid ran out; otherwise it is
a lower bound ('≥'): the next size exceeded a shorter budget, or a size between the largest that ran
and the failure was never attempted.
"""

from __future__ import annotations

from collections import defaultdict

from report_suite import END_TO_END, OURS, where
from report_tables import table

TEN_MINUTES_MS = 600_000.0
# The longest case a GPU machine's command holds (it stops commands at 600 s; bench/suite/run_device.sh
# starts its cases after the wheels and the build): a reach case over it decides its group's column
# for the 9 minutes that could be measured, marked '‡'.
DEVICE_CASE_LIMIT_S = 540.0
FAILURES = ("oom", "timeout", "error", "crash")
CLAIM_OPS = ("forward", "forward_gradient")  # the claims' table: the operations every peer has
CLAIM_DS = (3, 64)                           # and two dimensions (the at-a-glance table has them all)


def reach_of(rows: list[dict]) -> tuple:
    """(n ok, failure text, the failed row, the ok row) of one group's rows, timing and reach runs
    together: the largest n that ran, and the first failure above it — of that n's rows, a failure no
    budget changes (memory, a crash) first, else the timeout with the longest budget."""
    ok = max((r for r in rows if r["status"] == "ok"), key=lambda r: r["n"], default=None)
    n_ok = ok["n"] if ok else 0
    above = [r for r in rows if r["status"] in FAILURES and r["n"] > n_ok]
    if not above:
        return n_ok, "", None, ok
    first_n = min(r["n"] for r in above)
    failed = max((r for r in above if r["n"] == first_n),
                 key=lambda r: (r["status"] != "timeout", float(r.get("budget") or 0)))
    phase = f", in {failed['timed_out_in']}" if failed.get("timed_out_in") else ""
    budget = f" ({failed['error']}{phase})" if failed["status"] == "timeout" and failed.get("error") else ""
    return n_ok, f"{failed['status']} at n = {failed['n']:,}{budget}", failed, ok


def untried_below_failure(reach: tuple, rows: list[dict], grid: set) -> int | None:
    """The smallest size of the device's grid between the group's largest n that ran and its first
    failure above it that the group never ran: the failure then decides nothing about that size."""
    n_ok, _, failed, _ = reach
    if failed is None:
        return None
    ran = {r["n"] for r in rows if r["status"] == "ok" or r["status"] in FAILURES}
    return min((n for n in grid if n_ok < n < failed["n"] and n not in ran), default=None)


def ten_minute_verdict(reach: tuple, grid_largest: int, untried: int | None = None) -> tuple[str, str]:
    """The criterion from one group's rows, as (value, reason): exact where the next size of the grid
    failed for a reason no budget changes (memory, a crash) or where the grid ran out; a lower bound
    ('≥') where the next size exceeded a budget under 10 minutes or was never attempted (`untried`:
    a size between the largest that ran and the failure, untried_below_failure); on the GPU, exact for
    9 minutes ('‡') where the next size's one call (a reach run) exceeded DEVICE_CASE_LIMIT_S."""
    n_ok, _, failed, ok = reach
    ok_text = f"{n_ok:,}" if n_ok else "none"
    bound = f"≥ {n_ok:,}" if n_ok else "undecided"
    if ok is not None and float(ok.get("ms", 0.0)) > TEN_MINUTES_MS:
        return f"< {n_ok:,}", f"a call took {float(ok['ms']) / 1e3:.0f} s"
    if failed is None:
        if not n_ok:
            return "not run", "no case of the group ran"
        return (ok_text, "the grid's largest") if n_ok == grid_largest else (f"≥ {ok_text}", "larger n not attempted")
    if untried is not None:
        return bound, f"n = {untried:,} not attempted; n = {failed['n']:,}: {failed['status']}"
    if failed["status"] in ("oom", "crash", "error"):
        return ok_text, f"n = {failed['n']:,}: {failed['status']}"
    budget = float(failed.get("budget") or 0)
    if budget >= TEN_MINUTES_MS / 1e3:
        return ok_text, f"n = {failed['n']:,}: over {budget:g} s"
    if failed.get("reach") and failed.get("device") == "gpu" and budget >= DEVICE_CASE_LIMIT_S:
        return f"{ok_text}‡", f"n = {failed['n']:,}: one call over {budget:g} s, the most a device command holds"
    return bound, f"n = {failed['n']:,} exceeded a {budget:g} s budget"


def verdict_text(verdict: tuple[str, str]) -> str:
    """A ten_minute_verdict as the long table's cell: 'value (reason)'."""
    value, reason = verdict
    return f"{value} ({reason})"


def verdicts(rows: list[dict]) -> dict[tuple, tuple]:
    """{(implementation, operation, d, device, precision): (reach_of's tuple, (value, reason))} over
    the merged suite rows, reach runs included."""
    groups: dict[tuple, list] = defaultdict(list)
    for r in rows:
        groups[(r["variant"], r["op"], r["d"], where(r), r["precision"])].append(r)
    grid_of = defaultdict(set)  # each device's sizes, over every implementation
    for r in rows:
        grid_of[where(r)].add(r["n"])
    grid_largest = max((r["n"] for r in rows), default=0)
    out = {}
    for key, group in groups.items():
        reach = reach_of(group)
        unsupported = next((r for r in group if r["status"] == "unsupported"), None)
        if reach[3] is None and unsupported is not None:  # the peer has no such operation: no n to reach
            out[key] = (reach, ("unsupported", unsupported.get("reason") or "the peer has no such operation"))
            continue
        untried = untried_below_failure(reach, group, grid_of[key[3]])
        out[key] = (reach, ten_minute_verdict(reach, grid_largest, untried))
    for key, (reach, verdict) in list(out.items()):
        decided = forward_decides_gradient(key, reach, verdict, out, grid_of[key[3]])
        if decided is not None:
            out[key] = (reach, decided)
    return out


def forward_decides_gradient(key: tuple, reach: tuple, verdict: tuple, found: dict, grid: set) -> tuple | None:
    """A forward + gradient call runs the forward of the same n, d and iterations first, so where the
    forward's one call (a reach run on the GPU) exceeded DEVICE_CASE_LIMIT_S at the grid's next size
    above the largest n whose forward + gradient ran, that size cannot finish either: the lower bound
    becomes exact for that limit ('‡'). None where this does not apply (other operations, a verdict
    already exact, another card's or precision's forward, a size between the two never run)."""
    variant, op, d, place, precision = key
    if op != "forward_gradient" or not verdict[0].startswith("≥"):
        return None
    forward = found.get((variant, "forward", d, place, precision))
    failed = forward[0][2] if forward else None
    n_ok = reach[0]
    if (failed is None or failed["status"] != "timeout" or not failed.get("reach") or failed.get("device") != "gpu"
            or float(failed.get("budget") or 0) < DEVICE_CASE_LIMIT_S or not n_ok
            or min((n for n in grid if n > n_ok), default=None) != failed["n"]):
        return None
    return (f"{n_ok:,}‡", f"n = {failed['n']:,}: its forward alone ran one call over {float(failed['budget']):g} s "
                          "(forward + gradient runs that forward first)")


def _exact(value: str) -> bool:
    """A verdict's value is exact (a size, '‡' included), not a bound, '< n' or 'not run'."""
    return value[0].isdigit()


def _next_out_of_memory(reach: tuple, value: str) -> bool:
    """An exact verdict decided by the next n running out of memory."""
    return reach[2] is not None and reach[2]["status"] == "oom" and _exact(value)


def _cell(reach: tuple, value: str) -> str:
    """The at-a-glance cell: the value, '?' for undecided, '(oom)' where the next n ran out of memory."""
    return "?" if value == "undecided" else value + (" (oom)" if _next_out_of_memory(reach, value) else "")


def _strength(reach: tuple, value: str) -> tuple:
    """How much a verdict says, to choose among cards: an exact value, then a lower bound, then
    nothing; the larger n first."""
    return (2 if _exact(value) else 1 if value.startswith("≥") or value == "unsupported" else 0, reach[0])


def _claimed(variant: str) -> bool:
    """The implementations of the claims' table: the peers and our end-to-end entry point."""
    return variant == END_TO_END or not (variant.startswith(OURS) or variant.startswith("C++"))


def ten_minute_claim(rows: list[dict]) -> list[str]:
    """The claims' table: for each implementation and CLAIM_OPS, at CLAIM_DS on the GPU and on the CPU,
    the most decided verdict over the cards and precisions that ran it (exact before a lower bound,
    then the larger n), with the card and precision it comes from."""
    best: dict[tuple, tuple] = {}
    for (variant, op, d, place, precision), (reach, (value, _)) in verdicts(rows).items():
        if not _claimed(variant) or op not in CLAIM_OPS or d not in CLAIM_DS:
            continue
        device = "CPU" if place.startswith("cpu") else "GPU"
        card = place.removeprefix("gpu ").strip() if device == "GPU" else "2 cores"
        oom = "next n: oom; " if _next_out_of_memory(reach, value) else ""
        key = (variant, op, device, d)
        candidate = (_strength(reach, value), f"{value} ({oom}{card or 'GPU'}, {precision})")
        if key not in best or candidate[0] > best[key][0]:
            best[key] = candidate
    if not best:
        return []
    columns = [(device, d) for device in ("GPU", "CPU") for d in CLAIM_DS]
    lines = sorted({(k[0], k[1]) for k in best}, key=lambda vo: (vo[0], CLAIM_OPS.index(vo[1])))
    body = [[variant, op, *[best[(variant, op, *c)][1] if (variant, op, *c) in best else "–" for c in columns]]
            for variant, op in lines]
    return (["**The largest n each implementation reaches within 10 minutes** (n = m, the suite's forward of 10 "
             "iterations and its forward + gradient; at each of d = "
             + " and ".join(str(d) for d in CLAIM_DS) + ", the most decided answer over the cards and precisions "
             "that ran it — exact before a lower bound, then the larger n — with where it comes from; '≥' a "
             f"lower bound, '‡' exact for {DEVICE_CASE_LIMIT_S:g} s, the longest one GPU call can be timed. Ours: "
             "the Python package's end-to-end call. Every d, each card and our other entry points: the suite "
             "section's 'Largest n reached'):", ""]
            + table(["implementation", "operation", *[f"{device} d = {d}" for device, d in columns]], body))


def _pivot(found: dict[tuple, tuple]) -> list[str]:
    """The long table's last column at a glance: one line per (implementation, operation, device,
    precision), GPU cards first, one column per d; '≥' a lower bound, '?' undecided."""
    cells = {k: v for k, v in found.items() if not k[0].startswith("C++")}
    if not cells:
        return []
    ds = sorted({k[2] for k in cells})
    lines = defaultdict(dict)
    for (variant, op, d, place, precision), (reach, (value, _)) in cells.items():
        lines[(place.startswith("cpu"), variant, op, place.removeprefix("gpu ").strip() or "gpu", precision)][d] = \
            _cell(reach, value)
    body = [[*key[1:], *[by_d.get(d, "–") for d in ds]] for key, by_d in sorted(lines.items())]
    return (["At a glance ('≥' a lower bound, '?' undecided, '(oom)' the next n ran out of memory, '‡' exact "
             f"for {DEVICE_CASE_LIMIT_S:g} s; the table below gives each cell's reason):", ""]
            + table(["implementation", "operation", "device", "precision", *[f"d = {d}" for d in ds]], body))


def reach_section(rows: list[dict]) -> list[str]:
    """The suite section's 'Largest n reached': the budgets, the rules, the at-a-glance pivot and the
    long table with each group's reason."""
    found = verdicts(rows)
    budgets = defaultdict(set)
    for r in rows:
        if r.get("budget"):
            budgets[where(r)].add(r["budget"])
    spans = [f"{device.upper()} {min(b):g}–{max(b):g} s" if min(b) != max(b) else f"{device.upper()} {min(b):g} s"
             for device, b in sorted(budgets.items())]
    out = [f"### Largest n reached within the per-case budget actually used ({', '.join(spans) or 'not recorded'})",
           "",
           "Each run's budget is its `run.py --budget` (the command under Sources; the first case of a group may "
           "take `--start-up` seconds more); a case over it is a TIMEOUT and, by the stop rule, the larger n of "
           "its group are skipped. The budget covers the case's whole process, not the timed call alone: "
           "loading, the warm-up and repeats, what a peer or our CLI computes beside the timed loop (the CLI's "
           "primal cost and transport_x: at n = 50,000 on the CPU 24 s beside 15 s of 10 iterations) and the "
           "suite's float64 marginal-error evaluation. A row's `memory_limit_gb` is the address-space cap of "
           "`run.py --memory-limit` (an OOM under it is the peer's own allocation failure).",
           "",
           "The issue's criterion is the largest n each implementation reaches within 10 minutes. Where a "
           "group's budget was 600 s the last column is exact; otherwise it decides it only where the "
           "budgets do not matter: the "
           "next n of the grid ran out of memory or crashed, or the grid's largest n ran (in both cases the "
           "largest n that ran took under 10 minutes a call). Where the next n exceeded a shorter budget, or "
           "was never attempted, the column gives a lower bound ('≥'). Reach runs (`run.py --reach`, rows "
           "marked `reach` in their files) make one call per case, JIT and autotuning included, under their "
           "command's budget; they decide the column and appear in no other table. The GPU machine stops "
           "every command at 600 s, so no GPU case can run 10 minutes: a reach case's one call over "
           f"{DEVICE_CASE_LIMIT_S:g} s (the most a command holds after its setup) decides the column for "
           f"{DEVICE_CASE_LIMIT_S / 60:g} minutes, marked '‡' — exact for that limit, and a lower bound for 10 "
           "minutes only where the next n could finish between the two.",
           ""]
    out += _pivot(found)
    body = [[*key, f"{reach[0]:,}" if reach[0] else "none", reach[1] or "–", verdict_text(verdict)]
            for key, (reach, verdict) in sorted(found.items())]
    return out + table(["implementation", "operation", "d", "device", "precision", "largest n ok", "first failure",
                        "largest n within 10 minutes"], body)
