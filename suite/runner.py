"""One trainbench run end to end: preflight, launch the rank, build the result, write it, track it.

The result JSON is always written before anything is sent to MLflow, so a tracking
failure never loses a measurement.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
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

import psutil

from harness.records import StepRecord, WindowRecord
from harness.sampler import UtilizationSample, summarize_utilization
from harness.stats import MeasurementError, summarize
from harness.system import gpu_devices
from suite.cost import compute_cost
from suite.diagnosis import diagnose
from suite.launch import LaunchPlan, plan_launch
from suite.outbox import OutboxEntry, enqueue
from suite.plots import timeline_png
from suite.provenance import provenance
from suite.results import Result, seal, write_result
from suite.scaling import scaling, single_process_config
from suite.specs import RunConfig
from suite.validation.rules import division_for

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


class ResultElsewhere(Exception):
    """A multi-host run finished here, but global rank 0, which writes the result, ran on another host."""


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
        parent_run_id: MLflow run to log this run under (a sweep's parent).
    """

    output_dir: Path
    tracking_uri: str | None
    system: str | None = None
    price_per_hour: float | None = None
    instance_type: str | None = None
    pricing: str = "on-demand"
    region: str | None = None
    wrap: Callable[[LaunchPlan, Path], LaunchPlan] | None = None
    parent_run_id: str | None = None


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
        PreflightError: the output directory is not writable or has too little space, the
            workload needs a GPU and none is visible, or it needs horovodrun and Horovod is
            not installed for a local run.
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
    if config.requires_gpu:
        gpus = gpu_devices()
        if not gpus["devices"]:
            raise PreflightError(
                f"workload {config.workload} needs an NVIDIA GPU, but none is visible "
                f"({gpus.get('note', 'NVML lists no device')}); run it on a GPU host, or choose a CPU workload"
            )
    if config.launch.launcher == "horovodrun" and opts.wrap is None and importlib.util.find_spec("horovod") is None:
        raise PreflightError(
            f"workload {config.workload} is launched by horovodrun, but Horovod is not installed in this environment; "
            "run it in its image (--runtime docker; build it with `make images`), or use --set engine=ddp"
        )
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
    """Feed complete new lines of the progress log to ``on_progress``; returns the new offset."""
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


def steps_from_log(path: Path) -> list[dict[str, Any]]:
    """Step records from a rank's progress log (complete lines only; a torn last line is dropped)."""
    if not path.exists():
        return []
    steps = []
    for line in path.read_text(errors="replace").splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            steps.append(StepRecord.from_dict(json.loads(line)).to_dict())
        except (json.JSONDecodeError, KeyError, ValueError, TypeError):
            break
    return steps


def death_reason(code: int | None, hung_s: float | None) -> str:
    """Why a rank ended without finishing, in words.

    Args:
        code: the exit status of the process the runner started (the rank, its launcher,
            or ``docker run``). Negative: killed by that signal (Popen's convention).
            128 + N: the shell's and Docker's convention for "the process inside was
            killed by signal N" (e.g. 137 = SIGKILL, which is what an out-of-memory kill
            inside a container with ``--memory`` reports).
        hung_s: seconds without a finished step when the runner killed a hung rank, or None.
    """
    if hung_s is not None:
        return (
            f"the rank finished no step for {hung_s:.0f} s (startup_timeout_s / stall_timeout_s) and was killed as hung"
        )
    hint = " (the kernel's out-of-memory killer sends SIGKILL: lower batch_size or set memory_limit_mb)"
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        return f"the rank was killed by {name}" + (hint if -code == signal.SIGKILL else "")
    if code is not None and code > 128 and (code - 128) in signal.valid_signals():
        sig = signal.Signals(code - 128)
        return (
            f"the rank exited with code {code} (128 + {sig.name}: it was killed by {sig.name} inside its container "
            "or launcher)" + (hint if sig == signal.SIGKILL else "")
        )
    return f"the rank exited with code {code} before finishing"


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the rank's whole process group (launcher, ranks, DataLoader workers)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class _ProcessTree:
    """Every process the run started, remembered while they are alive.

    Launchers such as torchrun start ranks in sessions of their own, where a signal
    to the launcher's process group does not reach them, and a launcher that is
    killed leaves its ranks behind; remembering the tree lets the runner kill them.
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self.known: dict[int, float] = {}

    def refresh(self) -> None:
        with contextlib.suppress(psutil.Error):
            for p in psutil.Process(self.root).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self.known.setdefault(p.pid, p.create_time())

    def kill_all(self) -> None:
        for pid, created in self.known.items():
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.create_time() == created:
                    p.kill()


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    _signal_group(proc, sig)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _local_rank_files(run_dir: Path, stem: str, suffix: str) -> list[Path]:
    """Rank 0's file first, then ``<stem>-rank<r><suffix>`` in rank order."""
    others = sorted(run_dir.glob(f"{stem}-rank*{suffix}"), key=lambda p: int(p.stem.rsplit("-rank", 1)[1]))
    return [run_dir / f"{stem}{suffix}", *others]


def _partial_ranks(run_dir: Path, reason: str) -> tuple[list[dict[str, Any]], str]:
    """Whatever each local rank left behind (its measurement file, else its progress log), and the error.

    The error names every rank that failed, the ones that failed first (rather than
    being stopped by the launcher because another rank failed) first.
    """
    ranks = []
    for mpath in _local_rank_files(run_dir, "measurement", ".json"):
        if not mpath.exists():
            continue  # no rank of that number ran on this host, or it died before writing anything
        m: dict[str, Any] = json.loads(mpath.read_text())
        if not (m.get("complete") or m.get("error")):
            suffix = mpath.stem.removeprefix("measurement")
            m.update(steps=steps_from_log(run_dir / f"progress{suffix}.jsonl"), windows=[])
            m["error"] = "stopped without finishing (killed, crashed or hung)"
        m["complete"] = False
        ranks.append(m)
    failures = [(m.get("rank", "?"), str(m["error"])) for m in ranks if m.get("error")]
    failures.sort(key=lambda f: f[1].startswith("interrupted"))
    detail = "; ".join(f"rank {r}: {e}" for r, e in failures)
    return ranks, f"{detail}; {reason}" if detail else reason


def launch_rank(
    config: RunConfig,
    run_dir: Path,
    on_progress: ProgressCallback | None = None,
    wrap: Callable[[LaunchPlan, Path], LaunchPlan] | None = None,
) -> tuple[dict[str, Any], LaunchPlan, int]:
    """Start the rank(s), follow their progress and return the measurement.

    The launcher runs in its own process group, so stopping it stops every rank and
    DataLoader worker and leaves no orphans. On Ctrl-C (or SIGTERM to trainbench)
    the group is told to stop (SIGINT), given STOP_GRACE_S to write what it
    measured, then killed. If no rank finishes a first step within
    ``launch.startup_timeout_s``, or a next step within ``launch.stall_timeout_s``,
    the run is killed as hung. A run that dies without its final measurement gets
    one rebuilt from each local rank's files and progress log, marked incomplete
    with the reason. A distributed run's measurement holds every rank's records
    under ``ranks`` (gathered on global rank 0).

    Returns:
        (measurement, the launch plan that ran, exit_code).
    """
    job = run_dir / "job.json"
    out = run_dir / "measurement.json"
    progress = run_dir / "progress.jsonl"
    log = run_dir / "rank0.log"
    plan = plan_launch(config.launch, job, out, progress)
    job_doc = config.job()
    if plan.placement:
        job_doc["placement"] = plan.placement
    job.write_text(json.dumps(job_doc, indent=1))
    if wrap is not None:
        plan = wrap(plan, run_dir)
    offset = 0
    seen = 0
    interrupted = False
    hung_s: float | None = None
    startup, stall = config.launch.startup_timeout_s, config.launch.stall_timeout_s
    with log.open("w") as logf:
        proc = subprocess.Popen(
            plan.command, env=plan.environ(), stdout=logf, stderr=subprocess.STDOUT, start_new_session=True
        )
        last_step = time.monotonic()
        tree = _ProcessTree(proc.pid)
        try:
            while proc.poll() is None:
                tree.refresh()
                offset = _tail_progress(progress, offset, on_progress)
                size = sum(p.stat().st_size for p in run_dir.glob("progress*.jsonl"))
                now = time.monotonic()
                if size != seen:
                    seen, last_step = size, now
                elif now - last_step > (stall if seen else startup):
                    hung_s = now - last_step
                    tree.kill_all()
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait()
                    break
                time.sleep(0.2)
        except KeyboardInterrupt:
            interrupted = True
            _stop(proc, signal.SIGINT)
        finally:
            if proc.poll() is None:
                _stop(proc, signal.SIGTERM)
            _signal_group(proc, signal.SIGKILL)  # nothing of the run outlives it
            tree.kill_all()
    _tail_progress(progress, offset, on_progress)
    code = proc.returncode
    reason = "interrupted (SIGINT)" if interrupted else f"{death_reason(code, hung_s)}; see {log}"
    measurement: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    distributed = plan.processes > 1 or config.launch.nnodes > 1
    if config.launch.nnodes > 1 and code == 0 and not interrupted and not out.exists():
        measurement = {"elsewhere": True}
    elif distributed and not (measurement.get("complete") and measurement.get("ranks")):
        ranks, error = _partial_ranks(run_dir, reason)
        first = ranks[0] if ranks else {"steps": [], "windows": []}
        measurement = {**first, "ranks": ranks, "complete": False, "error": error}
    elif not (measurement.get("complete") or measurement.get("error")):
        measurement.update(complete=False, error=reason, steps=steps_from_log(progress), windows=[])
    elif interrupted and not measurement.get("error"):
        measurement["error"] = "interrupted (SIGINT)"
        measurement["complete"] = False
    return measurement, plan, code


def rank_environment(m: dict[str, Any]) -> dict[str, Any]:
    """What one rank read back about itself: host, CPUs/memory nodes, threads, OpenMP and allocator."""
    system = m.get("system", {})
    return {
        "rank": m.get("rank"),
        "hostname": system.get("host", {}).get("hostname"),
        "binding": system.get("binding"),
        "torch_threads": (system.get("torch") or {}).get("num_threads"),
        "omp_num_threads": system.get("env", {}).get("OMP_NUM_THREADS"),
        "loaded_libraries": system.get("loaded_libraries"),
        "error": m.get("error"),
    }


def build_result(
    config: RunConfig,
    opts: RunOptions,
    measurement: dict[str, Any],
    plan: LaunchPlan,
    run_id: str,
) -> Result:
    """Turn a rank's raw measurement into a sealed :class:`Result`.

    An incomplete measurement gives a result with status ``incomplete`` and no
    summary, diagnosis or cost: it can never pass for a score. A distributed
    measurement (``ranks``) keeps every rank's records; its environment is rank 0's
    plus, under ``ranks``, each rank's host, binding and threads as read back there.
    """
    ranks = measurement.get("ranks") or [measurement]
    steps = [StepRecord.from_dict(s) for m in ranks for s in m.get("steps", [])]
    windows = [WindowRecord.from_dict(w) for m in ranks for w in m.get("windows", [])]
    util = [UtilizationSample(**u) for u in measurement.get("utilization", [])]
    environment = dict(measurement.get("system", {}))
    if measurement.get("ranks"):
        environment["ranks"] = [rank_environment(m) for m in ranks]
    if plan.placement:  # what each local rank was meant to get, beside the binding read back in "ranks"
        environment["placement_plan"] = [{"local_rank": i, **slot} for i, slot in enumerate(plan.placement)]
    complete = bool(measurement.get("complete")) and all(m.get("complete") for m in ranks)
    error = measurement.get("error") or next((m["error"] for m in ranks if m.get("error")), None)
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
    division = division_for(config)  # the closed-division rules file (suite/data/division-rules.yaml)
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
    if measurement.get("elsewhere"):
        raise ResultElsewhere(
            f"this host's ranks finished; global rank 0 ran on another host of the {config.launch.nnodes}, "
            f"which wrote the result and logged the run (this host's rank logs: {run_dir})"
        )
    result = build_result(config, opts, measurement, plan, run_id)
    if result.status == "complete" and plan.placement and config.launch.compare_single:
        result = _with_single_comparison(result, config, opts, plan, run_dir, on_progress)
    if result.status != "complete":
        path = write_result(result, run_dir / "result-incomplete.json")
        if opts.tracking_uri:
            # the incomplete result is on disk; the RunError below is what matters
            _track(result, path, [], opts)
        interrupted = bool(result.error and result.error.startswith("interrupted"))
        raise RunError(
            f"run {'interrupted' if interrupted else 'failed'}: {result.error}. "
            f"The {len(result.steps)} steps measured are kept, marked incomplete, in {path} "
            f"(rank log: {run_dir / 'rank0.log'})",
            result_path=path,
            exit_code=130 if interrupted else (code if code and code > 0 else 1),
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
        outcome.mlflow_run_id, outcome.tracking_error = _track(result, result_path, [timeline], opts)
    return outcome


def _with_single_comparison(
    result: Result,
    config: RunConfig,
    opts: RunOptions,
    plan: LaunchPlan,
    run_dir: Path,
    on_progress: ProgressCallback | None,
) -> Result:
    """Measure one process on the ranks' CPUs at the same global batch; reseal ``result`` with the scaling.

    The comparison is skipped (scaling stays None, with a note in ``workload_info``)
    for multi-host runs, whose ranks' CPUs are not all on this host.

    If the comparison run fails or is interrupted, the run as a whole did not finish:
    the returned result is ``incomplete`` (no summary, so no score), keeps the ranks'
    measured steps, and its error says why (``interrupted ...`` for a signal, so the
    caller exits 130 and MLflow marks the run KILLED; otherwise FAILED).
    """
    if config.launch.nnodes > 1:
        info = {**result.workload_info, "scaling_note": "no single-process comparison across hosts"}
        return seal({**result.model_dump(), "workload_info": info})
    single_config = single_process_config(config, plan.placement)
    single_dir = run_dir / "single-process"
    single_dir.mkdir()
    measurement, single_plan, _ = launch_rank(single_config, single_dir, on_progress, opts.wrap)
    single = build_result(single_config, opts, measurement, single_plan, uuid.uuid4().hex)
    if single.summary is None or result.summary is None:
        why = single.error or "it gave no valid measurement"
        error = why if why.startswith("interrupted") else f"the single-process comparison failed: {why}"
        single_kept = write_result(single, single_dir / "result-incomplete.json")
        return seal(
            {
                **result.model_dump(),
                "status": "incomplete",
                "error": f"{error} (its records: {single_kept})",
                "summary": None,
                "utilization_summary": None,
                "diagnosis": None,
                "cost": None,
            }
        )
    single_path = write_result(single, single_dir / "result.json")
    fields = scaling(result.summary, single.summary)
    return seal(
        {
            **result.model_dump(),
            "scaling": {**fields, "single_result": str(single_path), "single_digest": single.digest},
        }
    )


def _track(result: Result, path: Path, artifacts: list[Path], opts: RunOptions) -> tuple[str | None, str | None]:
    """Log to MLflow; on failure queue the run in the outbox. Returns (run id, error)."""
    from suite.tracking import TrackingError, log_result

    assert opts.tracking_uri is not None
    try:
        return log_result(result, path, artifacts, opts.tracking_uri, opts.parent_run_id), None
    except TrackingError as exc:
        entry = OutboxEntry(str(path), [str(a) for a in artifacts], opts.tracking_uri, opts.parent_run_id, str(exc))
        queued = enqueue(opts.output_dir, result.run_id, entry)
        return None, f"{exc}\nThe run is queued in {queued}; push it later with `trainbench sync`."
