"""The submission commands through the installed CLI: validate, submit, bands derive, report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from suite.results import write_result
from suite.validation.bands import BandsFile
from suite.validation.bands_file import load_bands, write_bands
from tests.conftest import REPO, trainbench
from tests.validation.conftest import PRICE, RUNS, SUBMITTER, SYSTEM, RealRuns
from tests.validation.trees import bands_file, make_tree, results_dir


def _result_files(real_runs: RealRuns, tmp_path: Path, which: str = "open") -> list[Path]:
    out = []
    for i, r in enumerate(getattr(real_runs, which)):
        out.append(write_result(r, tmp_path / "runs" / f"{which}-{i}" / "result.json"))
    return out


def test_validate_exit_codes_and_reports(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.open)
    bands = bands_file(tmp_path / "bands.yaml", real_runs)
    common = ["--bands", str(bands), "--specs-dir", str(real_runs.specs_dir)]
    ok = trainbench(
        "validate",
        str(root),
        *common,
        "--json",
        str(tmp_path / "v.json"),
        "--markdown",
        str(tmp_path / "v.md"),
        cwd=tmp_path,
        env={"COLUMNS": "200"},
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "COMPLIANT" in ok.stdout and "steady-state-unchecked" in ok.stdout
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["compliant"] and report["exit_code"] == 0 and report["counts"]["error"] == 0
    [group] = report["groups"]
    assert group["verdict"] == "inside" and group["valid_runs"] == RUNS and group["score_unit"] == "samples/s"
    md = (tmp_path / "v.md").read_text()
    assert md.startswith("# trainbench validation") and "| severity | code |" in md and "inside" in md

    strict = trainbench("validate", str(root), *common, "--strict", cwd=tmp_path)
    assert strict.returncode == 1  # the unchecked steady state is a warning, an error under --strict

    (results_dir(root) / "result_6.json").write_text("{")
    bad = trainbench("validate", str(root), *common, "--json", "-", cwd=tmp_path)
    assert bad.returncode == 1
    doc = json.loads(bad.stdout)
    [finding] = [f for f in doc["findings"] if f["severity"] == "error"]
    assert finding["code"] == "not-json" and finding["where"].endswith("result_6.json") and finding["fix"]

    missing = trainbench("validate", str(tmp_path / "nowhere"), *common, cwd=tmp_path)
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    (tmp_path / "broken.yaml").write_text("bands_version: 1\nbands: [{name: x, value: -3}]\n")
    broken = trainbench("validate", str(root), "--bands", str(tmp_path / "broken.yaml"), cwd=tmp_path)
    assert broken.returncode == 2 and "could not run" in broken.stderr


def test_committed_submissions_validate(tmp_path: Path) -> None:
    """What ``make validate`` checks: the committed tree against the committed bands and the real specs."""
    proc = trainbench("validate", str(REPO / "submissions"), "--json", str(tmp_path / "v.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["counts"]["error"] == 0


def test_bands_derive_prints_and_writes_a_band(real_runs: RealRuns, tmp_path: Path) -> None:
    files = _result_files(real_runs, tmp_path)
    bands = tmp_path / "bands.yaml"
    shutil.copy(REPO / "submissions" / "bands.yaml", bands)
    args = ["bands", "derive", *map(str, files), "--system", SYSTEM, "--division", "open", "--bands", str(bands)]
    printed = trainbench(*args, "--note", "a shared test machine", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    [band] = yaml.safe_load(printed.stdout[printed.stdout.index("- name:") :])
    values = sorted(r.summary.throughput for r in real_runs.open if r.summary)
    assert band["value"] == pytest.approx(values[2])
    assert band["lower"] == pytest.approx(values[0] / values[2] - 1 - 0.05, abs=1e-6)
    assert band["upper"] == pytest.approx(values[-1] / values[2] - 1 + 0.05, abs=1e-6)
    assert band["runs"] == RUNS and band["source"]["kind"] == "measured"
    assert sorted(band["source"]["runs"]) == sorted(r.digest for r in real_runs.open)
    assert band["source"]["note"] == "a shared test machine"
    assert band["conditions"]["params.batch_size"] == 2  # an open band pins the config it measured

    wrote = trainbench(*args, "--write", cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    assert any(b.name == band["name"] for b in load_bands(bands).bands)
    again = trainbench(*args, "--write", cwd=tmp_path)
    assert again.returncode == 2 and "--replace" in again.stderr

    too_few = trainbench(
        "bands", "derive", *map(str, files[:4]), "--system", SYSTEM, "--division", "open", cwd=tmp_path
    )
    assert too_few.returncode == 2 and "at least 5" in too_few.stderr
    trending = _result_files(real_runs, tmp_path, "trending")
    refused = trainbench("bands", "derive", *map(str, trending), "--system", SYSTEM, "--division", "open", cwd=tmp_path)
    assert refused.returncode == 2 and "trending" in refused.stderr


def test_submit_copies_checked_results_and_refuses_bad_ones(real_runs: RealRuns, tmp_path: Path) -> None:
    files = _result_files(real_runs, tmp_path)
    root = tmp_path / "submissions"
    base = ["submit", "--submitter", SUBMITTER, "--system", SYSTEM, "--root", str(root)]
    no_desc = trainbench(*base, str(files[0]), cwd=tmp_path)
    assert no_desc.returncode == 2 and "--describe-system" in no_desc.stderr

    first = trainbench(
        *base,
        *map(str, files[:3]),
        "--describe-system",
        "--price-per-hour",
        str(PRICE),
        "--price-source",
        "test price",
        cwd=tmp_path,
    )
    assert first.returncode == 0, first.stdout + first.stderr
    target = results_dir(root)
    assert sorted(p.name for p in target.iterdir()) == ["result_1.json", "result_2.json", "result_3.json"]
    assert (target / "result_1.json").read_bytes() == files[0].read_bytes()  # exactly as the harness wrote it
    desc = json.loads((root / SUBMITTER / "systems" / f"{SYSTEM}.json").read_text())
    assert desc["price"]["usd_per_hour"] == PRICE and desc["hardware"]["logical_cores"] >= 1

    dup = trainbench(*base, str(files[0]), str(files[3]), cwd=tmp_path)
    assert dup.returncode == 1 and "duplicate-run" in dup.stdout
    assert len(list(target.iterdir())) == 3  # all or nothing

    incomplete = write_result(real_runs.incomplete, tmp_path / "runs" / "bad" / "result-incomplete.json")
    refused = trainbench(*base, str(incomplete), cwd=tmp_path)
    assert refused.returncode == 1 and "incomplete" in refused.stdout

    rest = trainbench(*base, str(files[3]), str(files[4]), cwd=tmp_path)
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert (target / "result_5.json").exists()


def test_report_ranks_renders_a_chart_and_logs_to_mlflow(real_runs: RealRuns, tmp_path: Path) -> None:
    root = make_tree(tmp_path / "sub", real_runs.open)
    bands = bands_file(tmp_path / "bands.yaml", real_runs)
    # the published figures of the committed bands, beside the submission's measured band
    cited = [b for b in load_bands(REPO / "submissions" / "bands.yaml").bands if b.source.kind == "citation"]
    mine = load_bands(bands, real_runs.specs_dir)
    write_bands(BandsFile(bands_version=1, bands=[*mine.bands, *cited]), bands)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "report"
    proc = trainbench(
        "report",
        str(root),
        "--bands",
        str(bands),
        "--specs-dir",
        str(real_runs.specs_dir),
        "--output-dir",
        str(out),
        "--tracking-uri",
        uri,
        cwd=tmp_path,
        env={"COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = " ".join(proc.stdout.split())
    # recommendations compare like with like: the published batch-128 fp32 figures among themselves, the
    # GPU one (g5.2xlarge) apart from the CPU one, and the tiny submitted config (batch 2, 64 px) only with itself
    assert "CPU, open: batch 128, fp32, 224 px, synthetic data: for throughput choose c7i.2xlarge (published)" in said
    assert "GPU, open: batch 128, fp32, 224 px, synthetic data: for throughput choose g5.2xlarge (published)" in said
    assert "CPU, open: batch 2, " in said and "for throughput choose test-box (submitted)" in said
    assert SYSTEM in proc.stdout
    png = (out / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    md = (out / "report.md").read_text()
    assert "| # | system |" in md and "test-box" in md and "c7i.2xlarge" in md and "report.png" in md
    data = json.loads((out / "report.json").read_text())
    rows = [r for r in data["rows"] if r["system"] == SYSTEM]
    assert len(rows) == 1 and rows[0]["band_status"] == "inside"
    assert rows[0]["comparable"].startswith("CPU, open: batch 2, ") and rows[0]["device"] == "cpu"
    assert rows[0]["samples_per_dollar"] == pytest.approx(rows[0]["throughput"] * 3600 / PRICE)
    c7i = [r for r in data["rows"] if r["system"] == "c7i.2xlarge"]
    assert c7i and all(r["usd_per_hour"] == 0.357 for r in c7i)  # priced from the price table

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("trainbench-report")
    assert exp is not None
    [run] = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"report.md", "report.json", "report.png"}
    # readable keys, named by the precision the runs ran in: precision=auto chose it on the CPU the tests
    # run on (bf16 where native, fp32 on an AVX2-only one; never emulated), and the rank recorded it
    [chosen] = {r.workload_info["precision"]["chosen"] for r in real_runs.open}
    assert chosen in ("bf16", "fp32") and {r.config.params["precision"] for r in real_runs.open} == {"auto"}
    assert rows[0]["precision"] == chosen and not rows[0]["emulated"]
    assert rows[0]["slug"] == f"cpu open bs2 {chosen}-cl 64px synthetic"
    key = f"samples_per_s/resnet50-cpu/{rows[0]['slug']}/test-box submitted"
    assert run.data.metrics[key] == pytest.approx(rows[0]["throughput"])
