"""Fuzzing that follows the forger (issue 35, item 4): Hypothesis edits a REAL result field by field,
recomputes the summary with the project's own code and seals it again (``tests/validation/forgery.py``).

Every edit that makes the result physically impossible must be refused with the finding of its class,
and no honest variation (a run at another time, on another price, under more interference honestly
recorded, with its sampler stopped a little early...) may draw a physical finding. Each edit's
oracle says in physical terms when it is impossible; the bounds are the checks' documented tolerances
(``suite/validation/sampler_checks.py``, ``timestamps.py``), measured from real runs.
"""

from __future__ import annotations

import copy
import functools
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suite.results import Result
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.runtimes.base import RunContext
from suite.runtimes.supervise import launch_rank
from suite.specs import resolve
from suite.validation.sampler_checks import TEARDOWN_S
from tests.conftest import TINY_RUN
from tests.validation import forgery
from workloads.measurement import RankMeasurement

PHYSICAL = frozenset(
    {
        "clock-mismatch",
        "cpu-time-impossible",
        "interference-hidden",
        "isa-inconsistent",
        "precision-impossible",
        "device-impossible",
        "timestamps",
        "environment-inconsistent",
    }
)
"""The physical checks' codes (``records`` too covers overlapping steps, but also arithmetic)."""
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@functools.cache
def real_doc() -> dict[str, Any]:
    """One real tiny ResNet-50 launch of 2 repeats, built as the runner builds it (as JSON)."""
    overrides = [o for o in TINY_RUN if o != "--set" and not o.startswith("repeats=")] + ["repeats=2", "budget_s=3600"]
    config = resolve("resnet50-cpu", "quick", overrides)
    with tempfile.TemporaryDirectory() as tmp:
        ran = launch_rank(config, Path(tmp), RunContext(uuid.uuid4().hex))
        measurement, plan, code = ran.measurement, ran.plan, ran.code
        assert code == 0 and measurement is not None and measurement.complete, measurement and measurement.error
        opts = RunOptions(output_dir=Path(tmp), tracking_uri=None, system="fuzz-box", price_per_hour=0.5)
        raw = RankMeasurement.model_validate(measurement.model_dump())
        doc = build_result(config, opts, raw, plan, uuid.uuid4().hex).model_dump(mode="json")
    assert forgery.codes(doc) == set(), [f.message for f in forgery.errors(doc)]
    return doc


def _physical(result: Result) -> set[str]:
    return forgery.codes(result) & PHYSICAL


def _timed_end(doc: dict[str, Any]) -> float:
    return max(float(w["start_s"]) + float(w["seconds"]) for w in doc["windows"])


@FUZZ
@given(factor=st.floats(0.3, 0.95))
def test_any_shortening_of_the_windows_clock_is_caught(factor: float) -> None:
    doc = real_doc()
    forged = forgery.resealed(forgery.scale_windows(doc, factor))
    interval = doc["config"]["windows"]["sampler_interval_s"]
    last_reading = max(u["t_s"] for u in doc["utilization"])
    outlasts = last_reading - factor * _timed_end(doc)  # how long the readings outlast the (forged) timed work
    if outlasts > TEARDOWN_S + interval:  # impossible: the rank stops its sampler as the work ends
        assert "clock-mismatch" in _physical(forged)


@FUZZ
@given(factor=st.floats(0.3, 0.97))
def test_any_rescaling_of_the_readings_clock_is_caught(factor: float) -> None:
    doc = real_doc()
    forged = forgery.resealed(forgery.scale_sampler(forgery.scale_windows(doc, factor), factor))
    assert "clock-mismatch" in _physical(forged)  # readings closer than the interval: never possible


@FUZZ
@given(keep=st.sets(st.sampled_from(["avx2", "avx512f", "avx512_vnni", "avx512_fp16", "avx_vnni", "amx_tile"])))
def test_any_isa_without_bf16_under_a_native_bf16_claim_is_caught(keep: set[str]) -> None:
    doc = real_doc()
    if not doc["workload_info"]["precision"]["bf16_native"]:
        pytest.skip("this CPU runs no native bf16, so no run here claims it")
    assert "precision-impossible" in _physical(forgery.resealed(forgery.downgrade_isa(doc, frozenset(keep))))


@FUZZ
@given(
    name=st.text(min_size=1, max_size=40).filter(lambda n: n.strip().lower() != "cpu"),
    device=st.sampled_from(["cuda:0", "cuda", "gpu", "cpu"]),
)
def test_any_gpu_named_without_a_recorded_gpu_is_caught(name: str, device: str) -> None:
    forged = forgery.resealed(forgery.relabel_gpu(real_doc(), name, device))
    assert "device-impossible" in _physical(forged)


@FUZZ
@given(seconds=st.floats(-1e7, 1e7).filter(lambda s: abs(s) > 0.01))
def test_any_start_time_moved_apart_from_its_origin_is_caught(seconds: float) -> None:
    doc = copy.deepcopy(real_doc())
    doc["started_at"] = _iso(doc["origin_unix_s"] + seconds)
    assert "timestamps" in _physical(forgery.resealed(doc))


@FUZZ
@given(seconds=st.floats(0, 1e7))
def test_a_run_moved_in_time_is_possible_only_before_its_result(seconds: float) -> None:
    """Origin and start time moved together: earlier is an honest run at another time; later than
    the result's creation (less the clocks' slack) is impossible."""
    doc = real_doc()
    created = datetime.fromisoformat(doc["provenance"]["created_at"]).timestamp()
    for sign in (-1, 1):
        moved = {**doc, "origin_unix_s": doc["origin_unix_s"] + sign * seconds}
        moved["started_at"] = _iso(moved["origin_unix_s"])
        found = _physical(forgery.resealed(moved))
        ends = moved["origin_unix_s"] + _timed_end(doc)
        if sign < 0 or ends <= created + 1.0:
            assert found == set(), found
        elif ends > created + 2.0 + 1e-3:
            assert "timestamps" in found


@FUZZ
@given(share=st.floats(0.3, 0.6))
def test_interference_removed_from_the_readings_is_caught(share: float) -> None:
    doc = copy.deepcopy(real_doc())
    doc["utilization"] = [forgery.disturb(u, share) for u in doc["utilization"]]
    honest = forgery.resealed(doc)
    assert _physical(honest) == set()  # interference honestly recorded is a possible run
    for u in doc["utilization"]:
        u["others_cpu_s"] = 0.0
    assert "interference-hidden" in _physical(forgery.resealed(doc))


@FUZZ
@given(data=st.data())
def test_honest_variations_are_never_physical_findings(data: st.DataObject) -> None:
    """What a real run could have recorded differently draws no physical finding."""
    doc = copy.deepcopy(real_doc())
    doc["run_id"], doc["run_uid"] = uuid.uuid4().hex, uuid.uuid4().hex
    doc["system"] = data.draw(st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=20))
    doc["cost"]["usd_per_hour"] = data.draw(st.floats(0.01, 100.0))
    readings = doc["utilization"]
    keep = data.draw(st.integers(max(1, len(readings) - 3), len(readings)))  # the sampler stopped a little early
    doc["utilization"] = [
        {**u, "cpu_percent": data.draw(st.permutations(u["cpu_percent"]))}  # which core was busy
        for u in readings[:keep]
    ]
    if data.draw(st.booleans()):
        doc["utilization"] = [forgery.disturb(u, data.draw(st.floats(0.0, 0.5))) for u in doc["utilization"]]
    assert _physical(forgery.resealed(doc)) == set()


@FUZZ
@given(cores=st.integers(1, 512))
def test_a_core_count_the_readings_contradict_is_caught(cores: int) -> None:
    doc = copy.deepcopy(real_doc())
    seen = len(doc["utilization"][0]["cpu_percent"])
    doc["environment"]["cpu"]["logical_cores"] = cores
    found = _physical(forgery.resealed(doc))
    in_container = doc["environment"]["container"]["in_container"]  # lxcfs may hide cores from /proc/stat
    assert ("environment-inconsistent" in found) == (cores < seen or (cores > seen and not in_container))


def _iso(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="milliseconds")
