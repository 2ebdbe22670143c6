"""The MLPerf system description: the official checker's quirks, trainbench's pre-checks, and the
MLPerf fields stored beside trainbench's own in a system description file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from suite.export.checkers import check_result_log, check_system_description
from suite.export.mlperf import ExportError, export_mlperf, read_system_description
from suite.export.system_desc import SystemFieldError, mlperf_fields, parse_field_overrides, with_mlperf
from suite.results import Result, read_result
from suite.rules import load_rules
from suite.systems import SYSTEM_SCHEMA_PATH, Price, describe
from suite.systems.mlperf_fields import REQUIRED_FIELDS, MLPerfSystemFields, precheck
from suite.validation.result_checks import CheckContext
from suite.validation.submit import submit_results
from tests.conftest import REPO, trainbench
from tests.export.conftest import SUBMITTER, SYSTEM

NO_PRICE = Price(usd_per_hour=None, currency="USD", per="hour", source="a test machine, not for rent")


@pytest.fixture(scope="module")
def result(evaluated_run: Path) -> Result:
    return read_result(evaluated_run)


def _doc(result: Result) -> dict[str, Any]:
    fields, _ = mlperf_fields(result, SUBMITTER, SYSTEM)
    return dict(fields.as_mlperf_json())


def _write(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_all_33_fields_are_strings_with_a_valid_status(result: Result) -> None:
    doc = _doc(result)
    assert list(doc) == list(REQUIRED_FIELDS) and len(doc) == 33
    assert all(isinstance(v, str) for v in doc.values())
    assert doc["status"] == "Research, Development, or Internal (RDI)" and doc["division"] == "open"
    env = result.environment
    assert doc["host_processor_model_name"] == env["cpu"]["model"]
    assert doc["host_processor_vcpu_count"] == str(env["cpu"]["logical_cores"])
    assert doc["accelerators_per_node"] == "0" and doc["accelerator_model_name"] == "N/A"
    assert doc["framework"] == f"PyTorch {env['libraries']['torch']}"
    assert "not an MLPerf result" in doc["sw_notes"]
    assert precheck(doc) == []


def test_the_checker_exits_0_although_it_reports_errors(result: Result, tmp_path: Path) -> None:
    doc = _doc(result)
    del doc["cooling"], doc["host_networking"]
    report = check_system_description(_write(doc, tmp_path / "box.json"))
    assert report.returncode == 0
    assert not report.passed
    assert any("Missing field cooling" in e for e in report.errors)
    assert any("Missing field host_networking" in e for e in report.errors)


def test_an_invalid_status_hides_the_missing_fields_but_not_from_trainbench(result: Result, tmp_path: Path) -> None:
    doc = _doc(result)
    del doc["cooling"], doc["host_networking"]
    doc["status"] = "onprem"  # what MLPerf's own v4.0 system files say; the 4.1.68 checker refuses it
    report = check_system_description(_write(doc, tmp_path / "box.json"))
    assert report.returncode == 0 and not report.passed
    assert "Field status contains a non valid value: onprem" in report.output
    assert "Missing field" not in report.output  # the quirk: the missing fields vanished
    problems = precheck(doc)
    assert "missing field 'cooling': add it (an empty string if not disclosed)" in problems
    assert any("missing field 'host_networking'" in p for p in problems)
    assert any("status 'onprem' is not one of" in p and "hides every other problem" in p for p in problems)


def test_a_number_where_a_string_is_expected_crashes_the_checker_but_not_trainbench(
    result: Result, tmp_path: Path
) -> None:
    doc = _doc(result)
    doc["host_processor_core_count"] = 2
    report = check_system_description(_write(doc, tmp_path / "box.json"))
    assert "Traceback (most recent call last)" in report.output and "TypeError" in report.output
    assert not report.passed and any("the checker crashed" in e for e in report.errors)
    assert precheck(doc) == [
        "field 'host_processor_core_count' is int 2; write it as a string (the official checker crashes on it)"
    ]
    with pytest.raises(ValidationError, match="host_processor_core_count"):
        MLPerfSystemFields.model_validate(doc)


def test_submitter_fields_are_checked() -> None:
    assert parse_field_overrides(["cooling=air, 2 fans", "accelerator_on_chip_memories=N/A"]) == {
        "cooling": "air, 2 fans",
        "accelerator_on-chip_memories": "N/A",
    }
    with pytest.raises(SystemFieldError, match="is measured from the run and cannot be set; fields you may give"):
        parse_field_overrides(["host_processor_model_name=Fast CPU"])
    with pytest.raises(SystemFieldError, match="is not an MLPerf field"):
        parse_field_overrides(["colling=air"])
    with pytest.raises(SystemFieldError, match="expected NAME=VALUE"):
        parse_field_overrides(["cooling"])
    with pytest.raises(SystemFieldError, match="status 'onprem' must be one of"):
        parse_field_overrides(["status=onprem"])


def test_the_mlperf_fields_live_beside_trainbenchs_own(evaluated_run: Path, result: Result, tmp_path: Path) -> None:
    """What `trainbench submit --describe-system --mlperf-field ...` writes: a system file that
    trainbench's schema and validator accept, and that `export mlperf` takes as it is."""
    supplied = {"status": "Available on-premise", "host_processors_per_node": "1", "cooling": "air"}
    system, undisclosed = with_mlperf(describe(result, SYSTEM, SUBMITTER, NO_PRICE, "a test box"), result, supplied)
    assert "cooling" not in undisclosed and "host_storage_type" in undisclosed
    root = tmp_path / "submissions"
    outcome = submit_results([evaluated_run], root, SUBMITTER, SYSTEM, CheckContext(load_rules()), system)
    assert outcome.system_written is not None
    doc = json.loads(outcome.system_written.read_text())
    assert doc["mlperf"]["accelerator_on-chip_memories"] == "N/A" and doc["mlperf"]["cooling"] == "air"
    assert doc["mlperf"]["host_processor_interconnect"] == "N/A"  # one processor, as the submitter said
    schema = jsonschema.Draft202012Validator(json.loads(SYSTEM_SCHEMA_PATH.read_text()))
    assert list(schema.iter_errors(doc)) == []
    # the tree holds no bands.yaml of its own, so the bands are named (validate never falls back to others)
    bands = REPO / "submissions" / "bands.yaml"
    proc = trainbench(
        "validate", str(root), "--bands", str(bands), "--json", str(tmp_path / "report.json"), cwd=tmp_path
    )
    report = json.loads((tmp_path / "report.json").read_text())
    codes = {(f["code"], f["where"].split("#")[0]) for f in report["findings"]}
    # its one error: a single run of the 5 a score needs (exit 1, findings); none about the system file
    assert proc.returncode == 1 and {f["code"] for f in report["findings"] if f["severity"] == "error"} == {
        "too-few-runs"
    }, proc.stdout + proc.stderr
    system_file = f"{SUBMITTER}/systems/{SYSTEM}.json"
    assert ("price-missing", system_file) in codes  # the validator read the system file as a valid description
    assert not [c for c in codes if c[1] == system_file and c[0] != "price-missing"], codes

    stored = read_system_description(outcome.system_written)
    out = tmp_path / "export"
    exported = export_mlperf([evaluated_run], out, system=stored)
    assert json.loads(exported.system_file.read_text()) == stored.mlperf.as_mlperf_json()  # type: ignore[union-attr]
    assert check_system_description(exported.system_file).passed
    log = check_result_log(exported.result_files[0])
    assert log.passed, log.errors
    assert '"key": "submission_status", "value": "onprem"' in exported.result_files[0].read_text()

    doc["mlperf"]["accelerators_per_node"] = 0  # a number: the schema and the model refuse it
    best = jsonschema.exceptions.best_match(schema.iter_errors(doc))
    assert best is not None and best.message == "0 is not of type 'string'"
    assert list(best.absolute_path) == ["mlperf", "accelerators_per_node"]
    bad = _write(doc, tmp_path / f"{SYSTEM}.json")
    with pytest.raises(ExportError, match="mlperf/accelerators_per_node: Input should be a valid string"):
        read_system_description(bad)
