"""``trainbench compare`` as a user runs it.

Exit codes, output files, terminal width and hostile input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from suite.results import write_result
from suite.tracking import log_result
from tests.compare import synth

REPO = Path(__file__).resolve().parents[2]


def compare(*args: str, columns: int = 100) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "suite", "compare", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _pair(tmp_path: Path, a_step: float, b_step: float, **kw: object) -> tuple[Path, Path]:
    a = synth.result([synth.jittered(a_step, 6, s) for s in range(3)], **kw)  # type: ignore[arg-type]
    b = synth.result([synth.jittered(b_step, 6, s + 7) for s in range(3)], **kw)  # type: ignore[arg-type]
    return synth.write(a, tmp_path / "a"), synth.write(b, tmp_path / "b")


def test_a_significant_slowdown_beyond_the_threshold_exits_1_and_writes_json_and_markdown(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 0.5, 1.0)
    proc = compare(str(a), str(b), "--fail-above", "10", "--json", str(tmp_path / "c.json"), "--markdown",
                   str(tmp_path / "c.md"))  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "significantly slower" in proc.stdout and "REGRESSION" in proc.stdout
    assert "delta method on the log scale with each run's own interval units" in proc.stdout
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["kind"] == "trainbench.compare" and doc["regression"] is True and doc["comparable"] is True
    assert 0.45 < doc["ratio"]["ratio"] < 0.55 and doc["ratio"]["significant"] is True
    assert doc["ratio"]["high"] < 1 and doc["ratio"]["method"] == "delta-log"
    md = (tmp_path / "c.md").read_text()
    assert md.startswith("# trainbench compare") and "## Method" in md and "| A |" in md
    ok = compare(str(a), str(b), "--fail-above", "60")
    assert ok.returncode == 0 and "pass" in ok.stdout


def test_faster_or_equal_never_fails_the_gate(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 1.0, 0.5)
    proc = compare(str(a), str(b), "--fail-above", "0")
    assert proc.returncode == 0, proc.stderr
    assert "significantly faster" in proc.stdout


def test_incomparable_results_are_labelled_and_refused_by_the_gate(tmp_path: Path) -> None:
    times = [synth.jittered(0.5, 6, s) for s in range(2)]
    native = synth.write(synth.result(times, overrides=("precision=bf16",)), tmp_path / "n")
    emulated = synth.write(synth.result(times, overrides=("precision=bf16",), flags=synth.ZEN1_FLAGS), tmp_path / "e")
    shown = compare(str(native), str(emulated))
    assert shown.returncode == 0 and "INCOMPARABLE" in shown.stdout and "bf16 is emulated" in shown.stdout
    gated = compare(str(native), str(emulated), "--fail-above", "5")
    assert gated.returncode == 2 and "cannot gate incomparable results" in gated.stderr


def test_bad_inputs_fail_clearly_without_a_traceback(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 0.5, 0.5)
    doc = json.loads(b.read_text())
    doc["summary"]["throughput"] *= 2  # forged
    b.write_text(json.dumps(doc))
    for args, expected in [
        ((str(a), str(b)), "digest mismatch"),
        ((str(a), "no-such-thing"), "neither a result file, a directory of results nor an MLflow run id"),
        ((str(a), str(tmp_path / "empty")), "no result.json below"),
    ]:
        (tmp_path / "empty").mkdir(exist_ok=True)
        proc = compare(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert expected in proc.stderr and "Traceback" not in proc.stderr


def test_hostile_strings_are_escaped_in_markdown_and_never_markup_in_the_terminal(tmp_path: Path) -> None:
    hostile = "[bold]evil[/bold] | <img src=x> `tick` [link](javascript:alert(1))"
    a, b = _pair(tmp_path, 0.5, 0.5, system=hostile)
    proc = compare(str(a), str(b), "--markdown", str(tmp_path / "c.md"), columns=300)
    assert proc.returncode == 0, proc.stderr
    assert "[bold]evil[/bold]" in proc.stdout  # printed as text, not parsed as rich markup
    md = (tmp_path / "c.md").read_text()
    assert "<img" not in md and "](javascript" not in md and "`tick`" not in md
    assert "&lt;img src=x&gt;" in md and r"\[bold\]evil\[/bold\] \|" in md and r"\`tick\`" in md


def test_the_table_adapts_to_the_terminal_width(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, 0.5, 0.6)
    for columns in (60, 200):
        proc = compare(str(a), str(b), columns=columns)
        assert proc.returncode == 0, proc.stderr
        widths = [len(line) for line in proc.stdout.splitlines()]
        assert max(widths) <= columns
    narrow, wide = compare(str(a), str(b), columns=60), compare(str(a), str(b), columns=200)
    assert len(narrow.stdout.splitlines()) > len(wide.stdout.splitlines())  # narrower wraps more, never cuts


def test_mlflow_run_ids_are_fetched_and_read_like_files(tmp_path: Path, store_uri: str) -> None:
    a_res = synth.result([synth.jittered(0.5, 6, s) for s in range(3)])
    a_path = write_result(a_res, tmp_path / "a" / "result.json")
    rid = log_result(a_res, a_path, [], store_uri)
    _, b = _pair(tmp_path, 0.5, 0.5)
    proc = compare(rid, str(b), "--tracking-uri", store_uri, "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "c.json").read_text())["a"]["sources"] == [f"mlflow:{rid}"]
    missing = compare("0" * 32, str(b), "--tracking-uri", store_uri)
    assert missing.returncode == 3 and "could not return run" in missing.stderr and "Traceback" not in missing.stderr
