"""One trainbench result as an MLPerf Training log: ``:::MLLOG`` lines written by ``mlperf_logging.mllog``.

The log covers what the open-division training ruleset 4.0.0 requires of ``resnet``
(mlperf-logging 4.1.68, ``compliance_checker/training_4.0.0/common.yaml``,
``open_common.yaml``, ``open_resnet.yaml``):

- ``submission_benchmark/org/division/status/platform``; ``cache_clear`` (logged false:
  trainbench does not clear caches); ``seed``, ``global_batch_size``,
  ``gradient_accumulation_steps``, ``opt_name``, ``opt_base_learning_rate``,
  ``train_samples``, ``eval_samples``;
- ``init_start``/``init_stop`` (the rank's origin up to its first window), ``run_start``;
- one ``block_start``/``block_stop`` per window (warm-up and measurement, every repeat;
  ``samples_count`` and trainbench's phase in the metadata), a ``tracked_stats``
  ``{"throughput": samples/s}`` after each measurement window and one for the whole
  measurement (trainbench's headline: total samples / total measured seconds);
- ``eval_start``/``eval_stop``/``eval_accuracy`` from the run's evaluation pass, with
  ``epoch_num`` (fraction of the training set seen) and which data it was;
- ``run_stop`` with status ``aborted``: the run stopped after its windows, not at a
  quality target (MLPerf logs ``success`` only for a run that reached the target).

Timestamps: every interval is the run's own (ms resolution, the harness's clock). The
absolute time is anchored so the last event ends at the result's ``created_at`` (one
second resolution), since a result records no wall-clock start; the log says so.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from suite.results import Result
from suite.systems.mlperf_fields import SUBMISSION_STATUS, MLPerfSystemFields
from workloads.evaluation import EVALUATION_KEY

BENCHMARK = "resnet"
"""MLPerf's benchmark name for ResNet-50 image classification."""
SUITE_ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class Block:
    """Windows of one (repeat, phase) across ranks: total samples over the slowest rank's seconds."""

    repeat: int
    phase: str
    start_s: float
    seconds: float
    samples: int
    steps: int


def blocks(result: Result) -> list[Block]:
    """The result's windows, one block per (repeat, phase) in time order (ranks combined)."""
    groups: dict[tuple[int, str], list[Any]] = {}
    for w in result.windows:
        groups.setdefault((w.repeat, str(w.phase)), []).append(w)
    out = [
        Block(
            repeat=r,
            phase=phase,
            start_s=min(w.start_s for w in ws),
            seconds=max(w.seconds for w in ws),
            samples=sum(w.samples for w in ws),
            steps=max(w.steps for w in ws),
        )
        for (r, phase), ws in groups.items()
    ]
    return sorted(out, key=lambda b: b.start_s)


def global_batch_size(result: Result) -> int:
    """Samples per optimizer step over all ranks, from the first measured step of each rank."""
    first: dict[int, int] = {}
    for s in result.steps:
        if str(s.phase) == "measurement":
            first.setdefault(s.rank, s.samples)
    return sum(first.values())


def _origin_ms(result: Result, last_s: float) -> int:
    """Unix ms of the run's origin: the result's ``created_at`` less the last event's offset."""
    created = datetime.fromisoformat(result.provenance.created_at)
    return round(created.timestamp() * 1000) - math.ceil(last_s * 1000)


def _logger(path: Path) -> tuple[Any, logging.Handler]:
    """An MLLogger writing only to ``path`` (a fresh, unregistered logging.Logger: nothing leaks between files)."""
    from mlperf_logging.mllog.mllog import MLLogger

    handler = logging.FileHandler(path, mode="x", encoding="utf-8")
    handler.setLevel(logging.INFO)
    base = logging.Logger(f"trainbench.mlperf.{path.name}", logging.INFO)
    base.propagate = False
    base.addHandler(handler)
    return MLLogger(logger=base, default_namespace="", root_dir=str(SUITE_ROOT)), handler


@dataclass(frozen=True)
class Event:
    """One log line to write: ``kind`` is the MLLogger method (``start``, ``end`` or ``event``)."""

    key: str
    kind: str
    value: Any
    metadata: dict[str, Any]
    at_s: float


def write_mllog(result: Result, fields: MLPerfSystemFields, path: Path) -> None:
    """Write ``result`` as an MLPerf Training log at ``path`` (which must not exist).

    The caller has checked that ``result`` is complete and carries an evaluation record
    (:func:`suite.export.mlperf.check_exportable`).

    Raises:
        FileExistsError: ``path`` exists.
        ImportError: mlperf-logging is not installed.
    """
    todo = events(result, fields)
    origin = _origin_ms(result, max(e.at_s for e in todo))
    mllogger, handler = _logger(path)
    try:
        for e in todo:
            log = getattr(mllogger, e.kind)
            log(e.key, value=e.value, metadata=e.metadata or None, time_ms=origin + round(e.at_s * 1000))
    finally:
        handler.close()


def events(result: Result, fields: MLPerfSystemFields) -> list[Event]:
    """The log of ``result`` as events in time order (see the module docstring for what is logged).

    Raises:
        KeyError: the result has no evaluation record (check with ``check_exportable`` first).
    """
    from mlperf_logging.mllog import constants as c

    evaluation = result.workload_info[EVALUATION_KEY]
    params = result.config.params
    info = result.workload_info
    train_samples = int(info.get("train_samples") or info.get("dataset_samples") or 0)
    windows = blocks(result)
    first_s = windows[0].start_s if windows else 0.0
    out = [
        Event(c.SUBMISSION_BENCHMARK, "event", BENCHMARK, {}, 0.0),
        Event(c.SUBMISSION_ORG, "event", fields.submitter, {}, 0.0),
        Event(c.SUBMISSION_DIVISION, "event", c.OPEN, {}, 0.0),
        Event(c.SUBMISSION_STATUS, "event", SUBMISSION_STATUS[fields.status], {}, 0.0),
        Event(c.SUBMISSION_PLATFORM, "event", fields.system_name, {}, 0.0),
        Event("trainbench_export", "event", _provenance(result), {}, 0.0),
        Event(c.CACHE_CLEAR, "event", False, {"note": "trainbench does not clear caches before a run"}, 0.0),
        Event(c.INIT_START, "start", None, {"note": "the rank's origin, after the model and data were built"}, 0.0),
        Event(c.SEED, "event", params.get("seed"), {}, 0.0),
        Event(c.GLOBAL_BATCH_SIZE, "event", global_batch_size(result), {}, 0.0),
        Event(c.GRADIENT_ACCUMULATION_STEPS, "event", 1, {}, 0.0),
        Event(c.OPT_NAME, "event", c.SGD, {"momentum": params.get("momentum")}, 0.0),
        Event(c.OPT_BASE_LR, "event", params.get("lr"), {}, 0.0),
        Event(c.TRAIN_SAMPLES, "event", train_samples, {}, 0.0),
        Event(c.EVAL_SAMPLES, "event", evaluation["samples"], {}, 0.0),
        Event(c.INIT_STOP, "end", None, {}, first_s),
        Event(c.RUN_START, "start", None, {}, first_s),
    ]
    summary = result.summary
    out += _block_events(windows, summary.throughput if summary else None, summary.throughput_ci95 if summary else None)
    trained = sum(b.samples for b in windows)
    epoch = round(trained / train_samples, 6) if train_samples else 0.0
    at = {c.EPOCH_NUM: epoch, c.SAMPLES_COUNT: trained}
    start_s, end_s = evaluation["start_s"], evaluation["start_s"] + evaluation["seconds"]
    about = {k: evaluation.get(k) for k in ("metric", "split", "dataset", "samples", "chance_accuracy", "precision")}
    stop = {
        c.STATUS: c.ABORTED,
        "reason": "trainbench stops after its measurement windows, not at a quality target (MLPerf logs success "
        "only for a run that reached it)",
        c.EPOCH_NUM: epoch,
    }
    out += [
        Event(c.EVAL_START, "start", None, dict(at), start_s),
        Event(c.EVAL_STOP, "end", None, dict(at), end_s),
        Event(c.EVAL_ACCURACY, "event", evaluation["accuracy"], {**at, **about}, end_s),
        Event(c.RUN_STOP, "end", None, stop, end_s),
    ]
    return out


def _block_events(windows: list[Block], throughput: float | None, ci: Any) -> list[Event]:
    """block_start/block_stop per window, tracked_stats after each measurement window and for the whole measurement."""
    out: list[Event] = []
    done = measured = 0
    measured_s = 0.0
    for b in windows:
        meta = {"samples_count": b.samples, "trainbench_phase": b.phase, "repeat": b.repeat, "steps": b.steps}
        end = b.start_s + b.seconds
        out.append(Event("block_start", "start", None, {**meta, "trained_samples": done}, b.start_s))
        done += b.samples
        out.append(Event("block_stop", "end", None, {**meta, "trained_samples": done, "seconds": b.seconds}, end))
        if b.phase == "measurement":
            measured += b.samples
            measured_s += b.seconds
            stats = {"step": done, "unit": "samples/s", "trainbench_phase": b.phase, "repeat": b.repeat}
            out.append(Event("tracked_stats", "event", {"throughput": b.samples / b.seconds}, stats, end))
    if windows and throughput is not None:
        value: dict[str, Any] = {"throughput": throughput}
        if ci is not None:
            value.update(throughput_ci95_low=ci.low, throughput_ci95_high=ci.high)
        how = f"all measurement windows: {measured} samples / {measured_s:.3f} s"
        meta2 = {"step": done, "unit": "samples/s", "aggregate": how}
        out.append(Event("tracked_stats", "event", value, meta2, windows[-1].start_s + windows[-1].seconds))
    return out


def _provenance(result: Result) -> dict[str, Any]:
    return {
        "note": "a format bridge so MLPerf tools can read a trainbench run; not an MLPerf result",
        "run_id": result.run_id,
        "digest": result.digest,
        "workload": result.workload,
        "profile": result.profile,
        "trainbench_division": result.division,
        "suite_version": result.provenance.suite_version,
        "git_commit": result.provenance.git_commit,
        "created_at": result.provenance.created_at,
        "clock": "intervals from the run's own clock; absolute times anchored at created_at (1 s resolution)",
    }
