"""Who used the CPU: the run's process tree against everyone else, from /proc (Linux).

The sampler process (``python -m harness.procstat``) runs beside the rank, not inside it,
so its readings take no CPU time or GIL from the training loop's process. Each reading
covers the interval since the previous one and is one JSON line on stdout:

``{"t": perf_counter, "cpu": [per-core % busy], "rss": tree RSS bytes, "machine_s": CPU-seconds
the machine offered (all cores, steal included), "run_s": CPU-seconds of the run's tree,
"others_s": busy CPU-seconds outside the tree, "steal_s": CPU-seconds stolen by the hypervisor}``.

Sources (proc(5)): ``/proc/stat`` cpu lines (user nice system idle iowait irq softirq steal,
in USER_HZ ticks; guest time is already inside user) and ``/proc/<pid>/stat`` fields 14-17
(utime stime cutime cstime) and 24 (rss pages). The tree's CPU time is the sum over live
members of their own and their reaped children's time, so a member that exits and is
reaped inside the tree keeps counting. The tree is walked through
``/proc/<pid>/task/<tid>/children`` (falling back to a scan of every pid's parent).
Only the standard library is imported, so the process starts in tens of milliseconds.

Given GPU UUIDs (``python -m harness.procstat ROOT INTERVAL GPU-... ...``), each reading
also holds ``"gpu"``: one NVML reading per GPU of the run (:mod:`harness.nvml`: the GPUs
named, plus those on which a process of the run's tree holds a compute context). Where NVML
cannot be used, one line ``{"gpu_error": why}`` says so and the CPU readings go on. When
stdin closes, a last reading is taken, so readings bracket the run's last window.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any

PROC = "/proc"


def cpu_lines(text: str) -> list[list[int]]:
    """The ``cpu`` lines of /proc/stat as tick counts: the aggregate first, then one per core."""
    return [[int(v) for v in line.split()[1:]] for line in text.splitlines() if line.startswith("cpu")]


def split_ticks(fields: list[int]) -> tuple[int, int, int]:
    """(total, busy, steal) ticks of one cpu line; busy excludes idle, iowait and steal."""
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    return busy + idle + iowait + steal, busy, steal


def pid_stat(text: str) -> tuple[int, int, int]:
    """(ppid, CPU ticks of the process and its reaped children, rss pages) from /proc/<pid>/stat."""
    rest = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(rest[1]), sum(int(v) for v in rest[11:15]), int(rest[21])


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:  # the process ended between listing and reading
        return None


def children(pid: int) -> list[int] | None:
    """Child pids of every thread of ``pid``; None when the kernel has no children files."""
    try:
        tids = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        text = _read(f"{PROC}/{pid}/task/{tid}/children")
        if text is None:
            if not os.path.exists(f"{PROC}/{pid}/task/{tid}"):
                continue
            return None
        out += [int(c) for c in text.split()]
    return out


def tree(root: int) -> list[int]:
    """``root`` and all its descendants."""
    seen, todo = {root}, [root]
    while todo:
        kids = children(todo.pop())
        if kids is None:
            return _tree_by_scan(root)
        fresh = [k for k in kids if k not in seen]
        seen.update(fresh)
        todo += fresh
    return sorted(seen)


def _tree_by_scan(root: int) -> list[int]:
    parent: dict[int, int] = {}
    for name in os.listdir(PROC):
        text = _read(f"{PROC}/{name}/stat") if name.isdigit() else None
        if text:
            parent[int(name)] = pid_stat(text)[0]
    members = {root}
    grew = True
    while grew:
        new = {p for p, pp in parent.items() if pp in members and p not in members}
        members |= new
        grew = bool(new)
    return sorted(members)


def ancestors(pid: int) -> list[int]:
    """Parent chain of ``pid`` (not ``pid`` itself), nearest first, without init (pid 1) and pid 0."""
    out: list[int] = []
    while len(out) < 4096:
        text = _read(f"{PROC}/{pid}/stat")
        if text is None:
            break
        pid = pid_stat(text)[0]
        if pid <= 1:
            break
        out.append(pid)
    return out


ROOT_PID_ENV = "TRAINBENCH_ROOT_PID"
"""The variable through which a supervisor names the root of its run's process tree."""


def resolve_root(env: Mapping[str, str], self_pid: int) -> int:
    """The run tree's root: ``TRAINBENCH_ROOT_PID`` when it is this process or one of its ancestors.

    The supervisor sets it to itself so sibling ranks and the supervisor count as the run.
    A pid from another pid namespace (a container), a stale value or init (pid 1, which
    would make the whole machine "the run") is not accepted, so the tree starts at ``self_pid``.
    """
    raw = env.get(ROOT_PID_ENV, "")
    if raw.isdigit() and (int(raw) == self_pid or int(raw) in ancestors(self_pid)):
        return int(raw)
    return self_pid


class Reader:
    """Computes one reading per call from the difference to the previous call."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.hz = os.sysconf("SC_CLK_TCK")
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.prev: tuple[list[list[int]], int] | None = None
        self.members: list[int] = []

    def read(self) -> dict[str, object] | None:
        """The reading since the previous call (None on the first call, which only primes)."""
        with open(f"{PROC}/stat") as f:
            cpus = cpu_lines(f.read())
        # stamped with the kernel's counters, before the tree is walked: a thread descheduled while it reads
        # the tree's /proc/PID/stat files must not move the stamp away from the ticks it goes with
        stamp = time.perf_counter()
        run_ticks = rss = 0
        self.members = tree(self.root)
        for pid in self.members:
            text = _read(f"{PROC}/{pid}/stat")
            if text:
                _, ticks, pages = pid_stat(text)
                run_ticks += ticks
                rss += pages * self.page
        prev, self.prev = self.prev, (cpus, run_ticks)
        if prev is None:
            return None
        (total, busy, steal), (p_total, p_busy, p_steal) = split_ticks(cpus[0]), split_ticks(prev[0][0])
        run = max(0, run_ticks - prev[1])
        per_core = []
        for now, before in zip(cpus[1:], prev[0][1:], strict=False):
            (t1, b1, s1), (t0, b0, s0) = split_ticks(now), split_ticks(before)
            per_core.append(round(100.0 * (b1 + s1 - b0 - s0) / (t1 - t0), 1) if t1 > t0 else 0.0)
        return {
            "t": stamp,
            "cpu": per_core,
            "rss": rss,
            "machine_s": (total - p_total) / self.hz,
            "run_s": run / self.hz,
            "others_s": max(0, busy - p_busy - run) / self.hz,
            "steal_s": (steal - p_steal) / self.hz,
        }


def _gpu_reader(uuids: list[str]) -> Any:
    """An NVML reader of ``uuids`` (:class:`harness.nvml.NvmlReader`), or None after a ``gpu_error`` line."""
    if not uuids:
        return None
    from harness.nvml import NvmlReader, NvmlUnavailable  # only here: a CPU run never loads NVML

    try:
        reader = NvmlReader(uuids)
    except NvmlUnavailable as exc:
        print(json.dumps({"gpu_error": str(exc)}), flush=True)
        return None
    if reader.unknown:
        print(json.dumps({"gpu_error": reader.unknown}), flush=True)
    return reader


def _emit(reader: Reader, gpus: Any) -> None:
    reading = reader.read()
    if reading is None:
        return
    if gpus is not None:
        gpus.add_tree(reader.members)
        read = gpus.read()
        if read:
            reading["gpu"] = read
    sys.stdout.write(json.dumps(reading) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    """``python -m harness.procstat ROOT_PID INTERVAL_S [GPU_UUID ...]``: one JSON line per interval until
    stdin closes, then a last one."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the rank; it stops us by closing stdin
    root, interval = int(argv[0]), float(argv[1])
    gpus = _gpu_reader(argv[2:])
    try:
        reader = Reader(root)
        reader.read()
        while not select.select([sys.stdin], [], [], interval)[0]:
            _emit(reader, gpus)
        _emit(reader, gpus)  # the last reading, after the run's last window
    except (OSError, ValueError) as exc:  # no /proc (not Linux), or a closed pipe: say why and stop
        with contextlib.suppress(OSError):
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    finally:
        if gpus is not None:
            gpus.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
