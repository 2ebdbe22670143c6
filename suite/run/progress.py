"""Console output: live progress with samples/s, and the end-of-run summary table (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from suite.config import RunConfig
from suite.results import Result


class LiveProgress:
    """A rich progress line fed by the rank's progress events.

    Shows the repeat, the window, the step and the live throughput: samples/s over
    the last 5 steps, and over the current measurement window so far. The bar is the
    current window's progress towards its end: the lesser of steps / minimum steps and
    seconds / minimum seconds (a window ends when both minimums are met).
    """

    def __init__(self, config: RunConfig, console: Console) -> None:
        self.config = config
        self.progress = Progress(
            SpinnerColumn(),
            BarColumn(bar_width=20),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self.task = self.progress.add_task("starting the rank (importing torch, building the model)...", total=None)
        self.recent: list[tuple[int, float]] = []
        self.window_samples = 0
        self.window_seconds = 0.0
        self.current: tuple[int, str] | None = None

    def __enter__(self) -> LiveProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        """Consume one progress event: a step record (``harness.records.StepRecord.to_dict``)."""
        key = (int(event["repeat"]), str(event["phase"]))
        if key != self.current:
            self.current, self.window_samples, self.window_seconds = key, 0, 0.0
        self.window_samples += int(event["samples"])
        step_s = float(event["data_wait_s"]) + float(event["compute_s"])
        self.window_seconds += step_s
        self.recent = [*self.recent[-4:], (int(event["samples"]), step_s)]
        rate = sum(n for n, _ in self.recent) / max(sum(t for _, t in self.recent), 1e-9)
        win = self.window_samples / max(self.window_seconds, 1e-9)
        w = self.config.windows
        need = w.warmup_steps if key[1] == "warmup" else w.measure_steps
        need_s = w.warmup_seconds if key[1] == "warmup" else w.measure_seconds
        steps_done = int(event["index"]) + 1
        fraction = min(steps_done / max(need, 1), self.window_seconds / need_s if need_s > 0 else 1.0, 1.0)
        self.progress.update(
            self.task,
            total=1.0,
            completed=fraction,
            description=(
                f"repeat {key[0] + 1}/{w.repeats} {key[1]:<11} step {int(event['index']) + 1:>3} (min {need})  "
                f"[bold]{rate:8.2f} samples/s[/bold] last 5 steps, {win:8.2f} this window"
            ),
        )


def _fmt(v: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def summary_table(result: Result) -> Table:
    """The end-of-run table of a complete result."""
    s = result.summary
    t = Table(
        title=f"{result.workload} ({result.profile}, {result.division} division) on {result.system}",
        show_header=False,
        title_justify="left",
    )
    t.add_column("metric", style="bold")
    t.add_column("value")
    if s is None:
        t.add_row("status", f"[red]{result.status}[/red]: {escape(str(result.error))}")
        return t
    ci = s.throughput_ci95
    t.add_row("throughput", f"[bold green]{s.throughput:.2f} samples/s[/bold green]")
    if ci is not None:
        t.add_row("95% CI", f"{ci.low:.2f} - {_fmt(ci.high)} samples/s ({ci.method})")
    t.add_row(
        "repeats", ", ".join(f"{v:.2f}" for v in s.repeat_throughputs) + f" samples/s (spread {s.repeat_spread:.1%})"
    )
    t.add_row(
        "step time",
        f"median {s.step_time_median_s * 1e3:.1f} ms, p90 {s.step_time_p90_s * 1e3:.1f} ms, "
        f"IQR {s.step_time_iqr_s * 1e3:.1f} ms, CV {s.step_time_cv:.1%}",
    )
    t.add_row("measured", f"{s.measured_steps} steps, {s.measured_samples} samples in {s.measured_seconds:.1f} s")
    t.add_row("warm-up", f"{s.warmup_seconds:.1f} s in all; first step {_fmt(s.first_step_s, '.2f', ' s')}")
    ss = s.steady_state
    colour = {"steady": "green", "trending": "red", "undetermined": "yellow"}.get(ss.status, "yellow")
    steady = f"[{colour}]{escape(ss.explain())}[/{colour}]"
    t.add_row("steady state", steady)
    if result.world_size > 1:
        info = result.workload_info
        t.add_row(
            "ranks",
            f"{result.world_size} (per-rank batch {info.get('per_rank_batch_size')}, "
            f"global batch {info.get('global_batch_size')})",
        )
    if result.scaling is not None:
        sc = result.scaling
        eff_ci = (
            ", 95% CI unbounded (too few repeats or steps)"
            if sc.efficiency_ci95_low is None or sc.efficiency_ci95_high is None
            else f", 95% CI {sc.efficiency_ci95_low:.2f}-{sc.efficiency_ci95_high:.2f}"
        )
        against = (
            f"{sc.nodes} nodes {sc.ddp_throughput:.2f} vs one node {sc.single_throughput:.2f} samples/s, "
            "same per-rank batch"
            if sc.nodes
            else f"DDP {sc.ddp_throughput:.2f} vs one process {sc.single_throughput:.2f} samples/s, "
            "same CPUs and global batch"
        )
        t.add_row("scaling efficiency", f"{sc.efficiency:.2f}{eff_ci} ({against})")
    if result.diagnosis is not None:
        t.add_row("diagnosis", escape(result.diagnosis.message))
    prep = result.workload_info.get("preprocessing")
    if prep:  # issue 5: where the input pipeline ran and what it cost
        text = (
            f"{prep.get('engine')}: {prep.get('location')}; workers: {prep.get('workers')}, cores: {prep.get('cores')}"
        )
        if prep.get("cpu_ms_per_sample") is not None:
            text += f"; {prep['cpu_ms_per_sample']:.2f} CPU ms per sample (measured)"
        t.add_row("preprocessing", escape(text))
    if result.utilization_summary is not None and result.utilization_summary.rss_peak_bytes:
        t.add_row("peak memory", f"{result.utilization_summary.rss_peak_bytes / 2**30:.2f} GiB (process tree RSS)")
    if result.cost is not None:
        c = result.cost
        where = f"{c.instance_type} {c.pricing}, price of {c.price_date}" if c.instance_type else c.price_source
        t.add_row("cost", f"{c.samples_per_dollar:,.0f} samples/$ at ${c.usd_per_hour}/h ({where})")
    job = result.runtime.slurm
    if job is not None:
        nodes = result.nodes
        mixed = " [yellow]heterogeneous nodes[/yellow]" if nodes is not None and nodes.heterogeneous else ""
        t.add_row("Slurm job", f"{escape(job.job_id)} on {escape(job.nodelist or '?')} ({job.state}){mixed}")
    alloc = result.environment.get("loaded_libraries", {})
    loaded = [k for k in ("jemalloc", "tcmalloc") if alloc.get(k)]
    t.add_row("allocator", ", ".join(loaded) if loaded else "default (glibc)")
    t.add_row("torch threads", str((result.environment.get("torch") or {}).get("num_threads")))
    return t
