"""Interference detection: CPU time outside the run's process tree and steal, per measurement window.

Real processes on the real machine: a busy loop started outside the tree must be counted as
interference and flag the window; the same loop inside the tree is the run's own time. The
machine is shared and may already be loaded, so the busy case is asserted strongly and the
quiet case only where the machine's background load, measured first, leaves room for it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from harness.procstat import Reader, ancestors, cpu_lines, pid_stat, resolve_root, split_ticks, tree
from harness.records import Phase, WindowRecord
from harness.sampler import UtilizationSampler
from harness.utilization import OTHERS_CORES_THRESHOLD, STEAL_THRESHOLD, UtilizationSample, summarize_utilization

BUSY = [sys.executable, "-c", "while True: pass"]
HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        return pid_stat(f.read())[1] / HZ


@pytest.fixture
def outsider() -> Iterator[int]:
    """A busy loop outside this process's tree: started by a shell that exits, so init adopts it."""
    sh = subprocess.run(
        ["sh", "-c", f"{BUSY[0]} -c 'while True: pass' >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
    )
    pid = int(sh.stdout.strip())
    try:
        yield pid
    finally:
        os.kill(pid, signal.SIGKILL)


def sampled_window(seconds: float, interval: float = 0.1) -> tuple[list[UtilizationSample], list[WindowRecord]]:
    """Sample while this process sleeps; one measurement window covering every reading."""
    origin = time.perf_counter()
    with UtilizationSampler(interval, origin=origin) as sampler:
        time.sleep(seconds)
    assert sampler.error is None
    readings = sampler.samples
    assert len(readings) >= 3
    return readings, [WindowRecord(0, Phase.MEASUREMENT, 0.0, readings[-1].t_s + 1.0, 1, 1)]


def test_a_busy_process_outside_the_tree_is_interference(outsider: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAINBENCH_ROOT_PID", raising=False)
    assert outsider not in tree(os.getpid())
    before = cpu_s(outsider)
    readings, windows = sampled_window(2.0)
    used = cpu_s(outsider) - before
    assert used > 0.2  # it really ran, even on a loaded machine
    others = sum(r.others_cpu_s or 0.0 for r in readings)
    run = sum(r.run_cpu_s or 0.0 for r in readings)
    assert others >= 0.5 * used  # its CPU time is counted as interference...
    assert run < 0.5 * used  # ...and not as the run's
    summary = summarize_utilization(readings, windows)
    assert summary.disturbed
    assert summary.disturbed_windows == 1
    assert summary.others_cores is not None and summary.others_cores >= OTHERS_CORES_THRESHOLD
    assert summary.windows[0].disturbed and summary.windows[0].readings == len(readings)
    assert summary.interference is not None and "Fix: re-run when nothing else runs" in summary.interference


def test_a_busy_process_inside_the_tree_is_the_runs_own_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAINBENCH_ROOT_PID", raising=False)
    child = subprocess.Popen(BUSY)
    try:
        assert child.pid in tree(os.getpid())
        before = cpu_s(child.pid)
        readings, _ = sampled_window(2.0)
        used = cpu_s(child.pid) - before
    finally:
        child.kill()
        child.wait()
    assert used > 0.2
    assert sum(r.run_cpu_s or 0.0 for r in readings) >= 0.5 * used


def background_others(seconds: float = 1.0) -> float:
    """Cores kept busy outside this process's tree while it sleeps."""
    reader = Reader(os.getpid())
    reader.read()
    t0 = time.perf_counter()
    time.sleep(seconds)
    r = reader.read()
    assert r is not None
    return float(r["others_s"]) / (time.perf_counter() - t0)  # type: ignore[arg-type]


def test_a_quiet_window_is_not_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAINBENCH_ROOT_PID", raising=False)
    load = background_others()
    if load >= OTHERS_CORES_THRESHOLD / 2:
        pytest.skip(f"the machine is not quiet: others already keep {load:.2f} cores busy")
    readings, windows = sampled_window(1.0)
    summary = summarize_utilization(readings, windows)
    assert summary.others_cores is not None and summary.others_cores < OTHERS_CORES_THRESHOLD
    assert not summary.disturbed
    assert summary.interference is None


# --- the run tree's root ------------------------------------------------------------------------------


def test_root_pid_from_the_environment_only_when_it_is_an_ancestor() -> None:
    me = os.getpid()
    parent = os.getppid()
    assert resolve_root({}, me) == me
    assert resolve_root({"TRAINBENCH_ROOT_PID": str(me)}, me) == me
    if parent > 1:
        assert parent in ancestors(me)
        assert resolve_root({"TRAINBENCH_ROOT_PID": str(parent)}, me) == parent
        assert me in tree(parent)
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert resolve_root({"TRAINBENCH_ROOT_PID": str(sibling.pid)}, me) == me  # a child, not an ancestor
    finally:
        sibling.kill()
        sibling.wait()
    for bad in ("1", "0", "-5", "abc", "", str(2**22 + 7)):
        assert resolve_root({"TRAINBENCH_ROOT_PID": bad}, me) == me
    assert UtilizationSampler(root_pid=123).root_pid == 123


# --- parsing /proc --------------------------------------------------------------------------------------


def test_proc_parsers() -> None:
    stat = "cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 7 0\ncpu1 50 3 25 400 10 2 1 5 0 0\nintr 1\n"
    lines = cpu_lines(stat)
    assert lines[0] == [100, 5, 50, 800, 20, 3, 2, 10, 7, 0]
    assert len(lines) == 3
    # total includes idle, iowait and steal; busy excludes them; guest is already inside user
    assert split_ticks(lines[0]) == (100 + 5 + 50 + 800 + 20 + 3 + 2 + 10, 100 + 5 + 50 + 3 + 2, 10)
    # a command name with spaces and parentheses; fields 14-17 are utime stime cutime cstime, 24 rss
    fields = ["S", "42"] + ["0"] * 9 + ["11", "12", "13", "14"] + ["0"] * 6 + ["99"]
    assert pid_stat(f"1234 (evil ) (name) {' '.join(fields)} 0 0") == (42, 11 + 12 + 13 + 14, 99)


# --- the per-window verdict on synthetic readings ---------------------------------------------------------


def reading(t: float, others: float, steal: float = 0.0, machine: float = 1.0) -> UtilizationSample:
    """A reading of a 2-core machine over ``machine / 2`` seconds; ``others`` in CPU-seconds."""
    return UtilizationSample(t, [50.0, 50.0], 1, machine, machine - others - steal, others, steal)


def test_thresholds_and_windows_on_synthetic_readings() -> None:
    windows = [
        WindowRecord(0, Phase.MEASUREMENT, 0.0, 3.0, 3, 3, rank=0),
        WindowRecord(0, Phase.MEASUREMENT, 0.5, 3.0, 3, 3, rank=1),  # rank 1's window ends later: merged
        WindowRecord(1, Phase.WARMUP, 4.0, 1.0, 1, 1),
        WindowRecord(1, Phase.MEASUREMENT, 5.0, 2.0, 2, 2),
        WindowRecord(2, Phase.MEASUREMENT, 8.0, 2.0, 2, 2),
        WindowRecord(3, Phase.MEASUREMENT, 11.0, 0.1, 1, 1),  # no reading inside
    ]
    samples = [
        reading(1.0, 0.05),
        reading(3.5, 0.16),  # inside repeat 0 only through rank 1's later end
        reading(4.5, 0.9),  # warm-up: ignored
        reading(6.0, 0.099),
        reading(7.0, 0.0, steal=0.2),  # steal alone disturbs: 0.2 of 2 CPU-seconds
        reading(9.0, 0.02),
        reading(10.0, 0.02),
    ]
    u = summarize_utilization(samples, windows)
    assert u.samples == 6
    got = [(w.repeat, w.readings, w.disturbed) for w in u.windows]
    assert got == [(0, 2, True), (1, 2, True), (2, 2, False), (3, 0, False)]
    assert u.windows[0].others_cpu_fraction == pytest.approx((0.05 + 0.16) / 2)
    assert u.windows[0].others_cores == pytest.approx(0.21)  # 0.21 CPU-seconds over 1 s of wall time
    assert u.windows[1].steal_fraction == pytest.approx(0.10)
    assert u.windows[1].others_cpu_fraction == pytest.approx(0.0495)
    assert u.windows[3].others_cpu_fraction is None
    assert (u.disturbed, u.disturbed_windows) == (True, 2)
    assert u.interference == (
        "2 of 4 measurement windows were disturbed: other processes kept up to 0.21 cores busy (threshold 0.2) "
        "and the hypervisor stole up to 10% of the CPU time (threshold 10%). "
        "Fix: re-run when nothing else runs on the machine, or on dedicated CPUs"
    )
    # exactly at the thresholds counts; just below does not (0.1 CPU-seconds in 0.5 s = 0.2 cores)
    at = summarize_utilization([reading(1.0, 0.10)], windows[:1])
    below = summarize_utilization([reading(1.0, 0.0999)], windows[:1])
    assert (at.disturbed, below.disturbed) == (True, False)
    assert summarize_utilization([reading(1.0, 0.0, steal=STEAL_THRESHOLD)], windows[:1]).disturbed
    assert not summarize_utilization([reading(1.0, 0.0, steal=0.0999)], windows[:1]).disturbed
    # on 16 cores one busy core is 6% of the machine, and still disturbs
    big = UtilizationSample(1.0, [50.0] * 16, 1, 16.0, 10.0, 1.0, 0.0)
    big_u = summarize_utilization([big], windows[:1])
    assert big_u.others_cpu_fraction == pytest.approx(1 / 16)
    assert big_u.others_cores == pytest.approx(1.0)
    assert big_u.disturbed
    assert u.to_dict()["windows"][0] == {
        "repeat": 0,
        "readings": 2,
        "others_cpu_fraction": pytest.approx(0.105),
        "steal_fraction": 0.0,
        "disturbed": True,
        "others_cores": pytest.approx(0.21),
    }


def test_readings_without_interference_fields_say_nothing() -> None:
    # results written before interference sampling carry only t_s, cpu_percent and rss_bytes
    old = [UtilizationSample(1.0, [90.0], 5), UtilizationSample(2.0, [80.0], 6)]
    u = summarize_utilization(old, [WindowRecord(0, Phase.MEASUREMENT, 0.0, 3.0, 2, 2)])
    assert (u.samples, u.cpu_mean_percent, u.rss_peak_bytes) == (2, 85.0, 6)
    assert (u.others_cpu_fraction, u.steal_fraction, u.disturbed, u.interference) == (None, None, False, None)
    assert u.others_cores is None
    assert u.windows[0].readings == 0
