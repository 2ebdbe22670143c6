"""One trainbench run end to end: preflight, launch the rank, build the result, write it, track it.

The result JSON is always written before anything is sent to MLflow, so a tracking
failure never loses a measurement.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.records import StepRecord, WindowRecord
from harness.sampler import UtilizationSample, summarize_utilization
from harness.stats import MeasurementError, summarize
from suite.cost import compute_cost
from suite.diagnosis import diagnose
from suite.launch import LaunchPlan, plan_launch
from suite.plots import timeline_png
from suite.provenance import provenance
from suite.results import Result, seal, write_result
from suite.specs import RunConfig

MIN_FREE_BYTES = 200 * 1024 * 1024
"""Free space the output directory needs before a run starts."""
STOP_GRACE_S = 30.0
"""Seconds an interrupted rank gets to write its partial measurement before it is killed."""


class RunError(RuntimeError):
    """The run could not produce a complete result. ``result_path`` points at what was kept."""

    def __init__(self, message: str, result_path: Path | None = None, exit_code: int = 1) -> None:
        super().__init__(message)
        self.result_path = result_path
        self.exit_code = exit_code


class PreflightError(ValueError):
    """The environment cannot host the run (checked before it starts)."""


@dataclass
class RunOptions:
    """Where results go and how cost is computed.

    Attributes:
        output_dir: root of the result tree; a run writes ``<output_dir>/<workload>/<stamp>-<id>/``.
        tracking_uri: MLflow tracking URI, or None to skip MLflow.
        system: system name recorded in the result (default: the host name).
        price_per_hour: USD/hour of the machine, or None.
        instance_type: instance type to look up in the price table, or None.
        pricing: ``on-demand`` or ``spot`` (price-table lookups only).
        region: region for price-table lookups, or None.
        wrap: optional runtime wrapper, called with the local launch plan and the
            run directory; it returns the plan to execute instead (e.g. the same rank
            command inside ``docker run``). The run directory holds the job, the
            measurement and the progress files, so a wrapper must make it visible to
            the rank at the same path.
    """

    output_dir: Path
    tracking_uri: str | None
    system: str | None = None
    price_per_hour: float | None = None
    instance_type: str | None = None
    pricing: str = "on-demand"
    region: str | None = None
    wrap: Callable[[LaunchPlan, Path], LaunchPlan] | None = None


@dataclass
class RunOutcome:
    """What a finished run produced."""

    result: Result
    result_path: Path
    timeline_path: Path
    mlflow_run_id: str | None = None
    tracking_error: str | None = None
    artifacts: list[Path] = field(default_factory=list)


ProgressCallback = Callable[[dict[str, Any]], None]


def preflight(config: RunConfig, opts: RunOptions) -> None:
    """Check what can be checked before anything runs.

    Raises:
        PreflightError: the output directory is not writable or has too little space.
        suite.cost.PriceTableError: the price options are invalid.
        suite.launch.LaunchError: the requested allocator is missing.
    """
    compute_cost(
        1.0,
        price_per_hour=opts.price_per_hour,
        instance_type=opts.instance_type,
        pricing=opts.pricing,
        region=opts.region,
    )
    plan_launch(config.launch, Path("job.json"), Path("out.json"))
    out = opts.output_dir
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".trainbench-write-test-{uuid.uuid4().hex[:8]}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise PreflightError(f"output directory {out} is not writable ({exc}); pass --output-dir DIR") from exc
    free = shutil.disk_usage(out).free
    if free < MIN_FREE_BYTES:
        raise PreflightError(
            f"output directory {out} has {free // 2**20} MiB free; a run needs {MIN_FREE_BYTES // 2**20} MiB"
        )


def _tail_progress(path: Path, offset: int, on_progress: ProgressCallback | None) -> int:
    if not path.exists():
        return offset
    with path.open() as f:
        f.seek(offset)
        while True:
            line = f.readline()
            if not line.endswith("\n"):
                break
            offset += len(line.encode())
            if on_progress is not None:
                try:
                    on_progress(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return offset


def launch_rank(
    config: RunConfig,
    run_dir: Path,
    on_progress: ProgressCallback | None = None,
    wrap: Callable[[LaunchPlan, Path], LaunchPlan] | None = None,
) -> tuple[dict[str, Any], LaunchPlan, int]:
    """Start the rank process, follow its progress and return its measurement.

    On Ctrl-C the rank is told to stop (SIGINT), given STOP_GRACE_S to write what
    it measured, then killed.

    Returns:
        (measurement, the launch plan that ran, exit_code).

    Raises:
        RunError: the rank died without writing a measurement.
    """
    job = run_dir / "job.json"
    out = run_dir / "measurement.json"
    progress = run_dir / "progress.jsonl"
    log = run_dir / "rank0.log"
    job.write_text(json.dumps(config.job(), indent=1))
    plan = plan_launch(config.launch, job, out, progress)
    if wrap is not None:
        plan = wrap(plan, run_dir)
    offset = 0
    interrupted = False
    with log.open("w") as logf:
        proc = subprocess.Popen(plan.command, env=plan.environ(), stdout=logf, stderr=subprocess.STDOUT)
        try:
            while proc.poll() is None:
                offset = _tail_progress(progress, offset, on_progress)
                time.sleep(0.2)
        except KeyboardInterrupt:
            interrupted = True
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    _tail_progress(progress, offset, on_progress)
    code = proc.returncode
    if not out.exists():
        tail = log.read_text(errors="replace")[-3000:]
        raise RunError(
            f"the rank exited with code {code} without writing its measurement; its log ({log}) ends with:\n{tail}",
            exit_code=130 if interrupted else 1,
        )
    measurement = json.loads(out.read_text())
    if interrupted and not measurement.get("error"):
        measurement["error"] = "interrupted (SIGINT)"
        measurement["complete"] = False
    return measurement, plan, code


def build_result(
    config: RunConfig,
    opts: RunOptions,
    measurement: dict[str, Any],
    plan: LaunchPlan,
    run_id: str,
) -> Result:
    """Turn a rank's raw measurement into a sealed :class:`Result`.

    An incomplete measurement gives a result with status ``incomplete`` and no
    summary, diagnosis or cost: it can never pass for a score.
    """
    steps = [StepRecord.from_dict(s) for s in measurement.get("steps", [])]
    windows = [WindowRecord.from_dict(w) for w in measurement.get("windows", [])]
    util = [UtilizationSample(**u) for u in measurement.get("utilization", [])]
    environment = measurement.get("system", {})
    complete = bool(measurement.get("complete"))
    error = measurement.get("error")
    summary = util_summary = diagnosis = cost = None
    if complete:
        try:
            summary = summarize(steps, windows)
        except MeasurementError as exc:
            complete, error = False, f"no valid measurement: {exc}"
    if complete and summary is not None:
        util_summary = summarize_utilization(util, windows)
        diagnosis = diagnose(summary.input_bound_fraction, util_summary.cpu_mean_percent)
        c = compute_cost(
            summary.throughput,
            price_per_hour=opts.price_per_hour,
            instance_type=opts.instance_type,
            pricing=opts.pricing,
            region=opts.region,
        )
        cost = c.to_dict() if c is not None else None
    division = "closed" if config.profile == "official" and not config.overrides else "open"
    return seal(
        {
            "run_id": run_id,
            "status": "complete" if complete else "incomplete",
            "error": error,
            "workload": config.workload,
            "profile": config.profile,
            "division": division,
            "system": opts.system or environment.get("host", {}).get("hostname") or "unknown",
            "config": config,
            "runtime": {
                "kind": plan.runtime,
                "launcher": plan.launcher,
                "command": plan.command,
                "env_set": plan.env_set,
                "image": plan.image,
                "image_id": plan.image_id,
            },
            "world_size": int(measurement.get("world_size", 1)),
            "environment": environment,
            "workload_info": measurement.get("workload_info", {}),
            "steps": steps,
            "windows": windows,
            "utilization": util,
            "utilization_summary": util_summary,
            "summary": summary,
            "diagnosis": diagnosis,
            "cost": cost,
            "provenance": provenance(),
        }
    )


def execute(config: RunConfig, opts: RunOptions, on_progress: ProgressCallback | None = None) -> RunOutcome:
    """Preflight, run, write the result JSON, plot, then log to MLflow.

    Raises:
        PreflightError, suite.cost.PriceTableError, suite.launch.LaunchError: before the run starts.
        RunError: the run failed or was interrupted; ``result_path`` names the
            incomplete result kept on disk when there was anything to keep.
    """
    preflight(config, opts)
    run_id = uuid.uuid4().hex
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = opts.output_dir / config.workload / f"{stamp}-{run_id[:8]}"
    run_dir.mkdir(parents=True)
    measurement, plan, code = launch_rank(config, run_dir, on_progress, opts.wrap)
    result = build_result(config, opts, measurement, plan, run_id)
    if result.status != "complete":
        path = write_result(result, run_dir / "result-incomplete.json")
        if opts.tracking_uri:
            from suite.tracking import TrackingError, log_result

            # the incomplete result is on disk; the RunError below is what matters
            with contextlib.suppress(TrackingError):
                log_result(result, path, [], opts.tracking_uri)
        interrupted = bool(result.error and result.error.startswith("interrupted"))
        raise RunError(
            f"run {'interrupted' if interrupted else 'failed'}: {result.error}. "
            f"The {len(result.steps)} steps measured are kept, marked incomplete, in {path} "
            f"(rank log: {run_dir / 'rank0.log'})",
            result_path=path,
            exit_code=130 if interrupted else (code or 1),
        )
    result_path = write_result(result, run_dir / "result.json")
    for tmp in ("measurement.json", "progress.jsonl"):
        (run_dir / tmp).unlink(missing_ok=True)
    timeline = timeline_png(
        result.steps,
        result.windows,
        result.utilization,
        run_dir / "timeline.png",
        f"{config.workload} ({config.profile}): {result.summary.throughput:.2f} samples/s" if result.summary else "",
    )
    outcome = RunOutcome(result, result_path, timeline)
    if opts.tracking_uri:
        from suite.tracking import TrackingError, log_result

        try:
            outcome.mlflow_run_id = log_result(result, result_path, [timeline], opts.tracking_uri)
        except TrackingError as exc:
            outcome.tracking_error = str(exc)
    return outcome
