"""Real results for the validator's tests, produced by the real suite.

Two real rank launches of a tiny ResNet-50 (batch 2, 64x64 images) give the raw
records; ``suite.run.assemble.build_result`` turns each repeat into a sealed result, as a
run of one repeat would have been. From them: an open-division set of 5 runs, a
closed-division set of 5 runs (the official profile of a test spec directory whose
official profile is that tiny config), and a set whose measurement windows were
made to drift (for the steady-state check).
"""

from __future__ import annotations

import copy
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.precision import recorded_choice
from suite.launchers import LaunchPlan
from suite.results import Result, seal
from suite.rules import load_rules
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.runtimes.base import RunContext
from suite.runtimes.supervise import launch_rank
from suite.specs import SPECS_DIR, RunConfig, resolve
from tests.conftest import TINY_RUN
from workloads.measurement import RankMeasurement

SYSTEM = "test-box"
SUBMITTER = "acme"
PRICE = 0.5
RUNS = 5
TINY = [item for item in TINY_RUN if item != "--set"]
"""TINY_RUN as ``resolve`` overrides (key=value)."""
TINY_OFFICIAL = {
    "windows": {
        "warmup_steps": 1,
        "warmup_seconds": 0,
        "measure_steps": 3,
        "measure_seconds": 0,
        "repeats": 1,
        "sampler_interval_s": 0.1,
    },
    "params": {
        "batch_size": 2,
        "image_size": 64,
        "precision": "bf16",
        "channels_last": True,
        "compile": "off",
        "num_workers": 0,
        "data": "synthetic",
    },
    "launch": {"launcher": "inline", "allocator": "default"},
}
"""The test specs' official profile: the same settings as TINY_RUN with repeats=1."""


@dataclass
class RealRuns:
    """Sealed results built from real measurements (see the module docstring)."""

    open: list[Result]
    closed: list[Result]
    trending: list[Result]
    incomplete: Result
    specs_dir: Path
    open_config: RunConfig
    closed_config: RunConfig
    plan: LaunchPlan
    measurement: dict[str, Any]
    long_measurement: dict[str, Any] | None = None
    long_config: RunConfig | None = None


def one_repeat(measurement: dict[str, Any], repeat: int) -> dict[str, Any]:
    """The measurement of one repeat, as a single-repeat run would have recorded it.

    Its records and the sampler's readings count from an origin of its own, as long before its
    warm-up as the real run's origin was before repeat 0's; it keeps the readings taken from one
    sampler interval after that origin to the end of its measurement window, as its own sampler
    would have. Each such run has an identity of its own (a run uid, and a start time one hour per
    repeat earlier than the last), as separate runs would, and was measured on a quiet machine
    (:func:`quiet`: this shared test machine is never quiet; the interference check has cases of
    its own).
    """
    out = copy.deepcopy(measurement)
    mine = [w for w in measurement["windows"] if w["repeat"] == repeat]
    lead = min(w["start_s"] for w in measurement["windows"])  # the real run's origin before its first window
    shift = min(w["start_s"] for w in mine) - lead
    end = max(w["start_s"] + w["seconds"] for w in mine)
    first_reading = min((u["t_s"] for u in measurement.get("utilization", [])), default=0.0)
    out["steps"] = [
        {**s, "repeat": 0, "start_s": s["start_s"] - shift} for s in measurement["steps"] if s["repeat"] == repeat
    ]
    out["windows"] = [{**w, "repeat": 0, "start_s": w["start_s"] - shift} for w in mine]
    out["utilization"] = [
        quiet({**u, "t_s": u["t_s"] - shift})
        for u in measurement.get("utilization", [])
        if shift + first_reading <= u["t_s"] <= end
    ]
    out["run_uid"] = uuid.uuid4().hex
    if out.get("origin_unix_s") is not None:
        out["origin_unix_s"] += shift - 3600.0 * (RUNS - repeat)
    return out


def quiet(reading: dict[str, Any]) -> dict[str, Any]:
    """A utilization reading as a quiet machine gives it: no other process's CPU time, no steal, and the
    cores only as busy as the run kept them (the per-core utilization lowered by what is removed)."""
    hidden = sum(reading.get(k) or 0.0 for k in ("others_cpu_s", "steal_s"))
    out = {**reading, **{k: 0.0 for k in ("others_cpu_s", "steal_s") if reading.get(k) is not None}}
    machine, cores = reading.get("machine_cpu_s"), reading.get("cpu_percent") or []
    if hidden > 0 and machine and cores:
        busy = sum(cores) / 100 / len(cores) * machine
        scale = max(0.0, busy - hidden) / busy if busy > 0 else 0.0
        out["cpu_percent"] = [round(c * scale, 1) for c in cores]
    return out


def as_configured(measurement: dict[str, Any], config: RunConfig) -> dict[str, Any]:
    """The measurement with the precision decision a rank given ``config`` makes on the same host (the
    runs were launched with the quick profile's ``precision``; the official profile of the test specs
    names another, which decides the same on a native-bf16 CPU)."""
    out = copy.deepcopy(measurement)
    choice = recorded_choice(str(config.params["precision"]), out["system"])
    if choice is not None:
        out["workload_info"]["precision"] = choice.to_dict()
    return out


def with_drift(measurement: dict[str, Any], per_step: float = 0.5) -> dict[str, Any]:
    """The measurement with its measured steps made to trend upward.

    The real compute times are put in rising order and step ``i`` is slowed by
    ``per_step`` x i, so the trend holds whatever the machine's noise was. Step starts
    and the window length are recomputed, so the records stay consistent.
    """
    out = copy.deepcopy(measurement)
    [window] = [w for w in out["windows"] if w["phase"] == "measurement"]
    measured = [s for s in out["steps"] if s["phase"] == "measurement"]
    times = sorted(s["compute_s"] for s in measured)
    t = window["start_s"]
    for s, compute in zip(measured, times, strict=True):
        s["compute_s"] = compute * (1 + per_step * s["index"])
        s["start_s"] = t
        t += s["data_wait_s"] + s["compute_s"]
    window["seconds"] = t - window["start_s"]
    return out


def build(config: RunConfig, measurement: dict[str, Any], plan: LaunchPlan, tmp: Path) -> Result:
    """A sealed result of ``measurement`` on the test system, priced at PRICE USD/hour."""
    opts = RunOptions(output_dir=tmp, tracking_uri=None, system=SYSTEM, price_per_hour=PRICE)
    return build_result(config, opts, RankMeasurement.model_validate(measurement), plan, uuid.uuid4().hex)


def reseal(result: Result, **changes: Any) -> Result:
    """``result`` with top-level fields changed and a freshly computed digest (what a forger can do)."""
    doc = result.model_dump(mode="json")
    doc.update(changes)
    doc.pop("digest")
    return seal(doc)


def write_test_specs(directory: Path) -> Path:
    """A spec directory whose resnet50-cpu official profile is the tiny config."""
    directory.mkdir(parents=True, exist_ok=True)
    spec = yaml.safe_load((SPECS_DIR / "resnet50-cpu.yaml").read_text())
    spec["profiles"]["official"] = {"description": "tiny official profile for tests", **TINY_OFFICIAL}
    (directory / "resnet50-cpu.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return directory


@pytest.fixture(scope="session")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> RealRuns:
    """Two real launches of the tiny ResNet-50 (about 20 s on 2 cores), split into sealed results."""
    tmp = tmp_path_factory.mktemp("real-runs")
    specs_dir = write_test_specs(tmp / "specs")
    # the quick profile's time budget (150 s) would cut the windows of a loaded machine's runs short
    many = [*TINY, f"repeats={RUNS}", "budget_s=3600"]
    launch_config = resolve("resnet50-cpu", "quick", many)
    (tmp / "a").mkdir()
    first = launch_rank(launch_config, tmp / "a", RunContext(uuid.uuid4().hex))
    ran, plan, code = first.measurement, first.plan, first.code
    assert code == 0 and ran is not None and ran.complete, ran and ran.error
    measurement = ran.to_json()  # plain JSON, as the rank wrote it: the cases below edit it
    (tmp / "b").mkdir()
    long_config = resolve("resnet50-cpu", "quick", [*many, "measure_steps=8"])
    second = launch_rank(long_config, tmp / "b", RunContext(uuid.uuid4().hex))
    ran_long, code = second.measurement, second.code
    assert code == 0 and ran_long is not None and ran_long.complete, ran_long and ran_long.error
    long_measurement = ran_long.to_json()

    open_config = resolve("resnet50-cpu", "quick", [*TINY, "repeats=1"])
    closed_config = resolve("resnet50-cpu", "official", [], directory=specs_dir)
    trending_config = resolve("resnet50-cpu", "quick", [*TINY, "repeats=1", "measure_steps=8"])
    open_results = [build(open_config, one_repeat(measurement, r), plan, tmp) for r in range(RUNS)]
    # the runner labels by the real specs (official = batch 128); under the test specs this
    # config is the official one, so these runs are closed-division runs of the test suite
    closed_results = [
        reseal(
            build(closed_config, as_configured(one_repeat(measurement, r), closed_config), plan, tmp), division="closed"
        )
        for r in range(RUNS)
    ]
    trending = [build(trending_config, with_drift(one_repeat(long_measurement, r)), plan, tmp) for r in range(RUNS)]
    partial = one_repeat(measurement, 0)
    partial.update(
        complete=False,
        error="interrupted (SIGINT)",
        steps=partial["steps"][:2],
        windows=[w for w in partial["windows"] if w["phase"] == "warmup"],
    )
    incomplete = build(open_config, partial, plan, tmp)
    assert load_rules().min_runs == RUNS
    return RealRuns(
        open_results,
        closed_results,
        trending,
        incomplete,
        specs_dir,
        open_config,
        closed_config,
        plan,
        measurement,
        long_measurement,
        long_config,
    )


@pytest.fixture
def specs_copy(real_runs: RealRuns, tmp_path: Path) -> Path:
    """A private copy of the test spec directory."""
    return Path(shutil.copytree(real_runs.specs_dir, tmp_path / "specs"))
