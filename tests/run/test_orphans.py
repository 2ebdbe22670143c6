"""No orphans when the supervisor dies, and the next invocation keeps what was measured.

``trainbench run`` killed with SIGKILL (as the OOM killer or a CI timeout kills it) leaves
no rank running after 10 s, and ``trainbench sync`` (or the next ``trainbench run``) turns
the run directory it left into ``result-incomplete.json``. The recovery's rules (a live
supervisor's lock, the ranks' settling time, a run that ended normally) are tested on
run directories made by :func:`suite.run.recover.claim` in a real process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.records import Phase, StepRecord
from suite.results import read_result
from suite.run.recover import LOCK_NAME, RECORD_NAME, SETTLE_S, recover
from tests.conftest import REPO, trainbench
from tests.faults.helpers import start_run, wait_for_measurement
from workloads.measurement import RankMeasurement

HOLDER = """
import sys, time
from pathlib import Path
from suite.run.recover import claim
from suite.specs import resolve
run_dir = Path(sys.argv[1])
with claim(run_dir, "0123456789abcdef0123456789abcdef", resolve("resnet50-cpu"), "testbox") as held:
    (run_dir / "claimed").touch()
    time.sleep(600)
"""


def rank_processes(marker: str) -> list[psutil.Process]:
    """Live rank processes (``workloads.rank``) whose command line names ``marker`` (their run directory)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "workloads.rank" in cmd and marker in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


def wait_gone(marker: str, limit: float = 30) -> float:
    """Seconds until no rank process names ``marker`` (raises after ``limit``)."""
    start = time.monotonic()
    while rank_processes(marker):
        if time.monotonic() - start > limit:
            raise AssertionError(f"ranks of {marker} still running {limit:.0f} s after their supervisor died")
        time.sleep(0.05)
    return time.monotonic() - start


def _step(i: int) -> str:
    return json.dumps(StepRecord(0, Phase.MEASUREMENT, i, 1.0 + i, 0.01, 0.5, 2).to_dict()) + "\n"


def _held_run(tmp_path: Path) -> tuple[Path, subprocess.Popen[bytes]]:
    run_dir = tmp_path / "out" / "resnet50-cpu" / "20260101T000000Z-01234567"
    run_dir.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], cwd=REPO)
    deadline = time.monotonic() + 60
    while not (run_dir / "claimed").exists():
        assert holder.poll() is None and time.monotonic() < deadline, "the holder did not claim the run directory"
        time.sleep(0.05)
    # as a rank leaves them: its measurement "still running" (written before its first step), and its steps
    RankMeasurement(system={"host": {"hostname": "testbox"}}).write(run_dir / "measurement.json")
    (run_dir / "progress.jsonl").write_text("".join(_step(i) for i in range(3)) + '{"torn": ')
    return run_dir, holder


def test_a_live_supervisors_run_is_left_alone_and_a_dead_ones_is_kept_as_incomplete(tmp_path: Path) -> None:
    run_dir, holder = _held_run(tmp_path)
    try:
        assert recover(tmp_path / "out") == [], "a run whose supervisor holds its lock is not touched"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (run_dir / LOCK_NAME).exists() and (run_dir / RECORD_NAME).exists()
    (run_dir / "heartbeat").write_text("7 1234 testbox 0\n")  # its last beat, just now
    [waiting] = recover(tmp_path / "out")
    assert waiting.path is None and "may still be stopping" in waiting.note
    [kept] = recover(tmp_path / "out", now=time.time() + SETTLE_S + 1)
    assert kept.path == run_dir / "result-incomplete.json" and kept.steps == 3
    result = read_result(kept.path)
    assert result.status == "incomplete" and result.summary is None and result.system == "testbox"
    assert result.run_id == "0123456789abcdef0123456789abcdef" and "the supervisor was lost" in str(result.error)
    assert [s.index for s in result.steps] == [0, 1, 2], "complete lines only: the torn last line is dropped"
    assert not (run_dir / "heartbeat").exists()
    assert recover(tmp_path / "out") == [], "a recovered run is reported once"


def test_a_run_that_ended_is_not_recovered(tmp_path: Path) -> None:
    run_dir = tmp_path / "out" / "resnet50-cpu" / "20260101T000000Z-89abcdef"
    run_dir.mkdir(parents=True)
    (run_dir / RECORD_NAME).write_text(json.dumps({"run_id": "x", "config": {}}))
    (run_dir / "result.json").write_text("{}")
    assert recover(tmp_path / "out") == []
    (run_dir / "result.json").unlink()
    [bad] = recover(tmp_path / "out")  # no lock (the supervisor is gone), but run.json holds no config
    assert bad.path is None and "cannot be recovered" in bad.note
    assert recover(tmp_path / "nothing-here") == []


@pytest.mark.slow
def test_a_local_run_killed_with_sigkill_leaves_no_rank_and_sync_keeps_its_steps(tmp_path: Path) -> None:
    run = start_run(tmp_path, "--set", "measure_steps=100000", "--set", "precision=fp32")
    out = tmp_path / "o"
    try:
        wait_for_measurement(tmp_path, timeout=180, steps=2, run=run)
        [run_dir] = [p.parent for p in out.rglob("run.json")]
        assert rank_processes(str(run_dir)), "the rank runs before the supervisor is killed"
        os.kill(run.pid, signal.SIGKILL)
        took = wait_gone(str(run_dir))
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
    print(f"local rank exited {took:.1f} s after trainbench run's SIGKILL")
    assert took < 10
    time.sleep(max(0.0, SETTLE_S - took))
    synced = trainbench("sync", "--output-dir", str(out), cwd=tmp_path)
    text = " ".join(synced.stderr.split())
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert f"run {run_dir} lost its supervisor" in text and "result-incomplete.json" in text, text
    result = read_result(run_dir / "result-incomplete.json")
    assert result.status == "incomplete" and "supervisor was lost" in str(result.error)
    assert len([s for s in result.steps if s.phase is Phase.MEASUREMENT]) >= 2
    assert result.workload == "resnet50-cpu" and result.config.params["batch_size"] == 2
