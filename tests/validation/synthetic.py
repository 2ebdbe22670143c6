"""Results built through the real ``build_result`` from generated raw records, for the checks that need
records of a chosen shape (many ranks, forged timings) without a training run; the validator's
acceptance on real runs is in ``test_validator.py`` and ``test_multirank.py``."""

from __future__ import annotations

import copy
import functools
import tempfile
import uuid
from pathlib import Path
from typing import Any

from suite.bench.validation import synthetic_measurement
from suite.launchers import LaunchPlan
from suite.results import Result, seal
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.specs import resolve
from workloads.measurement import RankMeasurement


@functools.cache
def _system() -> dict[str, Any]:
    """This machine's environment, read back as a rank does (so system descriptions can be made)."""
    from harness.system import capture_system

    return capture_system()


QUICK = ["warmup_steps=1", "warmup_seconds=0", "measure_seconds=0", "repeats=1"]


def measurement(steps: int = 40, seed: int = 1, ranks: int = 1, warmup: int = 1) -> dict[str, Any]:
    """A quiet one-repeat measurement (:func:`suite.bench.validation.synthetic_measurement`), with ``ranks``
    ranks that recorded the same timings."""
    one = {**synthetic_measurement(steps, seed, warmup), "system": _system()}
    _on_this_machine(one)
    if ranks == 1:
        return one
    per_rank = []
    for r in range(ranks):
        m = copy.deepcopy(one)
        for rec in m["steps"]:
            rec["rank"] = r
        for w in m["windows"]:
            w["rank"] = r
        per_rank.append({**m, "rank": r, "world_size": ranks, "utilization": []})
    return {**one, "world_size": ranks, "ranks": per_rank, "workload_info": {"per_rank_batch_size": 16}}


def _on_this_machine(raw: dict[str, Any]) -> None:
    """Make a synthetic measurement physically possible where the tests run: its origin far enough in
    the past that the run ended before its result is created, and the sampler's readings those of
    this machine's cores (each offering its share of the 0.5 s between readings, as busy as the run's
    CPU time makes them)."""
    end = max(w["start_s"] + w["seconds"] for w in raw["windows"])
    raw["origin_unix_s"] -= end + 5.0
    cores = int(raw["system"]["cpu"]["logical_cores"])
    for r in raw["utilization"]:
        r["machine_cpu_s"] = round(0.5 * cores, 2)
        r["cpu_percent"] = [round(100 * r["run_cpu_s"] / r["machine_cpu_s"], 1)] * cores


def result(steps: int = 40, seed: int = 1, ranks: int = 1, profile: str = "quick", system: str = "test-box") -> Result:
    """A sealed result of :func:`measurement` under ``profile`` (quick: open division; official: closed)."""
    overrides = [*QUICK, f"measure_steps={steps}"] if profile == "quick" else []
    config = resolve("resnet50-cpu", profile, overrides)
    warmup = config.windows.warmup_steps
    with tempfile.TemporaryDirectory() as tmp:
        opts = RunOptions(output_dir=Path(tmp), tracking_uri=None, system=system, price_per_hour=0.5)
        raw = RankMeasurement.model_validate(measurement(max(steps, config.windows.measure_steps), seed, ranks, warmup))
        return build_result(config, opts, raw, LaunchPlan(command=["python"]), uuid.uuid4().hex)


def forged(r: Result, **changes: Any) -> Result:
    """``r`` with fields changed (dotted paths into dicts, e.g. ``summary.throughput``) and a fresh digest."""
    doc = r.model_dump(mode="json")
    for path, value in changes.items():
        node = doc
        *parents, last = path.split(".")
        for p in parents:
            node = node[p]
        node[last] = value
    doc.pop("digest")
    return seal(doc)


def fresh_identity(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (a result as JSON) with a new run id, run uid and start time, as a forger would give a copy."""
    return {
        **doc,
        "run_id": uuid.uuid4().hex,
        "run_uid": uuid.uuid4().hex,
        "started_at": "2031-01-01T00:00:00.000+00:00",
    }
