"""Ranks outlive no supervisor: a real rank stops within 10 s of its supervisor's SIGKILL and keeps its steps.

The supervisor here is a small real process that does what ``trainbench run`` does:
it starts a :class:`workloads.heartbeat.Heartbeat` in the run directory, names it in
the job file, and starts ``python -m workloads.rank``, either as its own child (the
parent-death fast path) or through an intermediate launcher process (as torchrun or
horovodrun start ranks), where only the heartbeat can tell the rank.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from suite.specs import resolve
from tests.conftest import REPO
from workloads.heartbeat import RECORD_BYTES, Heartbeat
from workloads.job import LifelineEntry
from workloads.lifeline import EXIT_CODE, Lifeline

LONG_TINY = [
    "batch_size=2",
    "image_size=64",
    "precision=fp32",
    "channels_last=false",
    "warmup_steps=1",
    "warmup_seconds=0",
    "measure_steps=100000",
    "measure_seconds=0",
    "repeats=1",
    "sampler_interval_s=0.1",
]
"""A real fp32 ResNet-50 rank (batch 2, 64x64) that would train for hours unless stopped."""

SUPERVISOR_SETUP = """
import json, subprocess, sys, threading, time
from pathlib import Path
from workloads.heartbeat import Heartbeat
run_dir = Path(sys.argv[1])
hb = Heartbeat(run_dir / "heartbeat").start()
job = json.loads((run_dir / "job.json").read_text())
job["lifeline"] = hb.job_entry().model_dump()
(run_dir / "job.json").write_text(json.dumps(job))
rank = [sys.executable, "-m", "workloads.rank", "--job", str(run_dir / "job.json"),
        "--out", str(run_dir / "measurement.json"), "--progress", str(run_dir / "progress.jsonl")]
"""
"""A supervisor script's start (argv[1]: the run directory): a heartbeat, the job naming it, the rank's command."""

SUPERVISOR = (
    SUPERVISOR_SETUP
    + """
via_launcher = sys.argv[2] == "1"
launcher = [sys.executable, "-c", "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"]
log = (run_dir / "rank.log").open("w")
proc = subprocess.Popen((launcher if via_launcher else []) + rank, stdout=log, stderr=subprocess.STDOUT)
(run_dir / "child.pid").write_text(str(proc.pid))
sys.exit(proc.wait())
"""
)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _rank_pid(run_dir: Path, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with_pid = run_dir / "child.pid"
        if with_pid.exists():
            child = psutil.Process(int(with_pid.read_text()))
            for p in [child, *child.children(recursive=True)]:
                if "workloads.rank" in " ".join(p.cmdline()):
                    return p.pid
        time.sleep(0.1)
    raise AssertionError(f"no rank started; log:\n{(run_dir / 'rank.log').read_text()}")


def _wait_for_steps(run_dir: Path, n: int, timeout: float = 180) -> None:
    progress = run_dir / "progress.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if progress.exists() and progress.read_text().count('"measurement"') >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"the rank measured fewer than {n} steps; log:\n{(run_dir / 'rank.log').read_text()}")


@pytest.mark.parametrize("via_launcher", [False, True], ids=["parent-death", "heartbeat"])
def test_rank_stops_within_10s_of_its_supervisors_death_and_keeps_its_steps(tmp_path: Path, via_launcher: bool) -> None:
    resolve("resnet50-cpu", overrides=LONG_TINY).job().write(tmp_path / "job.json")
    args = [sys.executable, "-c", SUPERVISOR, str(tmp_path), "1" if via_launcher else "0"]
    supervisor = subprocess.Popen(args, cwd=REPO)
    launcher_pid = None
    try:
        rank = _rank_pid(tmp_path)
        launcher_pid = int((tmp_path / "child.pid").read_text()) if via_launcher else None
        _wait_for_steps(tmp_path, 2)
        supervisor.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        supervisor.wait()
        while not _gone(rank) and time.monotonic() - killed < 30:
            time.sleep(0.05)
        took = time.monotonic() - killed
        assert _gone(rank), "the rank was still training 30 s after its supervisor died"
        path = "heartbeat" if via_launcher else "pdeathsig"
        print(f"rank exited {took:.1f} s after its supervisor's SIGKILL ({path})")
        assert took < 10, f"the rank took {took:.1f} s to stop (limit 10 s)"
    finally:
        for pid in (launcher_pid,):
            if pid is not None and not _gone(pid):
                os.kill(pid, signal.SIGKILL)
    measurement = json.loads((tmp_path / "measurement.json").read_text())
    assert measurement["complete"] is False
    assert measurement["error"].startswith("interrupted (SIGTERM")
    assert ("lost its supervisor" if via_launcher else "died") in measurement["error"]
    measured = [s for s in measurement["steps"] if s["phase"] == "measurement"]
    assert len(measured) >= 2, "the steps measured before the supervisor died are kept"


def test_a_rank_that_ignores_sigterm_is_ended_after_the_grace_period(tmp_path: Path) -> None:
    """The hard-exit path: a process stuck where SIGTERM does not stop it (here: ignored) still ends."""
    beat = tmp_path / "heartbeat"
    script = (
        "import signal, sys, time\nfrom pathlib import Path\nfrom workloads.lifeline import Lifeline\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"Lifeline(Path({str(beat)!r}), timeout_s=1.0, grace_s=1.0).start()\n"
        "time.sleep(60)\nsys.exit(0)\n"
    )
    with Heartbeat(beat, interval_s=0.2):
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)
        assert proc.poll() is None, "a living heartbeat must keep the rank running"
    stopped = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == EXIT_CODE
    assert "lost its supervisor" in err and "exiting" in err
    assert time.monotonic() - stopped < 1.0 + 0.25 + 1.0 + 2.0


def test_heartbeat_bytes_change_every_beat_and_stop_removes_the_file(tmp_path: Path) -> None:
    hb = Heartbeat(tmp_path / "heartbeat", interval_s=0.05)
    hb.beat()
    first = hb.path.read_bytes()
    hb.beat()
    assert hb.path.read_bytes() != first
    hb.start()
    hb.stop()
    assert not hb.path.exists()


def test_beats_overwrite_one_record_in_place_and_only_the_first_truncates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A truncating rewrite makes ext4 flush the file at close (up to 0.37 s here under image builds): only
    the first beat may truncate (a longer leftover file), every later one overwrites the same bytes."""
    path = tmp_path / "heartbeat"
    path.write_bytes(b"x" * 1000)
    opened: list[int] = []
    real_open = os.open

    def spy(file: Any, flags: int, mode: int = 0o777) -> int:
        opened.append(flags)
        return real_open(file, flags, mode)

    monkeypatch.setattr(os, "open", spy)
    hb = Heartbeat(path)
    records = []
    for _ in range(3):
        hb.beat()
        records.append(path.read_bytes())
    assert [bool(flags & os.O_TRUNC) for flags in opened] == [True, False, False]
    assert all(len(r) == RECORD_BYTES and r.endswith(b"\n") for r in records)
    assert [int(r.split()[0]) for r in records] == [1, 2, 3] and int(records[0].split()[1]) == os.getpid()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"timeout_s": 2}, "non-empty 'path'"),
        ({"path": "hb", "timeout_s": "soon"}, "number of seconds"),
        ({"path": "hb", "timeout_s": 0.01}, "outside"),
        ({"path": "hb", "grace_s": float("nan")}, "number of seconds"),
        ({"path": "hb", "supervisor_pid": True}, "process id"),
    ],
)
def test_a_malformed_lifeline_entry_is_refused(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LifelineEntry.model_validate(entry)


def test_a_job_without_a_lifeline_entry_gets_none() -> None:
    assert Lifeline.from_entry(resolve("resnet50-cpu", overrides=LONG_TINY).job().lifeline) is None


class _ScriptedReads(Lifeline):
    """A lifeline that reads the real heartbeat file on an injected clock, following a script: before each
    read the supervisor may beat, and after it the thread may stall (waiting for the GIL after its read()
    syscall); it records a loss instead of signalling the main thread, and stops when the script ends."""

    def __init__(self, hb: Heartbeat, script: list[tuple[bool, float]]) -> None:
        self.now, self.hb, self.script = 0.0, hb, script
        super().__init__(hb.path, timeout_s=4.0, poll_s=0.001, clock=lambda: self.now)

    def _read(self) -> bytes | None:
        beat_first, stall_s = self.script.pop(0)
        if beat_first:
            self.hb.beat()
        content = super()._read()
        self.now += stall_s
        if not self.script:
            self._stop.set()
        return content

    def _lose(self, reason: str) -> None:
        self._lost = reason


def test_a_stall_inside_a_read_is_not_a_lost_supervisor(tmp_path: Path) -> None:
    """The rank's thread reads the beat, then waits 4.5 s for the GIL before it looks at the clock (seen in
    CI: both ranks of a TensorFlow run lost a live supervisor while tracing); the next read sees a new beat.
    The beat it read was fresh, so the supervisor was never lost."""
    hb = Heartbeat(tmp_path / "heartbeat")
    hb.beat()
    lifeline = _ScriptedReads(hb, [(False, 0.0), (False, 4.5), (True, 0.3)])
    lifeline._run()
    assert lifeline.lost_reason() is None


def test_a_heartbeat_unchanged_past_the_timeout_is_a_lost_supervisor(tmp_path: Path) -> None:
    """The same reads, 0.3 s apart by the clock, with no new beat: unchanged for 4.2 s is a lost supervisor."""
    hb = Heartbeat(tmp_path / "heartbeat")
    hb.beat()
    lifeline = _ScriptedReads(hb, [(False, 0.0)] + [(False, 0.3)] * 20)
    lifeline._run()
    assert lifeline.lost_reason() == f"lost its supervisor: heartbeat {hb.path} unchanged for 4.2 s"


THREAD_SUPERVISOR = (
    SUPERVISOR_SETUP
    + """

def spawn_and_return():
    proc = subprocess.Popen(rank, stdout=(run_dir / "rank.log").open("w"), stderr=subprocess.STDOUT)
    (run_dir / "child.pid").write_text(str(proc.pid))
    while not (run_dir / "go").exists():
        time.sleep(0.05)

t = threading.Thread(target=spawn_and_return)
t.start()
t.join()  # the thread that started the rank is gone; this process (same pid) lives and beats on
time.sleep(120)
"""
)


def test_a_rank_whose_parent_thread_dies_says_its_supervisor_died_though_the_pid_lives(tmp_path: Path) -> None:
    """The kernel's parent-death signal follows the parent THREAD; the orphan goes to a surviving thread of
    the same pid. That is what a multi-threaded supervisor's SIGKILL can look like (seen in CI: the rank
    stopped 0.1 s after the kill but its error said only "interrupted (SIGTERM)"): the rank must say why."""
    resolve("resnet50-cpu", overrides=LONG_TINY).job().write(tmp_path / "job.json")
    supervisor = subprocess.Popen([sys.executable, "-c", THREAD_SUPERVISOR, str(tmp_path)], cwd=REPO)
    try:
        rank = _rank_pid(tmp_path)
        _wait_for_steps(tmp_path, 2)
        assert psutil.Process(rank).ppid() == supervisor.pid
        (tmp_path / "go").touch()  # the spawning thread returns
        deadline = time.monotonic() + 30
        while not _gone(rank) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(rank), "the rank kept training after its parent thread died"
        assert supervisor.poll() is None, "the supervisor's process is still alive"
    finally:
        supervisor.kill()
        supervisor.wait()
    measurement = json.loads((tmp_path / "measurement.json").read_text())
    assert measurement["error"].startswith("interrupted (SIGTERM: its supervisor (pid ")
    assert measurement["error"].endswith(f"{supervisor.pid}, its parent) died) after {len(measurement['steps'])} steps")
