"""Ranks that give up on a supervisor that was alive but got no CPU: the run says so, and how long.

On a loaded 2-vCPU machine the kernel left ``trainbench run`` without CPU for over 4 s while two
TensorFlow ranks started (:mod:`workloads.heartbeat`), and the ranks stopped as if it had died.
Here a real supervisor is stopped with SIGSTOP (no CPU at all) for longer than the ranks' timeout
and resumed: its heartbeat's longest gap and the fix must be in the run's error.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from suite.results import read_result
from suite.runtimes.leftovers import lost_supervisor_note
from tests.faults.helpers import start_run, wait_for_measurement
from workloads.heartbeat import Heartbeat
from workloads.lifeline import LOST_SUPERVISOR, TIMEOUT_S

LOST = f"interrupted (SIGTERM: {LOST_SUPERVISOR}: heartbeat x unchanged for 4.0 s) after 3 steps"


def test_the_longest_gap_between_beats_is_recorded(tmp_path: Path) -> None:
    hb = Heartbeat(tmp_path / "heartbeat", interval_s=60)
    hb.beat()
    assert hb.longest_gap_s == 0.0, "one beat has no gap"
    time.sleep(0.3)
    hb.beat()
    hb.beat()
    assert 0.3 <= hb.longest_gap_s < 5.0


def test_the_gap_since_the_last_beat_counts_when_the_heartbeat_stops(tmp_path: Path) -> None:
    """A supervisor asked to stop before its thread beats again still reports the gap it is in."""
    hb = Heartbeat(tmp_path / "heartbeat", interval_s=30.0).start()
    time.sleep(0.5)
    hb.stop()
    assert 0.5 <= hb.longest_gap_s < 30.0


def test_a_live_supervisor_starved_past_the_timeout_is_told_with_its_gap_and_the_fix(tmp_path: Path) -> None:
    hb = Heartbeat(tmp_path / "heartbeat")
    hb.longest_gap_s = 4.6
    on, off = tmp_path / "on", tmp_path / "off"
    on.write_text("1\n")
    off.write_text("0\n")
    note = lost_supervisor_note(LOST, hb, autogroup=on)
    assert note is not None and "went 4.6 s without a beat" in note and "gave it no CPU" in note
    assert "intra_op_threads" in note and "kernel.sched_autogroup_enabled=0" in note
    note = lost_supervisor_note(LOST, hb, autogroup=off)
    assert note is not None and "autogroup" not in note
    assert "autogroup" not in str(lost_supervisor_note(LOST, hb, autogroup=tmp_path / "missing"))


def test_a_supervisor_that_beat_on_time_points_at_the_shared_directory(tmp_path: Path) -> None:
    hb = Heartbeat(tmp_path / "heartbeat")
    hb.longest_gap_s = 1.1
    note = lost_supervisor_note(LOST, hb)
    assert note is not None and "never went more than 1.1 s" in note and str(tmp_path) in note


def test_no_note_when_no_rank_lost_its_supervisor(tmp_path: Path) -> None:
    hb = Heartbeat(tmp_path / "heartbeat")
    hb.longest_gap_s = 9.0
    assert lost_supervisor_note(None, hb) is None
    assert lost_supervisor_note("the rank exited with code 1 before finishing", hb) is None


def test_a_supervisor_stopped_past_the_ranks_timeout_reports_its_gap_and_keeps_the_steps(tmp_path: Path) -> None:
    run = start_run(tmp_path, "--set", "measure_steps=100000", "--set", "precision=fp32")
    out = tmp_path / "o"
    try:
        wait_for_measurement(tmp_path, timeout=180, steps=2, run=run)
        os.kill(run.pid, signal.SIGSTOP)
        time.sleep(TIMEOUT_S + 3.0)  # the rank (its child: no parent-death signal) gives up after TIMEOUT_S
        os.kill(run.pid, signal.SIGCONT)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            os.kill(run.pid, signal.SIGCONT)
            run.kill()
            run.communicate()
    said = " ".join((stdout + stderr).split())
    assert run.returncode != 0, said[-3000:]
    assert LOST_SUPERVISOR in said and "this supervisor was alive, but its heartbeat went" in said, said[-3000:]
    assert "gave it no CPU" in said and "Traceback" not in said, said[-3000:]
    [kept] = list(out.rglob("result-incomplete.json"))
    result = read_result(kept)
    assert result.status == "incomplete" and "this supervisor was alive" in str(result.error)
    assert len([s for s in result.steps if s.phase.value == "measurement"]) >= 2
