"""Sweeps: one run through the harness per value of one setting, grouped under one MLflow parent run.

``trainbench run WORKLOAD --sweep KEY=V1,V2,...`` resolves every point first (a bad
value fails before anything runs), then runs them in order. Each point is a normal
run with its own result file, logged as a child of the sweep's parent run. A failed
point is kept in the table with its error, never dropped; an interrupted point ends
the sweep. The sweep writes ``sweep.json``, ``sweep.md`` (the table, with each
point's 95% CI) and ``sweep.png`` (:mod:`suite.run.sweep_plot`) and logs them to the
parent run, whose params say what was swept (``sweep.knob``, ``sweep.values``) and
what was fixed (each ``--set`` as its own param), and whose metrics are the best
point's (:mod:`suite.run.sweep_table`). Each child run gets ``sweep.knob`` and
``sweep.value`` params (:mod:`suite.tracking.sweeps`), the x-axis for MLflow's charts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.config import RunConfig
from suite.errors import TrackingError
from suite.labels import flat_settings, setting_name, value_text
from suite.results import Result, ResultError, read_result
from suite.run.execute import execute
from suite.run.options import ProgressCallback, RunError, RunOptions, new_stamped_dir
from suite.specs import ConfigError, resolve


@dataclass(frozen=True)
class SweepSpec:
    """A setting and the values to run it with.

    Attributes:
        key: any setting ``--set`` accepts (``num_workers``, ``params.batch_size``, ``launch.cpus``...).
        values: the values as written, in order.
    """

    key: str
    values: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.key}={','.join(self.values)}"


def parse_sweep(text: str) -> SweepSpec:
    """Parse ``KEY=V1,V2,...``.

    Raises:
        ConfigError: no ``=``, an empty key or value, fewer than one value, or a repeated value.
    """
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--sweep {text!r}: expected KEY=V1,V2,..., e.g. --sweep num_workers=0,1,2")
    values = tuple(v.strip() for v in rest.split(","))
    if not rest.strip() or any(not v for v in values):
        raise ConfigError(f"--sweep {text!r}: every value must be non-empty, e.g. --sweep {key}=0,1,2")
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise ConfigError(f"--sweep {text!r}: value(s) {', '.join(repeated)} appear more than once")
    return SweepSpec(key, values)


def first_point(text: str | None) -> list[str]:
    """``["KEY=V1"]`` for a sweep ``KEY=V1,...`` (no sweep: ``[]``), to check the run options once up front.

    Raises:
        ConfigError: ``text`` is not a valid sweep.
    """
    if not text:
        return []
    spec = parse_sweep(text)
    return [f"{spec.key}={spec.values[0]}"]


def plan_sweep(workload: str, profile: str | None, overrides: list[str], sweep: SweepSpec) -> list[RunConfig]:
    """The resolved config of every point (``overrides`` plus ``KEY=value``), all validated up front.

    Raises:
        ConfigError: the key is also given with ``--set``, or a point is invalid (the
            message names the value).
    """
    bare = sweep.key.split(".")[-1]
    clash = [o for o in overrides if o.partition("=")[0].strip().split(".")[-1] == bare]
    if clash:
        raise ConfigError(f"--sweep {sweep.key} conflicts with --set {clash[0]}; sweep it or set it, not both")
    configs = []
    for value in sweep.values:
        try:
            configs.append(resolve(workload, profile, [*overrides, f"{sweep.key}={value}"]))
        except ConfigError as exc:
            raise ConfigError(f"--sweep point {sweep.key}={value}: {exc}") from exc
    return configs


def parent_params(spec: SweepSpec, overrides: list[str], config: RunConfig, steps_mean: str) -> dict[str, str]:
    """The parent run's params: the knob and its values, the profile, and each fixed ``--set`` as
    its own param under the name a point's run uses (``params.num_workers`` = ``0``)."""
    out = {
        "sweep.knob": spec.key,
        "sweep.values": ",".join(spec.values),
        "sweep.points": str(len(spec.values)),
        "sweep.step": steps_mean,
        "profile": config.profile,
    }
    flat = flat_settings(config)
    for item in overrides:
        key, _, value = (part.strip() for part in item.partition("="))
        name = setting_name(config, key)
        text = value_text(flat[name]) if name is not None else value
        if text is not None:
            out[name or key] = text
    return out


@dataclass
class SweepPoint:
    """One point's outcome: a complete result, or the error (and the incomplete result kept, if any)."""

    value: str
    result: Result | None = None
    result_path: Path | None = None
    error: str | None = None
    mlflow_run_id: str | None = None

    def row(self) -> dict[str, Any]:
        """JSON-ready summary: value, status, throughput (samples/s), input-bound fraction, verdict,
        CPU %, and the workload's ``preprocessing`` record when it has one."""
        r = self.result
        s = r.summary if r is not None else None
        util = r.utilization_summary if r is not None else None
        return {
            "value": self.value,
            "status": "complete" if s is not None else "failed",
            "error": self.error,
            "throughput_samples_per_s": s.throughput if s else None,
            "throughput_ci95": [s.throughput_ci95.low, s.throughput_ci95.high] if s and s.throughput_ci95 else None,
            "throughput_ci95_status": s.throughput_ci95_status if s else None,
            "input_bound_fraction": s.input_bound_fraction if s else None,
            "verdict": r.diagnosis.verdict if r is not None and r.diagnosis is not None else None,
            "cpu_mean_percent": util.cpu_mean_percent if util is not None else None,
            "preprocessing": (r.workload_info.get("preprocessing") if r is not None else None),
            "result_path": str(self.result_path) if self.result_path else None,
            "mlflow_run_id": self.mlflow_run_id,
        }


@dataclass
class SweepOutcome:
    """What a sweep produced."""

    sweep: SweepSpec
    workload: str
    points: list[SweepPoint] = field(default_factory=list)
    directory: Path | None = None
    json_path: Path | None = None
    markdown_path: Path | None = None
    plot_path: Path | None = None
    parent_run_id: str | None = None
    tracking_error: str | None = None
    interrupted: bool = False

    @property
    def failed(self) -> list[SweepPoint]:
        """Points without a complete result."""
        return [p for p in self.points if p.result is None or p.result.summary is None]


def _incomplete(exc: RunError) -> Result | None:
    if exc.result_path is None:
        return None
    try:
        return read_result(exc.result_path)
    except ResultError:
        return None


def run_sweep(
    workload: str,
    profile: str | None,
    overrides: list[str],
    sweep: SweepSpec,
    opts: RunOptions,
    progress: Callable[[int, str, RunConfig], AbstractContextManager[ProgressCallback | None]] | None = None,
) -> SweepOutcome:
    """Run every point of ``sweep`` through the harness; write ``sweep.json``, ``sweep.md`` and ``sweep.png``.

    Args:
        workload, profile, overrides: as for ``trainbench run``.
        sweep: the setting and its values.
        opts: run options; with a tracking URI, a parent MLflow run is created and
            every point is logged as its child.
        progress: called with (index, value, config) for each point; returns a context
            manager, held open while the point runs, whose value receives the point's
            progress events (or None).

    Returns:
        The outcome; failed points carry their error. ``interrupted`` is True when a
        point was interrupted (the remaining points did not run).

    Raises:
        ConfigError: a point is invalid (before anything runs).
        PreflightError, suite.cost.PriceTableError, suite.launchers.LaunchError: from the first point's preflight.
    """
    from suite.run.sweep_table import point_steps

    configs = plan_sweep(workload, profile, overrides, sweep)
    out = SweepOutcome(sweep, workload)
    out.directory = new_stamped_dir(opts.output_dir / workload, "sweep-")
    steps, steps_mean = point_steps(list(sweep.values))
    if opts.tracking_uri:
        from suite.tracking import start_parent_run

        name = f"{workload} sweep of {sweep.key}: {', '.join(sweep.values)}"
        try:
            params = parent_params(sweep, overrides, configs[0], steps_mean)
            out.parent_run_id = start_parent_run(workload, name, params, opts.tracking_uri)
        except TrackingError as exc:
            out.tracking_error = str(exc)
    point_opts = dataclasses.replace(opts, parent_run_id=out.parent_run_id) if out.parent_run_id else opts
    if out.tracking_error:
        point_opts = dataclasses.replace(opts, tracking_uri=None)
    try:
        for i, (value, config) in enumerate(zip(sweep.values, configs, strict=True)):
            point = SweepPoint(value)
            out.points.append(point)
            watch = progress(i, value, config) if progress is not None else contextlib.nullcontext(None)
            try:
                with watch as on_progress:
                    run = execute(config, point_opts, on_progress)
                point.result, point.result_path, point.mlflow_run_id = run.result, run.result_path, run.mlflow_run_id
                if run.tracking_error and not out.tracking_error:
                    out.tracking_error = run.tracking_error
            except RunError as exc:
                point.error, point.result_path, point.result = str(exc), exc.result_path, _incomplete(exc)
                if exc.exit_code == 130:
                    out.interrupted = True
                    break
    except BaseException:
        # a preflight error or a crash: the parent run must not stay RUNNING
        if out.parent_run_id and opts.tracking_uri:
            from suite.tracking import finish_parent_run

            with contextlib.suppress(TrackingError):
                finish_parent_run(out.parent_run_id, [], [], "FAILED", opts.tracking_uri)
        raise
    _write_and_record(out, steps[: len(out.points)], opts)
    return out


def _write_and_record(out: SweepOutcome, steps: list[int], opts: RunOptions) -> None:
    """Write ``sweep.json``, ``sweep.md`` and ``sweep.png``; attach them, the best point's metrics and
    the per-point series to the parent run, and end it (FINISHED, FAILED or KILLED)."""
    from suite.run.sweep_plot import sweep_png
    from suite.run.sweep_table import best_index, parent_metrics, parent_tags, sweep_markdown

    assert out.directory is not None
    key, rows = out.sweep.key, [p.row() for p in out.points]
    best = best_index(rows)
    doc = {
        "workload": out.workload,
        "key": key,
        "values": list(out.sweep.values),
        "best": None if best is None else rows[best]["value"],
        "points": rows,
    }
    out.json_path = out.directory / "sweep.json"
    out.json_path.write_text(json.dumps(doc, indent=1) + "\n")
    out.markdown_path = out.directory / "sweep.md"
    out.markdown_path.write_text(sweep_markdown(out.workload, key, rows))
    out.plot_path = sweep_png(key, rows, out.directory / "sweep.png", f"{out.workload}: sweep of {key}")
    if not (out.parent_run_id and opts.tracking_uri):
        return
    from suite.tracking import finish_parent_run

    status = "KILLED" if out.interrupted else ("FAILED" if out.failed else "FINISHED")
    files = [out.json_path, out.markdown_path, out.plot_path]
    try:
        finish_parent_run(
            out.parent_run_id, parent_metrics(rows, steps), files, status, opts.tracking_uri, parent_tags(key, rows)
        )
    except TrackingError as exc:
        out.tracking_error = out.tracking_error or str(exc)
