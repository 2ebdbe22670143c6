"""Timeline plot: step time per step, data wait, CPU use, warm-up and measurement shaded."""

from __future__ import annotations

from pathlib import Path

from harness.records import Phase, StepRecord, WindowRecord
from harness.sampler import UtilizationSample


def timeline_png(
    steps: list[StepRecord],
    windows: list[WindowRecord],
    utilization: list[UtilizationSample],
    path: Path,
    title: str,
) -> Path:
    """Write the timeline PNG to ``path`` and return it.

    x: seconds since the run started. Left axis: step time and data wait (ms) per
    step, and on a GPU the step's time on the device (CUDA events, ``StepRecord.device_s``).
    Right axis: mean CPU utilization (%). Warm-up windows are shaded orange, measurement
    windows green.
    """
    import matplotlib  # 0.3 s to import: only once a run has its steps to plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5), dpi=100)
    for w in windows:
        colour = "tab:orange" if w.phase is Phase.WARMUP else "tab:green"
        ax.axvspan(w.start_s, w.start_s + w.seconds, color=colour, alpha=0.12, lw=0)
    xs = [s.start_s for s in steps]
    ax.plot(xs, [s.step_s * 1e3 for s in steps], "o-", ms=3, lw=1, color="tab:blue", label="step time (host)")
    timed = [s for s in steps if s.device_s is not None]
    if timed:  # on a GPU: the step as the device ran it (CUDA events), beside the host's
        gpu = [s.device_s * 1e3 for s in timed if s.device_s is not None]
        ax.plot([s.start_s for s in timed], gpu, ".", ms=3, color="tab:purple", label="step time (GPU)")
    ax.plot(xs, [s.data_wait_s * 1e3 for s in steps], "x", ms=4, color="tab:red", label="data wait")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("ms per step")
    ax.set_ylim(bottom=0)
    handles, labels = ax.get_legend_handles_labels()
    if utilization:
        ax2 = ax.twinx()
        cpu = [sum(u.cpu_percent) / max(len(u.cpu_percent), 1) for u in utilization]
        (line,) = ax2.plot([u.t_s for u in utilization], cpu, color="grey", lw=1, alpha=0.7, label="CPU %")
        ax2.set_ylabel("CPU utilization, %")
        ax2.set_ylim(0, 105)
        handles.append(line)
        labels.append("CPU %")
    from matplotlib.patches import Patch

    handles += [Patch(color="tab:orange", alpha=0.3), Patch(color="tab:green", alpha=0.3)]
    labels += ["warm-up", "measurement"]
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, ncols=6, frameon=False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
