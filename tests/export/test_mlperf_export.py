"""`export_mlperf` on a real run: the official MLPerf checkers pass, and the log carries what was measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mlperf_logging.compliance_checker.mlp_parser import parse_file

from suite.export.checkers import check_result_log, check_system_description
from suite.export.mlperf import ExportError, export_mlperf
from suite.export.system_desc import mlperf_fields
from suite.results import Result, read_result, seal, write_result
from suite.systems import Price, describe
from tests.export.conftest import EVAL_SAMPLES, SUBMITTER, SYSTEM


def _export(result: Path, out: Path) -> tuple[Path, Path]:
    outcome = export_mlperf([result], out, submitter=SUBMITTER)
    assert outcome.system_file == out / "systems" / f"{SYSTEM}.json"
    assert outcome.result_files == [out / "results" / SYSTEM / "resnet" / "result_0.txt"]
    return outcome.system_file, outcome.result_files[0]


def test_official_checkers_pass_on_an_exported_real_run(evaluated_run: Path, tmp_path: Path) -> None:
    system_file, log = _export(evaluated_run, tmp_path / "export")

    sd = check_system_description(system_file)
    print("$", " ".join(sd.command), f"(exit {sd.returncode})\n{sd.output}")
    assert sd.passed, sd.errors
    assert f"System description checker passed for {SYSTEM}" in sd.output

    cc = check_result_log(log)
    print("$", " ".join(cc.command), f"(exit {cc.returncode})\n{cc.output}")
    assert cc.passed, cc.errors
    assert cc.returncode == 0 and "SUCCESS" in cc.output
    # the log's own lines chose the rule files: the open division's, and resnet's
    assert "training_4.0.0/open_common.yaml" in cc.output and "training_4.0.0/open_resnet.yaml" in cc.output


def _lines(log: Path) -> list[Any]:
    raw = log.read_text().splitlines()
    assert raw and all(line.startswith(":::MLLOG {") for line in raw)
    lines, errors = parse_file(str(log), ruleset="4.0.0")
    assert not errors and len(lines) == len(raw)
    return list(lines)


def test_the_log_carries_what_the_run_measured(evaluated_run: Path, tmp_path: Path) -> None:
    result = read_result(evaluated_run)
    evaluation = result.workload_info["evaluation"]
    assert result.summary is not None
    _, log = _export(evaluated_run, tmp_path / "export")
    lines = _lines(log)
    first = {ll.key: ll.value for ll in reversed(lines)}  # the first line of each key
    last = {ll.key: ll.value for ll in lines}

    assert first["submission_division"]["value"] == "open"
    assert first["submission_benchmark"]["value"] == "resnet"
    assert first["submission_org"]["value"] == SUBMITTER and first["submission_platform"]["value"] == SYSTEM
    assert first["global_batch_size"]["value"] == 2
    assert first["eval_samples"]["value"] == EVAL_SAMPLES == evaluation["samples"]
    assert first["trainbench_export"]["value"]["digest"] == result.digest

    # eval_accuracy is the evaluation pass's, and says which data it was
    accuracy = last["eval_accuracy"]
    assert accuracy["value"] == evaluation["accuracy"]
    assert 0 <= accuracy["value"] <= 1
    assert accuracy["metadata"]["split"] == "synthetic" and "chance level" in accuracy["metadata"]["dataset"]
    assert accuracy["metadata"]["chance_accuracy"] == pytest.approx(0.1)

    # throughput is in tracked_stats: the headline one is the result's
    assert last["tracked_stats"]["value"]["throughput"] == pytest.approx(result.summary.throughput, rel=1e-12)
    assert last["run_stop"]["metadata"]["status"] == "aborted"

    # one block per window, each as long as the window the harness timed
    starts = [ll for ll in lines if ll.key == "block_start"]
    stops = [ll for ll in lines if ll.key == "block_stop"]
    assert len(starts) == len(stops) == len(result.windows)
    for start, stop, window in zip(starts, stops, sorted(result.windows, key=lambda w: w.start_s), strict=True):
        assert stop.timestamp - start.timestamp == pytest.approx(window.seconds * 1000, abs=1.0)
        assert start.value["metadata"]["trainbench_phase"] == window.phase.value

    # time runs forward, and the evaluation starts after the last timed window ends
    stamps = [ll.timestamp for ll in lines]
    assert stamps == sorted(stamps)
    eval_start = next(ll for ll in lines if ll.key == "eval_start")
    assert eval_start.timestamp >= stops[-1].timestamp
    assert next(ll for ll in lines if ll.key == "eval_stop").timestamp - eval_start.timestamp == pytest.approx(
        evaluation["seconds"] * 1000, abs=1.0
    )


def _resealed(result: Result, path: Path, **changes: Any) -> Path:
    doc = result.model_dump(mode="json")
    doc.update(changes)
    return write_result(seal(doc), path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no-evaluation", "eval_accuracy is never invented: re-run with --set eval_samples=N"),
        ("failed-evaluation", "its evaluation pass failed"),
        ("bad-accuracy", "not a valid measurement"),
        ("not-resnet", "MLPerf's resnet benchmark takes the ResNet-50 workloads"),
    ],
)
def test_results_that_cannot_be_exported_are_refused(
    evaluated_run: Path, tmp_path: Path, change: str, message: str
) -> None:
    result = read_result(evaluated_run)
    info = dict(result.workload_info)
    evaluation = dict(info.pop("evaluation"))
    if change == "failed-evaluation":
        info["evaluation"] = {"error": "DataError: no images", "start_s": 1.0, "seconds": 0.1}
    elif change == "bad-accuracy":
        info["evaluation"] = {**evaluation, "accuracy": 1.5}
    elif change == "not-resnet":
        info["evaluation"] = evaluation
    edited = _resealed(
        result,
        tmp_path / "edited.json",
        workload_info=info,
        workload="mnist-dataheavy" if change == "not-resnet" else result.workload,
    )
    out = tmp_path / "export"
    with pytest.raises(ExportError, match=message):
        export_mlperf([edited], out, submitter=SUBMITTER)
    assert not out.exists()  # nothing is written for a refused input


def test_an_export_never_overwrites(evaluated_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    _, log = _export(evaluated_run, out)
    before = log.read_bytes()
    with pytest.raises(ExportError, match="already exported"):
        export_mlperf([evaluated_run], out, submitter=SUBMITTER)
    with pytest.raises(ExportError, match="exists with other content"):
        export_mlperf([evaluated_run], out, submitter="someone-else")
    with pytest.raises(ExportError, match="given twice"):
        export_mlperf([evaluated_run, evaluated_run], tmp_path / "other", submitter=SUBMITTER)
    assert log.read_bytes() == before
    assert sorted(p.name for p in log.parent.iterdir()) == ["result_0.txt"]


def test_a_system_description_that_contradicts_the_run_is_refused(evaluated_run: Path, tmp_path: Path) -> None:
    result = read_result(evaluated_run)
    price = Price(usd_per_hour=None, currency="USD", per="hour", source="test machine: no price")
    system = describe(result, SYSTEM, SUBMITTER, price, "a test box")
    fields, _ = mlperf_fields(result, SUBMITTER, SYSTEM, {"cooling": "air"}, system)
    wrong = fields.model_copy(update={"host_processor_model_name": "Some Other CPU", "host_processor_vcpu_count": "64"})
    with pytest.raises(ExportError, match="host_processor_model_name: the system description says 'Some Other CPU'"):
        export_mlperf([evaluated_run], tmp_path / "export", system=system.model_copy(update={"mlperf": wrong}))
    # the stored fields are used as they are when they agree with the run
    outcome = export_mlperf([evaluated_run], tmp_path / "ok", system=system.model_copy(update={"mlperf": fields}))
    assert json.loads(outcome.system_file.read_text())["cooling"] == "air"
