"""A rank's lifeline to its supervisor: ranks stop within seconds when ``trainbench run`` is gone.

A supervisor killed with SIGKILL (the OOM killer, a CI timeout) runs no clean-up, and a rank started by
a launcher (torchrun, horovodrun), inside a container or on a Slurm node is not its child, so no signal
reaches it: measured here, such a rank trained on, orphaned, for over 15 minutes. One mechanism covers
every launch, because the run directory is shared with every rank (a bind mount for docker, the shared
filesystem on a cluster):

- the supervisor's :class:`~workloads.heartbeat.Heartbeat` overwrites a small file in the run directory
  every ``interval_s`` (1 s), with a counter, so its bytes change at every beat;
- each rank's :class:`Lifeline` reads that file every ``poll_s`` and judges staleness by its OWN
  monotonic clock: if the bytes have not changed for ``timeout_s``, the supervisor is lost. No
  timestamps of two hosts are ever compared and file times are not used, so clock skew between hosts
  and NFS attribute caching do not matter (NFS close-to-open consistency makes each fresh ``open`` see
  the last closed write; the file is rewritten in place, never renamed, so a reader never holds a stale
  handle). Clock readings bracket each read, so a wait for the GIL inside one is never counted;
- on loss the rank's main thread gets SIGTERM, which ``workloads.rank`` turns into an interrupt that
  writes the partial measurement (``measurement.json``; the per-step ``progress.jsonl`` already holds
  every finished step), then ends at once (:meth:`Lifeline.exit_now`: no interpreter teardown). A rank
  that has not exited ``grace_s`` later (e.g. blocked in a collective waiting for a dead peer) is ended
  with ``os._exit``; its progress log still holds the measured steps;
- fast path: where the rank's parent process IS the supervisor (a local inline launch),
  ``PR_SET_PDEATHSIG`` makes the kernel signal the rank the moment that parent thread dies. The signal
  is a real-time one of its own (:data:`PDEATH_SIGNAL`), turned into SIGTERM: the parent's pid cannot
  tell, because a dying multi-threaded supervisor may first hand its children to a surviving thread of
  the same pid (seen in CI: a rank stopped so did not say why).

Worst case from the supervisor's death to the rank's exit: ``timeout_s + poll_s + grace_s`` (4 + 0.25 + 3 s
by default), inside the 10 s the suite promises; measured (2 vCPUs, loaded): 1.3 s by the parent-death signal,
5.5 s by the heartbeat, 7-9 s from a container. The job file names the heartbeat (``Heartbeat.job_entry``);
a job without a ``lifeline`` entry runs without one (e.g. ``python -m workloads.rank`` by hand). A heartbeat
is only as punctual as the machine runs the supervisor: :mod:`workloads.heartbeat` says what was seen.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from workloads.job import LifelineEntry

TIMEOUT_S = 4.0
"""Seconds without a changed heartbeat after which a rank considers its supervisor lost."""
GRACE_S = 3.0
"""Seconds a rank gets after SIGTERM to write its partial measurement before it is ended."""
POLL_S = 0.25
"""Seconds between two reads of the heartbeat by a rank."""
LOST_SUPERVISOR = "lost its supervisor"
"""The words of a rank's error when its heartbeat went stale (the supervisor finds them in the rank's error)."""
EXIT_CODE = 130
"""Exit status of a rank ended by its lifeline (as for an interrupt)."""
_MAX_READ = 256
_PR_SET_PDEATHSIG = 1
PDEATH_SIGNAL = int(signal.SIGRTMIN) + 1 if hasattr(signal, "SIGRTMIN") else int(signal.SIGTERM)  # Linux only
"""The parent-death signal a rank asks the kernel for: a signal of its own, so its arrival means exactly that."""


class Lifeline:
    """The rank's side: watch the supervisor's heartbeat; stop the rank when it goes stale.

    Args:
        path: the heartbeat file.
        timeout_s: seconds of unchanged content (by this process's monotonic clock) that mean "lost".
        grace_s: seconds between SIGTERM to the main thread and ``os._exit(EXIT_CODE)``.
        supervisor_pid: the supervisor's pid, for the parent-death fast path (None: no fast path).
        supervisor_host: the supervisor's host name (the pid is only meaningful there).
        poll_s: seconds between two reads.
        clock: the monotonic clock (seconds).
    """

    def __init__(
        self,
        path: Path,
        timeout_s: float = TIMEOUT_S,
        grace_s: float = GRACE_S,
        supervisor_pid: int | None = None,
        supervisor_host: str | None = None,
        poll_s: float = POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path, self.timeout_s, self.grace_s, self.poll_s = path, timeout_s, grace_s, poll_s
        self.supervisor_pid, self.supervisor_host, self._clock = supervisor_pid, supervisor_host, clock
        self._lost: str | None = None
        self._parent_watched = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_entry(cls, entry: LifelineEntry | None) -> Lifeline | None:
        """The lifeline a job asks for (its ``lifeline`` entry, validated by :class:`workloads.job.RankJob`),
        or None when it has none."""
        if entry is None:
            return None
        return cls(
            Path(entry.path),
            timeout_s=entry.timeout_s,
            grace_s=entry.grace_s,
            supervisor_pid=entry.supervisor_pid,
            supervisor_host=entry.supervisor_host,
        )

    def _read(self) -> bytes | None:
        try:
            with self.path.open("rb") as f:
                return f.read(_MAX_READ)
        except OSError:
            return None

    def lost_reason(self) -> str | None:
        """Why the supervisor counts as lost, or None while it is alive."""
        if self._lost is None and self._parent_watched and os.getppid() != self.supervisor_pid:
            self._lost = f"its supervisor (pid {self.supervisor_pid}, its parent) died"
        return self._lost

    def _parent_died(self, signum: int = PDEATH_SIGNAL, frame: object = None) -> None:
        self._lost = self._lost or f"its supervisor (pid {self.supervisor_pid}, its parent) died"
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)

    def _watch_parent(self) -> None:
        """Ask for :data:`PDEATH_SIGNAL` when this process's parent is the supervisor (Linux; main thread only)."""
        if self.supervisor_pid is None or self.supervisor_host != socket.gethostname():
            return
        if not sys.platform.startswith("linux") or os.getppid() != self.supervisor_pid:
            return
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            previous = signal.signal(PDEATH_SIGNAL, self._parent_died)  # before prctl: its default action kills
            if libc.prctl(_PR_SET_PDEATHSIG, PDEATH_SIGNAL, 0, 0, 0) != 0:
                signal.signal(PDEATH_SIGNAL, previous)
                return
            self._parent_watched = True
            if os.getppid() != self.supervisor_pid:  # it died before prctl took effect
                self._parent_died()

    def start(self) -> Lifeline:
        """Arm the parent-death fast path and start watching in a daemon thread (call from the main thread)."""
        self._watch_parent()
        self._thread = threading.Thread(target=self._run, name="trainbench-lifeline", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (the rank no longer needs its supervisor)."""
        self._stop.set()

    def exit_now(self, code: int, message: str | None = None) -> NoReturn:
        """End the rank at once with ``code`` (after printing ``message`` and flushing its output).

        Called by the rank once it has written its partial measurement after losing its supervisor:
        nobody waits for its orderly teardown, which takes seconds with torch and the libraries of its
        collectives (measured here: 4-7 s on a loaded node, which had ranks outlive their supervisor by > 10 s).
        """
        if message:
            print(message, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    def _run(self) -> None:
        last = self._read()
        changed_at = self._clock()
        while not self._stop.wait(self.poll_s):
            before, current, after = self._clock(), self._read(), self._clock()  # evaluated in this order
            if current != last:
                last, changed_at = current, after
            elif before - changed_at > self.timeout_s:
                state = "missing" if current is None else "unchanged"
                self._lose(f"{LOST_SUPERVISOR}: heartbeat {self.path} {state} for {before - changed_at:.1f} s")
                return

    def _lose(self, reason: str) -> None:
        self._lost = reason
        print(f"trainbench rank: {reason}; stopping as on SIGTERM", file=sys.stderr, flush=True)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGTERM)
        if self._stop.wait(self.grace_s):
            return
        print(
            f"trainbench rank: still running {self.grace_s:.0f} s after SIGTERM; exiting "
            "(the progress log keeps the measured steps)",
            file=sys.stderr,
            flush=True,
        )
        os._exit(EXIT_CODE)
