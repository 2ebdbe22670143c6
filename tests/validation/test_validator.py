"""The validator on real results: a compliant submission passes, every bad submission gets its findings."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from suite.results import write_result
from suite.rules import closed_deviations, division_for, load_rules
from suite.validation.findings import Severity
from tests.validation.bad_submissions import CASES, BadCase
from tests.validation.conftest import RUNS, RealRuns
from tests.validation.trees import bands_file, make_tree, results_dir, validate


def _errors(report: object) -> set[str]:
    from suite.validation.outcomes import CheckedTree

    assert isinstance(report, CheckedTree)
    return report.findings.codes(Severity.ERROR)


def test_the_real_runs_are_what_the_cases_assume(real_runs: RealRuns) -> None:
    assert len(real_runs.open) == RUNS and all(r.status == "complete" for r in real_runs.open)
    assert {r.division for r in real_runs.open} == {"open"}
    assert {r.division for r in real_runs.closed} == {"closed"}
    assert len({r.digest for r in real_runs.open}) == RUNS
    assert all(r.summary is not None and r.summary.steady_state.status == "trending" for r in real_runs.trending)
    assert real_runs.incomplete.status == "incomplete" and real_runs.incomplete.summary is None


def test_compliant_open_submission(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.open)
    report = validate(root, bands_file(tmp_path / "bands.yaml", real_runs), real_runs)
    assert _errors(report) == set(), [f for f in report.findings if f.severity is Severity.ERROR]
    assert report.exit_code == 0
    [group] = report.groups
    throughputs = [r.summary.throughput for r in real_runs.open if r.summary]
    assert group.division == "open" and group.valid_runs == RUNS and group.score is not None
    assert group.score == pytest.approx(statistics.median(throughputs))
    assert group.verdict == "inside" and group.band is not None and group.band.source.kind == "measured"
    assert group.samples_per_dollar == pytest.approx(group.score * 3600 / 0.5)
    assert {"score", "in-band"} <= report.findings.codes(Severity.INFO)
    # 3 measured steps per window cannot be checked for a trend: a warning, never silent
    assert "steady-state-unchecked" in report.findings.codes(Severity.WARNING)


def test_compliant_closed_submission(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.closed)
    report = validate(root, bands_file(tmp_path / "bands.yaml", real_runs), real_runs)
    assert _errors(report) == set()
    [group] = report.groups
    assert group.division == "closed" and group.verdict == "inside"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_submission_is_rejected_with_the_expected_findings(
    case: BadCase, real_runs: RealRuns, tmp_path: Path
) -> None:
    root = tmp_path / "sub"
    case.build(root, real_runs)
    report = validate(root, bands_file(tmp_path / "bands.yaml", real_runs, case.scale), real_runs)
    errors = [f for f in report.findings if f.severity is Severity.ERROR]
    assert {f.code for f in errors} == case.expected, [(f.code, f.where, f.message) for f in errors]
    assert report.exit_code == 1
    assert all(f.message and f.fix and f.where for f in errors)


def test_above_band_in_open_is_a_warning_and_an_error_with_strict(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.open)
    bands = bands_file(tmp_path / "bands.yaml", real_runs, scale=0.5)
    report = validate(root, bands, real_runs)
    assert _errors(report) == set() and report.exit_code == 0
    [above] = [f for f in report.findings if f.code == "above-band"]
    assert above.severity is Severity.WARNING and "faster than the band" in above.message
    strict = validate(root, bands, real_runs, strict=True)
    assert "above-band" in _errors(strict) and strict.exit_code == 1


def test_above_band_in_closed_says_check_the_measurement(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.closed)
    report = validate(root, bands_file(tmp_path / "bands.yaml", real_runs, scale=0.5), real_runs)
    [above] = [f for f in report.findings if f.code == "above-band"]
    assert above.severity is Severity.ERROR and "faster than the band: check the measurement" in above.message


def test_every_finding_is_collected_not_just_the_first(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.open)
    d = results_dir(root)
    text = (d / "result_1.json").read_text()
    (d / "result_6.json").write_text(re.sub(r'"throughput": [0-9.eE+-]+', '"throughput": NaN', text, count=1))
    (d / "result_7.json").write_text(text)
    write_result(real_runs.incomplete, d / "result_8.json")
    report = validate(root, bands_file(tmp_path / "bands.yaml", real_runs), real_runs)
    assert _errors(report) == {"non-finite-number", "duplicate-run", "incomplete"}
    [group] = report.groups
    assert group.valid_runs == RUNS and group.verdict == "inside"  # the good runs are still scored


def test_tunables_keep_a_run_closed_and_anything_else_makes_it_open(real_runs: RealRuns) -> None:
    from suite.specs import resolve

    rules = load_rules()
    d = real_runs.specs_dir
    for tunable in ("num_workers=1", "intra_op_threads=2", "allocator=jemalloc", "compile=inductor", "kmp_blocktime=1"):
        config = resolve("resnet50-cpu", "official", [tunable], directory=d)
        assert division_for(config, rules, d) == "closed", tunable
    # precision: auto's choice on the recorded hardware is closed (tests/suite/test_precision_auto.py)
    for change in ("batch_size=4", "channels_last=false", "measure_steps=10", "image_size=96"):
        config = resolve("resnet50-cpu", "official", [change], directory=d)
        [dev] = closed_deviations(config, rules, d)
        assert division_for(config, rules, d) == "open" and dev.key.endswith(change.split("=")[0])
    assert division_for(real_runs.open_config, rules, d) == "open"  # another profile is never closed


def test_the_real_official_profile_is_closed_and_quick_is_open() -> None:
    from suite.specs import resolve

    assert division_for(resolve("resnet50-cpu", "official")) == "closed"
    assert division_for(resolve("resnet50-cpu", "official", ["omp_num_threads=2", "launcher=run_cpu"])) == "closed"
    assert division_for(resolve("resnet50-cpu", "official", ["batch_size=64"])) == "open"
    assert division_for(resolve("resnet50-cpu", "quick")) == "open"


def test_a_measured_band_must_be_the_median_of_its_runs(real_runs: RealRuns, tmp_path: Path) -> None:
    from suite.validation.bands import BandsFile
    from suite.validation.bands_file import load_bands, write_bands

    root = make_tree(tmp_path / "sub", real_runs.open)
    path = bands_file(tmp_path / "bands.yaml", real_runs)
    bands = load_bands(path, real_runs.specs_dir)
    [median] = [b.value for b in bands.bands if b.division == "open"]
    edited = [b.model_copy(update={"value": b.value * 1.01}) if b.division == "open" else b for b in bands.bands]
    write_bands(BandsFile(bands_version=1, bands=edited), path)
    [stored] = [b.value for b in load_bands(path, real_runs.specs_dir).bands if b.division == "open"]
    assert stored != median
    report = validate(root, path, real_runs)
    [finding] = [f for f in report.findings if f.severity is Severity.ERROR]
    assert finding.code == "band-provenance"
    # only the value was edited: its bounds are fractions of it, so they still follow from the runs
    assert finding.message == (
        f"the band does not follow from its runs: value {stored} (the median of its runs is {median})"
    )


def test_a_band_is_faulted_when_its_own_run_is_forged_not_when_a_copy_is(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.open)
    d = results_dir(root)
    doc = json.loads((d / "result_1.json").read_text())
    doc["summary"]["throughput"] *= 1.5  # the cited run itself, edited in place; its digest kept
    (d / "result_1.json").write_text(json.dumps(doc))
    report = validate(root, bands_file(tmp_path / "bands.yaml", real_runs), real_runs)
    [finding] = [f for f in report.findings if f.code == "band-provenance"]
    assert finding.severity is Severity.ERROR
    assert finding.message == "the band cites runs with errors (acme/results/test-box/resnet50-cpu/result_1.json)"
    assert {"digest-mismatch", "summary-mismatch", "too-few-runs"} <= _errors(report)
