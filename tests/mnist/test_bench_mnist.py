"""``trainbench bench-mnist``: stopping it keeps what was measured and leaves nothing running."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.faults.helpers import EXE


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_benchmark_and_writes_what_was_measured(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "b"
    args = [EXE, "bench-mnist", "--repeats", "0", "--batch-size", "4", "--steps", "2", "--seconds", "600"]
    run = subprocess.Popen(
        [*args, "--runs", "1", "--output-dir", str(out)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        logs = list(out.rglob("progress.jsonl"))
        if logs and '"measurement"' in logs[0].read_text():
            break
        time.sleep(0.2)
    else:
        run.kill()
        pytest.fail(f"the first point never reached its measurement window: {run.communicate()}")
    children = psutil.Process(run.pid).children(recursive=True)
    t0 = time.monotonic()
    run.send_signal(sig)
    try:
        stdout, stderr = run.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        for p in [psutil.Process(run.pid), *children]:  # leave nothing running behind a failed test
            p.kill()
        raise
    assert time.monotonic() - t0 < 60
    assert run.returncode == 130, stdout + stderr
    assert "part 2" not in stdout, "an interrupted benchmark must not go on to its next part"
    doc = json.loads((out / "bench-mnist.json").read_text())
    [first] = doc["workers"]
    assert first["value"] == "0" and first["status"] == "failed" and "interrupted" in first["error"]
    assert list(out.rglob("result-incomplete.json")), "the interrupted point's steps are kept"
    assert doc["offload"] == []
    time.sleep(1)
    assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
