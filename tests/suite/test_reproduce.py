"""``trainbench reproduce`` and ``validate --reproduce`` on real tiny runs, through the installed CLI.

A real claim is measured once per module (a tiny ResNet-50, 2 repeats of 6 measured steps, logged to
MLflow); each test re-measures it or a forgery of it. The forged claim is 4x too fast (durations x 0.25):
tiny runs on a shared 2-vCPU machine have intervals of ±10-35% (or none), too wide to refuse the issue's
x 0.8 with confidence, which the quick profile's ±2-5% does (the closing note of issue 35 shows it on a
quick run). On a machine that other jobs disturb, a verdict may be undetermined; an honest claim re-measured
slower is measured again (:data:`ATTEMPTS`), as a reviewer would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from suite.results import Result, read_result, seal
from tests.conftest import TINY_RUN, copy_empty_store, trainbench
from tests.validation import forgery

CLAIM = [*TINY_RUN, "--set", "repeats=2", "--set", "measure_steps=6", "--set", "budget_s=3600"]
"""The claim's overrides: the tiny run, with 2 repeats of 6 measured steps (later overrides win), and a time
budget no loaded machine cuts its windows short by."""


@pytest.fixture(scope="module")
def claim(tmp_path_factory: pytest.TempPathFactory, empty_store_template: Path) -> tuple[Path, str]:
    """(the claim's result file, the MLflow store it is logged in)."""
    tmp = tmp_path_factory.mktemp("claim")
    uri = copy_empty_store(empty_store_template, tmp / "store.db")
    done = trainbench("run", "resnet50-cpu", *CLAIM, "--output-dir", str(tmp / "out"), "--tracking-uri", uri, cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    return next((tmp / "out").rglob("result.json")), uri


def _disturbed(result: Result) -> bool:
    return bool(result.utilization_summary and result.utilization_summary.disturbed)


def _new_result(root: Path) -> Result:
    [path] = list(root.rglob("result.json"))
    return read_result(path)


def _write(doc: dict[str, object] | Result, path: Path) -> Path:
    path.write_text(json.dumps(doc.model_dump(mode="json") if isinstance(doc, Result) else doc))
    return path


ATTEMPTS = 3
"""How often the honest claim is re-measured before its verdict counts, as a reviewer re-runs a slower
re-measurement. This 2-vCPU VM's speed drifts with no interference it can see: in CI (2026-11-27, Xeon) a tiny
claim of 12.64 samples/s (±6.1%) was re-measured 14 s later at 9.43 (±15%), its readings showing 0.02 cores
of other processes and no steal. Tiny runs have no steady-state check (under 8 steps per window)."""


def test_an_honest_claim_is_reproduced_and_linked_in_mlflow(claim: tuple[Path, str], tmp_path: Path) -> None:
    path, uri = claim
    original = read_result(path)
    attempt = 0
    while True:
        out = tmp_path / f"rep{attempt}"
        done = trainbench("reproduce", str(path), "--output-dir", str(out), "--tracking-uri", uri, cwd=tmp_path)
        again = _new_result(out)
        rep = again.reproduction
        assert rep is not None and rep.claim_digest == original.digest
        attempt += 1
        if attempt == ATTEMPTS or rep.verdict != "not reproduced" or rep.ratio < 1:  # only a slower one again
            break
    if rep.verdict == "undetermined":  # this shared machine slowed a run down or made it too noisy, and it says so
        assert done.returncode == 1 and "not reproduced (undetermined)" in done.stdout, done.stdout
        assert rep.ratio_ci95 is None or _disturbed(again if rep.ratio > 1 else original)
    else:
        assert done.returncode == 0 and rep.verdict == "reproduced", done.stdout + done.stderr
        assert "reproduced: claimed" in done.stdout
    assert "95% CI" in done.stdout and "tolerance band" in done.stdout
    assert rep.claimed == pytest.approx(original.summary.throughput if original.summary else 0.0)
    assert forgery.errors(again) == []  # the reproduction is itself a valid result
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("resnet50-cpu")
    assert experiment is not None
    runs = client.search_runs(
        [experiment.experiment_id],
        filter_string=f"tags.`trainbench.result_id` = '{again.run_id}'",
    )
    [mine] = runs
    claim_run = mine.data.tags["trainbench.reproduces_run"]
    assert mine.data.tags["trainbench.reproduces"] == original.run_id
    assert mine.data.tags["trainbench.reproduction.verdict"] == rep.verdict
    tags = client.get_run(claim_run).data.tags
    assert tags["trainbench.result_id"] == original.run_id
    assert tags["trainbench.reproduction.latest"].startswith(f"{rep.verdict}: ")
    assert tags[f"trainbench.reproduced_by.{again.run_id[:8]}"].startswith(f"{rep.verdict} by {again.run_id}")


def test_a_forged_claim_is_not_reproduced(claim: tuple[Path, str], tmp_path: Path) -> None:
    """A claim 4x too fast (durations x 0.25, summary recomputed, resealed) is never reproduced: refused
    outright, or undetermined where this shared machine disturbed the re-measurement or left it no interval."""
    honest = read_result(claim[0])
    if _disturbed(honest):  # its own measurement was slowed by other jobs: a faster claim may be the truth
        pytest.skip("the claim was measured while other processes disturbed it; its forgery proves nothing")
    doc = honest.model_dump(mode="json")
    forged = _write(forgery.resealed(forgery.scale_windows(doc, 0.25)), tmp_path / "forged.json")
    done = trainbench("reproduce", str(forged), "--no-tracking", "--output-dir", str(tmp_path / "rep"), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the claim does not validate (clock-mismatch" in done.stderr
    again = _new_result(tmp_path / "rep")
    rep = again.reproduction
    assert rep is not None and rep.verdict != "reproduced" and rep.ratio > 1.1, done.stdout
    if rep.ratio_ci95 is not None and not _disturbed(again):
        assert rep.verdict == "not reproduced" and "not reproduced: claimed" in done.stdout
        assert rep.ratio_ci95[0] > 1.1 and "lies above the tolerance band" in done.stdout
    else:
        assert rep.verdict == "undetermined" and "not reproduced (undetermined): claimed" in done.stdout


def test_another_hardware_class_is_refused_unless_anyway(claim: tuple[Path, str], tmp_path: Path) -> None:
    doc = read_result(claim[0]).model_dump(mode="json")
    doc["environment"]["cpu"]["model"] = doc["environment"]["isa"]["model"] = "AMD EPYC 7551 32-Core Processor"
    other = _write(forgery.resealed(doc), tmp_path / "other.json")
    refused = trainbench("reproduce", str(other), "--no-tracking", "--output-dir", str(tmp_path / "no"), cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "not of the claim's hardware class" in refused.stderr and "CPU model: claim AMD EPYC 7551" in refused.stderr
    assert not (tmp_path / "no").exists()
    anyway = trainbench(
        "reproduce", str(other), "--anyway", "--no-tracking", "--output-dir", str(tmp_path / "yes"), cwd=tmp_path
    )
    assert anyway.returncode in (0, 1), anyway.stdout + anyway.stderr
    assert "ran anyway on a different hardware class: CPU model: claim AMD EPYC 7551" in anyway.stdout
    rep = _new_result(tmp_path / "yes").reproduction
    assert rep is not None and rep.anyway and rep.differences[0].startswith("CPU model: claim AMD EPYC 7551")


def test_no_result_or_no_score_exits_2(claim: tuple[Path, str], tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"kind": "something else"}')
    done = trainbench("reproduce", str(junk), "--no-tracking", cwd=tmp_path)
    assert done.returncode == 2 and "is not a result this trainbench reads" in done.stderr
    doc = read_result(claim[0]).model_dump(mode="json")
    doc.update(status="incomplete", error="interrupted (SIGINT)", summary=None, cost=None, diagnosis=None)
    doc.update(utilization_summary=None)
    doc.pop("digest")
    stopped = _write(seal(doc), tmp_path / "stopped.json")
    done = trainbench("reproduce", str(stopped), "--no-tracking", cwd=tmp_path)
    assert done.returncode == 2 and "claims no throughput to reproduce" in done.stderr


def test_validate_reproduces_results_of_this_machine(claim: tuple[Path, str], tmp_path: Path) -> None:
    from tests.validation.trees import make_tree

    result = read_result(claim[0])
    root = make_tree(tmp_path / "tree", [result])
    bands = Path(__file__).resolve().parents[2] / "submissions" / "bands.yaml"
    out = tmp_path / "reproductions"
    done = trainbench(
        "validate", str(root), "--bands", str(bands), "--reproduce", "1", "--reproduce-dir", str(out), cwd=tmp_path
    )
    assert done.returncode == 1, done.stdout + done.stderr  # one run is too few for a score
    assert "result_1.json: " in done.stdout and "reproduced" in done.stdout.split("result_1.json: ")[1], done.stdout
    rep = _new_result(out).reproduction
    assert rep is not None and rep.claim_digest == result.digest
