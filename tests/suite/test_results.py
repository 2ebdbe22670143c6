"""Result file: schema kept in sync, round trip, digest catches edits, versions refused clearly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from suite.launchers import InlineLaunch, LaunchPlan, TorchrunLaunch
from suite.results import (
    SCHEMA_PATH,
    SCHEMA_VERSION,
    Result,
    ResultError,
    compute_digest,
    json_schema,
    read_result,
    seal,
    verify_digest,
    write_result,
)
from suite.results.migrations import update_to_2
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.specs import resolve
from tests.conftest import REPO
from workloads.measurement import RankMeasurement


def _measurement(complete: bool = True) -> dict[str, Any]:
    steps, windows, t = [], [], 0.0
    for repeat in range(2):
        for phase, n in (("warmup", 2), ("measurement", 5)):
            start = t
            for i in range(n):
                steps.append(
                    {
                        "repeat": repeat,
                        "phase": phase,
                        "index": i,
                        "start_s": t,
                        "data_wait_s": 0.01,
                        "compute_s": 0.19 + 0.001 * i,
                        "samples": 16,
                    }
                )
                t += 0.2 + 0.001 * i
            windows.append(
                {
                    "repeat": repeat,
                    "phase": phase,
                    "start_s": start,
                    "seconds": t - start,
                    "steps": n,
                    "samples": 16 * n,
                }
            )
    util = [{"t_s": x / 2, "cpu_percent": [90.0, 80.0], "rss_bytes": 10**9} for x in range(1, 6)]
    return {
        "rank": 0,
        "world_size": 1,
        "complete": complete,
        "error": None if complete else "interrupted (SIGINT)",
        "steps": steps,
        "windows": windows,
        "utilization": util,
        "system": {"host": {"hostname": "box"}, "cpu": {"model": "Test CPU"}},
        "workload_info": {},
    }


def _written(tmp_path: Path, complete: bool = True) -> Path:
    config = resolve("resnet50-cpu", None, ["batch_size=16"])
    result = build_result(
        config,
        RunOptions(tmp_path, None, price_per_hour=1.0),
        RankMeasurement.model_validate(_measurement(complete)),
        LaunchPlan(command=["python", "-m", "workloads.rank"]),
        "ab" * 16,
    )
    return write_result(result, tmp_path / "result.json")


def test_committed_schema_matches_the_model() -> None:
    committed = json.loads(SCHEMA_PATH.read_text())
    assert committed == json.loads(json.dumps(json_schema())), "run `make schema` and commit the schema file"


def test_round_trip_and_schema(tmp_path: Path) -> None:
    path = _written(tmp_path)
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    result = read_result(path)
    assert result.status == "complete" and result.system == "box"
    assert result.summary is not None
    assert result.summary.measured_samples == 2 * 5 * 16
    assert result.summary.throughput == pytest.approx(
        160 / sum(w["seconds"] for w in doc["windows"] if w["phase"] == "measurement")
    )
    assert result.cost is not None and result.cost.samples_per_dollar == pytest.approx(result.summary.throughput * 3600)
    assert result.diagnosis is not None and result.diagnosis.verdict == "compute-bound"
    again = write_result(result, tmp_path / "again.json")
    assert json.loads(again.read_text()) == doc


def test_edited_number_is_caught(tmp_path: Path) -> None:
    path = _written(tmp_path)
    doc = json.loads(path.read_text())
    assert verify_digest(doc)
    doc["summary"]["throughput"] *= 1.5
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultError, match="digest mismatch"):
        read_result(path)
    with pytest.raises(ResultError, match=r"summary.throughput is .* but the raw records give"):
        read_result(path, check_digest=False)  # a resealed forgery is caught by recomputation


def test_resealed_forgery_is_caught(tmp_path: Path) -> None:
    from suite.results import compute_digest

    path = _written(tmp_path)
    doc = json.loads(path.read_text())
    doc["summary"]["measured_samples"] += 16
    doc["digest"] = compute_digest(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultError, match="measured_samples"):
        read_result(path)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(tmp_path: Path, token: str) -> None:
    path = _written(tmp_path)
    text = path.read_text()
    doc = json.loads(text)
    value = json.dumps(doc["summary"]["throughput"])
    path.write_text(text.replace(f'"throughput": {value}', f'"throughput": {token}', 1))
    with pytest.raises(ResultError, match=f"the number {token} is not JSON"):
        read_result(path, check_digest=False)


def test_unknown_schema_version_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = _written(tmp_path)
    doc = json.loads(path.read_text())
    doc["schema_version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultError, match="schema_version 99 is not supported; this trainbench reads version 1 and 2"):
        read_result(path)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("steps"),
        lambda d: d.update(status="great"),
        lambda d: d["steps"][0].update(samples="many"),
        lambda d: d.update(unexpected=1),
    ],
)
def test_schema_violations_are_refused(tmp_path: Path, mutate: Any) -> None:
    path = _written(tmp_path)
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultError, match="schema error"):
        read_result(path)


def test_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{not json")
    with pytest.raises(ResultError, match="cannot read result"):
        read_result(path)


def test_incomplete_measurement_never_gets_a_score(tmp_path: Path) -> None:
    result = read_result(_written(tmp_path, complete=False))
    assert result.status == "incomplete"
    assert result.summary is None and result.cost is None and result.diagnosis is None
    assert len(result.steps) == 14  # the raw records are kept


COMMITTED_V1 = sorted((REPO / "submissions" / "trainbench" / "results").rglob("result_*.json"))


def test_committed_v1_results_are_checked_as_stored_then_upgraded() -> None:
    """The committed schema-1 results: digest and v1 schema on the stored document, then update_to_2."""
    assert len(COMMITTED_V1) == 10
    for path in COMMITTED_V1:
        stored = json.loads(path.read_text())
        assert stored["schema_version"] == 1 and "topology" in stored["config"]["launch"]
        result = read_result(path)
        assert result.schema_version == SCHEMA_VERSION == 2
        assert result.digest == stored["digest"]  # the file's identity, which bands cite, is kept
        assert isinstance(result.config.launch, InlineLaunch)
        launch = result.config.launch.model_dump()
        assert "topology" not in launch and "nnodes" not in launch and "compare_single" not in launch
        assert launch == {k: v for k, v in stored["config"]["launch"].items() if k in launch}


def test_update_to_2_keeps_only_the_launchers_settings() -> None:
    doc = json.loads(COMMITTED_V1[0].read_text())
    doc["config"]["launch"].update(launcher="torchrun", topology="0;1", cpus=None)
    up = update_to_2(doc)
    assert up["schema_version"] == 2 and doc["schema_version"] == 1  # the input is not modified
    launch = up["config"]["launch"]
    assert launch["topology"] == "0;1" and launch["nnodes"] == 1 and "cpus" not in launch
    assert launch["allocator"] == "default" and launch["stall_timeout_s"] == 600.0
    assert isinstance(Result.model_validate(up).config.launch, TorchrunLaunch)
    del doc["config"]["launch"]["launcher"]  # a v1 launch without a launcher was inline
    assert update_to_2(doc)["config"]["launch"]["launcher"] == "inline"


def test_an_edited_v1_result_fails_its_digest_before_any_upgrade(tmp_path: Path) -> None:
    doc = json.loads(COMMITTED_V1[0].read_text())
    doc["config"]["launch"]["topology"] = "0;1"  # dropped by update_to_2: only the stored digest can see it
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultError, match="digest mismatch"):
        read_result(path)
    doc["config"]["launch"]["bogus"] = 1  # not in the v1 schema: checked as stored too
    path.write_text(json.dumps({**doc, "digest": compute_digest(doc)}))
    with pytest.raises(ResultError, match="schema error"):
        read_result(path)


def test_an_upgraded_result_is_written_only_once_sealed_again(tmp_path: Path) -> None:
    upgraded = read_result(COMMITTED_V1[0])
    with pytest.raises(ResultError, match="seal it before writing it"):
        write_result(upgraded, tmp_path / "r.json")
    resealed = seal({k: v for k, v in upgraded.model_dump().items() if k != "digest"})
    again = read_result(write_result(resealed, tmp_path / "r.json"))
    assert again.schema_version == 2 and again.digest == resealed.digest != upgraded.digest
