"""The end-of-run table (rich), also what ``trainbench show RESULT.json`` prints.

Every interval is printed as a range with its relative half-width, or, when the records
cannot bound it, as "too few repeats to bound" with the fix: never as a range that means
nothing. One wider than +-5% is followed by why it cannot decide and what to change
(:func:`suite.run.diagnosis.interval_advice`). A disturbed measurement (other processes or steal during a window) and a
disturbed scaling comparison are flagged in red.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from harness.stats import Summary
from suite import labels
from suite.labels.telemetry import energy_text, gpu_readings_text
from suite.results import Result
from suite.run.diagnosis import interval_advice
from suite.run.header import hugepages_text, isa_text, precision_text


def _fmt(v: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def interval_text(s: Summary) -> str:
    """The throughput's 95% CI: ``low - high samples/s (±x.x%; method)``, or why it is not bounded and the fix."""
    ci = s.throughput_ci95
    if ci is not None and ci.high is not None:
        rel = s.throughput_ci95_rel if s.throughput_ci95_rel is not None else (ci.high - ci.low) / 2 / s.throughput
        return f"{ci.low:.2f} - {ci.high:.2f} samples/s (±{rel:.1%}; {ci.method})"
    if s.throughput_ci95_reason:
        return s.throughput_ci95_reason
    low = f" (only its lower end is known: {ci.low:.2f} samples/s)" if ci is not None else ""
    return f"too few repeats to bound{low}. Fix: raise repeats or measure_steps"


def loader_batches(params: dict[str, Any]) -> int | None:
    """Batches a DataLoader holds in flight (workers x prefetch), from a run's params; None without workers."""
    workers = params.get("num_workers")
    if params.get("input_pipeline", "dataloader") != "dataloader" or not isinstance(workers, int) or workers <= 0:
        return None
    prefetch = params.get("prefetch")
    return workers * (prefetch if isinstance(prefetch, int) and prefetch > 0 else 2)  # torch's default is 2


def _scaling_row(result: Result) -> str:
    sc = result.scaling
    assert sc is not None
    if sc.efficiency_ci95_low is not None and sc.efficiency_ci95_high is not None:
        eff_ci = f", 95% CI {sc.efficiency_ci95_low:.2f}-{sc.efficiency_ci95_high:.2f}"
    else:
        eff_ci = f"; {sc.efficiency_ci95_reason or 'too few repeats to bound its interval. Fix: raise repeats'}"
    if sc.nodes:
        against = f"{sc.nodes} nodes {sc.ddp_throughput:.2f} vs one node {sc.single_throughput:.2f} samples/s"
        same = "same per-rank batch"
    else:
        against = f"DDP {sc.ddp_throughput:.2f} vs one process {sc.single_throughput:.2f} samples/s"
        same = "same CPUs and global batch"
    text = escape(f"{sc.efficiency:.2f}{eff_ci} ({against}, {same})")
    if sc.disturbed:
        text += f"\n[bold red]DISTURBED comparison:[/bold red] {escape(str(sc.disturbed_reason))}"
    return text


def _budget_row(plan: dict[str, Any] | None) -> str | None:
    """What the time budget did, from the plan the harness applied; None without a budget."""
    if not isinstance(plan, dict) or plan.get("budget_s") is None:
        return None
    raw = plan.get("projection")
    proj: dict[str, Any] = raw if isinstance(raw, dict) else {}
    text = f"{float(plan['budget_s']):.0f} s left at the run's start"
    if proj.get("step_s") is not None:
        text += f"; a step took {float(proj['step_s']):.2f} s"
    if plan.get("calibrated"):
        text += f"; windows shortened to {proj.get('measure_steps')} measured steps each to fit"
    if proj.get("floor_overshoots"):
        text += f"; even the floor of {plan.get('budget_floor_steps')} measured steps overshot it"
    return text


def _hardware_rows(t: Table, result: Result) -> None:
    env = result.environment
    cpu = env.get("cpu") or {}
    torch = (env.get("torch") or {}).get("version")
    cores = labels.cores_text(env)
    t.add_row("CPU", escape(f"{cpu.get('model') or 'unknown'}, {cores or '?'} cores; torch {torch or '?'}"))
    isa = env.get("isa")
    if isinstance(isa, dict):
        t.add_row("matrix ISA", escape(isa_text(isa)))
    else:
        t.add_row("matrix ISA", escape(f"{labels.isa_summary(env) or 'not recorded'} (CPU flags; no ISA record)"))
    choice = labels.precision_choice(result)
    if choice is not None:
        colour = "red" if result.bf16_emulated else "white"
        t.add_row("precision", f"[{colour}]{escape(precision_text(choice))}[/{colour}]")
    elif result.config.params.get("precision") == "auto":
        ran = labels.precision(result) or "unknown"
        t.add_row("precision", escape(f"{ran} (auto; no decision recorded: what auto chooses on the recorded CPU)"))
    else:
        t.add_row("precision", escape(f"{labels.precision(result)} (as configured; no decision recorded)"))


def summary_table(result: Result) -> Table:
    """The end-of-run table of a result (an incomplete one: its status and hardware)."""
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
        _hardware_rows(t, result)
        return t
    t.add_row("throughput", f"[bold green]{s.throughput:.2f} samples/s[/bold green]")
    advice = interval_advice(s, loader_batches(result.config.params) if s.input_bound_fraction > 0 else None)
    ci = interval_text(s) + (f"\n{advice}" if advice else "")
    t.add_row("95% CI", f"[yellow]{escape(ci)}[/yellow]" if advice else escape(ci))
    t.add_row(
        "repeats", ", ".join(f"{v:.2f}" for v in s.repeat_throughputs) + f" samples/s (spread {s.repeat_spread:.1%})"
    )
    device = s.step_time_source == "device"
    t.add_row(
        "step time (GPU)" if device else "step time",
        f"median {s.step_time_median_s * 1e3:.1f} ms, p90 {s.step_time_p90_s * 1e3:.1f} ms, "
        f"IQR {s.step_time_iqr_s * 1e3:.1f} ms, CV {s.step_time_cv:.1%}"
        + (" (CUDA events around each step)" if device else ""),
    )
    if device and s.host_step_time_median_s is not None:
        p90 = s.host_step_time_p90_s
        t.add_row(
            "host launch time",
            f"median {s.host_step_time_median_s * 1e3:.1f} ms, p90 {_fmt(None if p90 is None else p90 * 1e3, '.1f')} "
            f"ms, CV {_fmt(s.host_step_time_cv, '.1%')} (the host's view of a step: data wait + launching its work)",
        )
    t.add_row("measured", f"{s.measured_steps} steps, {s.measured_samples} samples in {s.measured_seconds:.1f} s")
    t.add_row("warm-up", f"{s.warmup_seconds:.1f} s in all; first step {_fmt(s.first_step_s, '.2f', ' s')}")
    budget = _budget_row(result.plan)
    if budget:
        t.add_row("time budget", escape(budget))
    ss = s.steady_state
    colour = {"steady": "green", "trending": "red", "undetermined": "yellow"}.get(ss.status, "yellow")
    t.add_row("steady state", f"[{colour}]{escape(ss.explain())}[/{colour}]")
    if result.world_size > 1:
        info = result.workload_info
        t.add_row(
            "ranks",
            f"{result.world_size} (per-rank batch {info.get('per_rank_batch_size')}, "
            f"global batch {info.get('global_batch_size')})",
        )
    if result.scaling is not None:
        t.add_row("scaling efficiency", _scaling_row(result))
    util = result.utilization_summary
    if result.diagnosis is not None:
        bad = bool(result.diagnosis.disturbed)
        text = escape(result.diagnosis.message)
        t.add_row("diagnosis", f"[red]{text}[/red]" if bad else text)
    if util is not None and util.disturbed and not (result.diagnosis and result.diagnosis.disturbed):
        t.add_row("interference", f"[bold red]DISTURBED:[/bold red] {escape(str(util.interference))}")
    _hardware_rows(t, result)
    prep = result.workload_info.get("preprocessing")
    if prep:  # issue 5: where the input pipeline ran and what it cost
        text = (
            f"{prep.get('engine')}: {prep.get('location')}; workers: {prep.get('workers')}, cores: {prep.get('cores')}"
        )
        if prep.get("cpu_ms_per_sample") is not None:
            text += f"; {prep['cpu_ms_per_sample']:.2f} CPU ms per sample (measured)"
        t.add_row("preprocessing", escape(text))
    if util is not None and util.rss_peak_bytes:
        t.add_row("peak memory", f"{util.rss_peak_bytes / 2**30:.2f} GiB (process tree RSS)")
    if result.cost is not None:
        c = result.cost
        where = f"{c.instance_type} {c.pricing}, price of {c.price_date}" if c.instance_type else c.price_source
        t.add_row("cost", f"{c.samples_per_dollar:,.0f} samples/$ at ${c.usd_per_hour}/h ({where})")
    gpu = util.gpu if util is not None else None
    if gpu is not None:
        t.add_row("GPU (NVML)", escape(gpu_readings_text(gpu)))
        t.add_row("energy", escape(energy_text(gpu)))
    elif util is not None and util.gpu_error:
        t.add_row("GPU (NVML)", f"[yellow]not read: {escape(util.gpu_error)}[/yellow]")
    job = result.runtime.slurm
    if job is not None:
        nodes = result.nodes
        mixed = " [yellow]heterogeneous nodes[/yellow]" if nodes is not None and nodes.heterogeneous else ""
        t.add_row("Slurm job", f"{escape(job.job_id)} on {escape(job.nodelist or '?')} ({escape(job.state)}){mixed}")
    alloc = result.environment.get("loaded_libraries", {})
    loaded = [k for k in ("jemalloc", "tcmalloc") if alloc.get(k)]
    t.add_row("allocator", ", ".join(loaded) if loaded else "default (glibc)")
    huge = (result.environment.get("memory") or {}).get("transparent_hugepages")
    if huge is not None:
        t.add_row("huge pages", escape(hugepages_text(huge)))
    t.add_row("torch threads", str((result.environment.get("torch") or {}).get("num_threads")))
    return t
