"""The ladder's outputs: the table (rich), ``ladder.json``, ``ladder.png`` and ``best-config.json``.

Each rung's compile and warm-up time are reported apart from its throughput: ``first step``
is its first warm-up step (lazy initialisation, torch.compile's compilation and autotuning,
CUDA graph capture), ``warm-up`` all its warm-up windows; neither is in a measurement window.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.table import Table

from suite.compare.stats import RatioEstimate
from suite.ladder.best import device_name
from suite.ladder.outcome import LadderOutcome, RungOutcome
from suite.run.config_file import LadderBest, RunConfigFile, write_config_file
from suite.run.summary import interval_text


def _ratio(r: RatioEstimate | None) -> str:
    if r is None:
        return ""
    if r.low is None or r.high is None:
        return f"{r.ratio:.2f}x (no interval)"
    return f"{r.ratio:.2f}x [{r.low:.2f}-{r.high:.2f}]"


def _significant(r: RatioEstimate | None) -> str:
    if r is None:
        return ""
    if r.significant is None:
        return "undetermined"
    if not r.significant:
        return "no (within noise)"
    return "yes, faster" if r.ratio > 1 else "yes, SLOWER"


def _status(r: RungOutcome) -> str:
    if r.plan.skip:
        return "skipped"
    if r.over_limit:
        return "did not fit"
    return "complete" if r.complete else "failed"


def row(r: RungOutcome) -> dict[str, Any]:
    """One rung, JSON-ready: name, label, status (complete/failed/skipped/did not fit), adds, throughput and
    its CI, the ratios to fp32 and to the rung below (with intervals, method and significance), the first
    step's and the warm-up's seconds, the loss-trajectory check (``numerics``), result path, why."""
    s = r.result.summary if r.result is not None else None
    ci = s.throughput_ci95 if s is not None else None
    return {
        "rung": r.plan.name,
        "label": r.plan.label,
        "status": _status(r),
        "adds": r.plan.adds,
        "overrides": r.plan.overrides,
        "throughput_samples_per_s": s.throughput if s is not None else None,
        "throughput_ci95": [ci.low, ci.high] if ci is not None and ci.high is not None else None,
        "throughput_ci95_text": interval_text(s) if s is not None else None,
        "first_step_s": s.first_step_s if s is not None else None,
        "warmup_s": s.warmup_seconds if s is not None else None,
        "vs_fp32": r.vs_fp32.to_dict() if r.vs_fp32 is not None else None,
        "vs_below": r.vs_below.to_dict() if r.vs_below is not None else None,
        "numerics": r.numerics.to_dict() if r.numerics is not None else None,
        "disturbed": bool(r.result.diagnosis and r.result.diagnosis.disturbed) if r.result is not None else None,
        "result_path": str(r.result_path) if r.result_path else None,
        "why": r.plan.skip or r.error or (r.numerics.reason if r.numerics is not None else None),
    }


def _numerics(r: RungOutcome) -> str:
    n = r.numerics
    if n is None:
        return ""
    if n.status == "reference":
        return "reference"
    if n.status == "ok" and n.deviation is not None:
        return f"ok ({n.deviation:.1%})"
    return "[red]INVALID[/red]" + (f" ({n.deviation:.1%})" if n.deviation is not None else "")


def method_line(out: LadderOutcome) -> str | None:
    """How the ratios' intervals were computed and the trajectories compared (None when no ratio was computed)."""
    ratio = next((r.vs_below or r.vs_fp32 for r in out.rungs if r.vs_below or r.vs_fp32), None)
    if ratio is None:
        return None
    tol = next((r.numerics.tolerance for r in out.rungs if r.numerics is not None), None)
    words = f"ratios: {ratio.level:.0%} CI by the {ratio.description}"
    if tol is not None:
        words += (
            "\nnumerics: each rung's loss trajectory against fp32's, mean |difference| / fp32's first loss, "
            f"at most {tol:.0%}"
        )
    return words


def ladder_table(out: LadderOutcome) -> Table:
    """One line per rung: throughput, 95% CI, x fp32, the step up from the rung below and whether it is
    significant, the first step's and the warm-up's seconds, and the loss-trajectory check."""
    t = Table(title=f"{out.workload}: {out.title} (cumulative)", title_justify="left")
    cols = ("rung", "samples/s", "95% CI", "x fp32 [95% CI]", "step up [95% CI]", "significant", "first step s",
            "warm-up s", "numerics", "note")  # fmt: skip
    for col in cols:
        t.add_column(col, justify="right" if col in ("samples/s", "first step s", "warm-up s") else "left")
    blank = [""] * (len(cols) - 2)
    for i, r in enumerate(out.rungs):
        name = f"{r.plan.label}" + (" [bold green](best)[/bold green]" if i == out.best else "")
        s = r.result.summary if r.result is not None else None
        if r.plan.skip:
            t.add_row(name, "", *blank, "[dim]skipped (why: below)[/dim]")
        elif r.over_limit:
            t.add_row(name, "[dim]did not fit[/dim]", *blank, "[dim]out of memory (why: below)[/dim]")
        elif s is None:
            t.add_row(name, "[red]failed[/red]", *blank, "[red]failed (why: below)[/red]")
        else:
            ci = s.throughput_ci95
            ci_text = f"±{s.throughput_ci95_rel:.1%}" if ci and ci.high and s.throughput_ci95_rel else "unbounded"
            disturbed = bool(r.result and r.result.diagnosis and r.result.diagnosis.disturbed)
            note = "[red]DISTURBED[/red]" if disturbed else ""
            t.add_row(
                name,
                f"{s.throughput:.2f}",
                ci_text,
                "1.00x" if r.plan.name == "fp32" else _ratio(r.vs_fp32),
                _ratio(r.vs_below),
                _significant(r.vs_below),
                "" if s.first_step_s is None else f"{s.first_step_s:.1f}",
                f"{s.warmup_seconds:.1f}",
                _numerics(r),
                note,
            )
    return t


def ladder_png(out: LadderOutcome, path: Path) -> Path:
    """Bars of throughput per rung with 95% CI whiskers; skipped rungs are labelled, failed ones marked."""
    labels = [r.plan.label for r in out.rungs]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    xs = list(range(len(out.rungs)))
    for x, r in zip(xs, out.rungs, strict=True):
        s = r.result.summary if r.result is not None else None
        if s is None:
            text = _status(r).replace("complete", "failed")
            ax.text(x, 0, text, ha="center", va="bottom", fontsize=8, rotation=90)
            continue
        ci = s.throughput_ci95
        err = None
        top = s.throughput
        if ci is not None and ci.high is not None:
            err = [[max(0.0, s.throughput - ci.low)], [max(0.0, ci.high - s.throughput)]]
            top = ci.high
        invalid = r.numerics is not None and not r.numerics.valid
        colour = "tab:green" if x == out.best else ("tab:red" if invalid else "tab:blue")
        ax.bar(x, s.throughput, color=colour, yerr=err, capsize=6, alpha=0.85, hatch="//" if invalid else None)
        ratio = "1.00x" if r.plan.name == "fp32" else ("" if r.vs_fp32 is None else f"{r.vs_fp32.ratio:.2f}x")
        label = f"{s.throughput:.2f}" + ("" if err else " (no CI)") + (f"\n{ratio}" if ratio else "")
        ax.text(x, top, label, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("throughput, samples/s (95% CI)")
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.15)  # room for the labels above the whiskers
    ax.set_title(f"{out.workload}: {out.title} (best in green, invalid numerics in red)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def best_config(out: LadderOutcome) -> RunConfigFile | None:
    """The best rung as a run-config file, or None when no rung completed."""
    if out.best is None:
        return None
    r = out.rungs[out.best]
    s = r.result.summary if r.result is not None else None
    tput = f"{s.throughput:.2f} samples/s ({interval_text(s)})" if s is not None else "?"
    note = f"trainbench ladder: best rung {r.plan.label!r} on {r.result.system if r.result is not None else '?'}"
    note += f", {tput}; the simplest valid rung not significantly slower than the fastest; result {r.result_path}"
    profile = r.plan.config.profile if r.plan.config is not None else out.profile
    measured = None
    if r.result is not None and s is not None:
        measured = LadderBest(
            device=device_name(r.result),
            world_size=r.result.world_size,
            rung=r.plan.label,
            throughput_samples_per_s=s.throughput,
            result=str(r.result_path) if r.result_path else None,
        )
    return RunConfigFile(workload=out.workload, profile=profile, overrides=r.plan.overrides, note=note, best=measured)


def write_outputs(out: LadderOutcome) -> list[Path]:
    """Write ``ladder.json``, ``ladder.png`` and (when a rung completed) ``best-config.json``; returns their paths."""
    assert out.directory is not None
    rows = [row(r) for r in out.rungs]
    doc: dict[str, Any] = {"workload": out.workload, "title": out.title, "profile": out.profile}
    doc |= {"overrides": out.overrides}
    doc |= {"best": out.best, "rungs": rows}
    out.json_path = out.directory / "ladder.json"
    out.json_path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    out.plot_path = ladder_png(out, out.directory / "ladder.png")
    paths = [out.json_path, out.plot_path]
    config = best_config(out)
    if config is not None:
        out.config_path = write_config_file(out.directory / "best-config.json", config)
        paths.append(out.config_path)
    return paths
