"""The supervisor's side of a rank's lifeline: a file in the run directory rewritten every second.

:mod:`workloads.lifeline` is the rank's side and says how the two work together. The heartbeat is written
by a daemon thread of the supervisor (``trainbench run``), so a beat is only as punctual as the machine
lets that thread run. On a 2-vCPU Xeon (Linux 6.18, cgroup v1, ``kernel.sched_autogroup_enabled=1``),
while two TensorFlow ranks in a container started (import and tracing, both CPUs busy), the longest gap
between two beats was 1.2-3.7 s in 15 runs (median 1.85 s; 3.4-3.7 s in 4), and in 2 of 6 more runs it
passed the ranks' 4 s timeout, so they stopped as if the supervisor had died. A separate process that
only slept 50 ms at a time waited up to 2.8 s on the run queue meanwhile: the kernel left whole
processes without CPU, not just the thread without the GIL. With autogroup off the longest gap in 8
runs was 1.1-1.7 s. Autogroup (a scheduling group per session) only applies to processes outside any
cgroup, as on that machine; a systemd host's sessions are cgroups. :attr:`Heartbeat.longest_gap_s`
records the longest gap, so a run whose ranks gave up on a live supervisor says how long it was starved
(:func:`suite.run.leftovers.lost_supervisor_note`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

from workloads.job import LifelineEntry
from workloads.lifeline import GRACE_S, TIMEOUT_S

HEARTBEAT_NAME = "heartbeat"
"""The heartbeat file's name in the run directory."""
INTERVAL_S = 1.0
"""Seconds between two beats of the supervisor."""
RECORD_BYTES = 128
"""Bytes of one beat (a record padded with spaces); every beat overwrites the same bytes."""


class Heartbeat:
    """The supervisor's side: rewrite ``path`` every ``interval_s`` seconds from a daemon thread.

    Use as ``with Heartbeat(run_dir / HEARTBEAT_NAME) as hb: job["lifeline"] = hb.job_entry(); ...`` or with
    :meth:`start` / :meth:`stop`. Start it before the ranks start, stop it after they have exited:
    stopping it (or the supervisor's death) makes every rank still running stop.

    Attributes:
        path: the heartbeat file (in the run directory, which every rank sees at the same path).
        interval_s: seconds between beats.
        last_error: the last write error (e.g. a full disk), or None; the beat keeps retrying.
        longest_gap_s: the longest time between the starts of two beats so far, in seconds: about
            ``interval_s`` while the machine runs the supervisor on time. When a rank lost its supervisor
            while it lived, this tells how long the machine left it without CPU.
    """

    def __init__(self, path: Path, interval_s: float = INTERVAL_S) -> None:
        if not (0 < interval_s <= 60):
            raise ValueError(f"heartbeat interval {interval_s} s: expected 0 < interval <= 60")
        self.path = path
        self.interval_s = interval_s
        self.last_error: OSError | None = None
        self._count = 0
        self.longest_gap_s = 0.0
        self._beat_at: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        """Write one beat, ``<counter> <pid> <host> <unix time>`` (the time is for people) in :data:`RECORD_BYTES`,
        over the last one in place. Truncating (only the first beat does) makes ext4 flush the file at close: under
        image builds here 3 ms median, up to 0.37 s, against 20 us and 38 ms in place; beats came seconds late."""
        self._count += 1
        now = time.monotonic()
        if self._beat_at is not None:
            self.longest_gap_s = max(self.longest_gap_s, now - self._beat_at)
        self._beat_at = now
        text = f"{self._count} {os.getpid()} {socket.gethostname()} {time.time():.3f}".encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if self._count == 1 else 0), 0o644)
            try:
                os.pwrite(fd, text[: RECORD_BYTES - 1].ljust(RECORD_BYTES - 1) + b"\n", 0)
            finally:
                os.close(fd)
            self.last_error = None
        except OSError as exc:
            self.last_error = exc

    def start(self) -> Heartbeat:
        """Write the first beat now (so a rank never starts before it), then beat in the background.

        Raises:
            OSError: the first beat cannot be written (the run directory is not writable).
        """
        self.beat()
        if self.last_error is not None:
            raise self.last_error
        self._thread = threading.Thread(target=self._run, name="trainbench-heartbeat", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()

    def stop(self, remove: bool = True) -> None:
        """Stop beating (ranks still running then stop within the lifeline's timeout); remove the file.

        The time since the last beat counts in :attr:`longest_gap_s`: a supervisor stopped or starved
        past a rank's timeout may be asked to stop before its thread beats again, and the gap it is
        to report would otherwise be lost (a CI run said "never went more than 1.0 s" after a 7 s SIGSTOP).
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self._beat_at is not None:
                self.longest_gap_s = max(self.longest_gap_s, time.monotonic() - self._beat_at)
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def job_entry(self, timeout_s: float = TIMEOUT_S, grace_s: float = GRACE_S) -> LifelineEntry:
        """The job's ``lifeline`` entry that points the ranks at this heartbeat.

        ``supervisor_pid`` is None when the supervisor is its PID namespace's init (pid 1, e.g. ``trainbench
        run`` as a container's entrypoint): when it dies the kernel kills every process of the namespace.
        """
        pid = os.getpid()
        return LifelineEntry(
            path=str(self.path),
            timeout_s=timeout_s,
            grace_s=grace_s,
            supervisor_pid=pid if pid > 1 else None,
            supervisor_host=socket.gethostname(),
        )

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
