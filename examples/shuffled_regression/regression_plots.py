"""The three figures of the shuffled-regression example, from the traces run.py writes (JSON)."""

from __future__ import annotations

from pathlib import Path


def plot_all(report: dict, out_dir: Path, suffix: str) -> list[Path]:
    """loss vs wall time (both runs), ‖W − W*‖ vs step, the λ_min trace with the switch marked.
    Returns the PNG paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hybrid, adam = report["hybrid"], report["adam"]
    comparison = report["comparison"]
    paths = []

    # left: best L so far; right: its relative gap to the lower of the two runs' best losses, where the
    # endgame (second order against Adam's last hundreds of steps) is visible
    fig, (ax, gap_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    low = min(min(hybrid["value"]), min(adam["value"]))
    def gap(loss):  # noqa: E306
        return max((loss - low) / abs(low), 1e-7)
    for trace, label in ((hybrid, "hybrid (Adam → " + report["config"]["second_order"] + ")"), (adam, "Adam alone")):
        best = _running_min(trace["value"])
        ax.plot(trace["time"], best, label=label, lw=2)
        gap_ax.plot(trace["time"], [gap(v) for v in best], label=label, lw=2)
    for axis in (ax, gap_ax):
        if hybrid.get("switch_step") is not None and hybrid["switch_step"] < len(hybrid["time"]):
            axis.axvline(hybrid["time"][hybrid["switch_step"]], color="gray", ls=":", label="switch")
    ax.axhline(comparison["loss_target"], color="red", alpha=0.4, ls="--", label="target L*")
    gap_ax.axhline(gap(comparison["loss_target"]), color="red", alpha=0.4, ls="--", label="target L*")
    if "common" in comparison:
        gap_ax.axhline(gap(comparison["common"]["loss_target"]), color="purple", alpha=0.4, ls="--",
                       label="the loss both reached")
    ax.set(xlabel="wall time (s)", ylabel="best L(W) so far", yscale="log",
           title=f"L(W) = OT_ε(XW, Y), n = {report['config']['n']}")
    gap_ax.set(xlabel="wall time (s)", ylabel="(best L so far − L_low) / L_low", yscale="log",
               title=f"L_low = {low:.6g}, the lower best loss")
    ax.legend()
    gap_ax.legend()
    paths.append(_save(fig, out_dir / f"loss_vs_time{suffix}.png"))

    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.plot(hybrid["w_error"], label="hybrid", lw=2)
    ax.plot(adam["w_error"], label="Adam alone", lw=2)
    if hybrid.get("switch_step") is not None:
        ax.axvline(hybrid["switch_step"], color="gray", ls=":", label="switch")
    ax.set(xlabel="step (gradient evaluation)", ylabel="‖W − W*‖_F", yscale="log")
    ax.legend()
    paths.append(_save(fig, out_dir / f"w_error{suffix}.png"))

    fig, ax = plt.subplots(figsize=(6, 4.5))
    samples = hybrid.get("lambda_trace") or []
    if samples:
        steps = [s["iteration"] for s in samples]
        ax.errorbar(steps, [s["lambda_min"] for s in samples], yerr=[s["residual"] for s in samples], fmt="o-",
                    label="λ_min (Lanczos, Adam phase)")
    final = report.get("final_lambda", {}).get("hybrid")
    if final is not None:
        x_end = (hybrid["switch_iteration"] if hybrid.get("switch_iteration", -1) >= 0 else 0) + \
            hybrid.get("second_order_iterations", 0)
        ax.plot([x_end], [final["lambda_min"]], "s", color="green", label="λ_min at the end")
    if hybrid.get("switch_iteration") is not None and hybrid["switch_iteration"] >= 0:
        ax.axvline(hybrid["switch_iteration"], color="gray", ls=":", label="switch to second order")
    ax.axhline(0, color="black", lw=0.8)
    ax.set(xlabel="Adam steps (then second-order iterations)", ylabel="λ_min(∇²_W L)")
    ax.set_yscale("symlog", linthresh=1e-2)
    if ax.get_legend_handles_labels()[0]:  # a run stopped by its budget may have no sample to show
        ax.legend()
    paths.append(_save(fig, out_dir / f"lambda_min{suffix}.png"))
    return paths


def _running_min(values: list) -> list:
    out, best = [], float("inf")
    for v in values:
        best = min(best, v)
        out.append(best)
    return out


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
