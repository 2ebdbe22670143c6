"""What the ranks of a run leave in its directory, read back by the supervisor: the progress log
as it grows (:func:`tail_progress`), the steps of a rank that died (:func:`steps_from_log`), and
every local rank's partial measurement (:func:`partial_ranks`), and what the supervisor's own
heartbeat says when ranks gave up on it while it lived (:func:`lost_supervisor_note`).

Each rank appends its step records to ``progress[-rank<r>].jsonl`` (a write-ahead log) and
writes ``measurement[-rank<r>].json`` when it ends, so a rank that dies still leaves its steps.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.records import StepRecord
from suite.runtimes.base import ProgressCallback
from workloads.heartbeat import Heartbeat
from workloads.lifeline import LOST_SUPERVISOR, TIMEOUT_S
from workloads.measurement import RankMeasurement

AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")
"""Linux's autogroup switch ("1": processes outside any cgroup are scheduled in a group per session)."""


def tail_progress(path: Path, offset: int, on_progress: ProgressCallback | None) -> int:
    """Feed complete new lines of the progress log to ``on_progress``; returns the new offset."""
    if not path.exists():
        return offset
    with path.open() as f:
        f.seek(offset)
        while True:
            line = f.readline()
            if not line.endswith("\n"):
                break
            offset += len(line.encode())
            if on_progress is not None:
                try:
                    on_progress(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return offset


def steps_from_log(path: Path) -> list[StepRecord]:
    """Step records from a rank's progress log (complete lines only; a torn last line is dropped)."""
    if not path.exists():
        return []
    steps = []
    for line in path.read_text(errors="replace").splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            steps.append(StepRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, KeyError, ValueError, TypeError):
            break
    return steps


def _local_rank_files(run_dir: Path, stem: str, suffix: str) -> list[Path]:
    """Rank 0's file first, then ``<stem>-rank<r><suffix>`` in rank order."""
    others = sorted(run_dir.glob(f"{stem}-rank*{suffix}"), key=lambda p: int(p.stem.rsplit("-rank", 1)[1]))
    return [run_dir / f"{stem}{suffix}", *others]


def partial_ranks(run_dir: Path, reason: str) -> tuple[list[RankMeasurement], str]:
    """Whatever each local rank left behind (its measurement file, else its progress log), and the error.

    The error names every rank that failed, the ones that failed first (rather than
    being stopped by the launcher because another rank failed) first.
    """
    ranks = []
    for mpath in _local_rank_files(run_dir, "measurement", ".json"):
        m = RankMeasurement.read(mpath)
        if m is None:
            continue  # no rank of that number ran on this host, or it died before writing anything
        if not m.finished:
            suffix = mpath.stem.removeprefix("measurement")
            m.steps, m.windows = steps_from_log(run_dir / f"progress{suffix}.jsonl"), []
            m.error = "stopped without finishing (killed, crashed or hung)"
        m.complete = False
        ranks.append(m)
    failures = [(m.rank, str(m.error)) for m in ranks if m.error]
    failures.sort(key=lambda f: f[1].startswith("interrupted"))
    detail = "; ".join(f"rank {r}: {e}" for r, e in failures)
    return ranks, f"{detail}; {reason}" if detail else reason


def lost_supervisor_note(error: str | None, heartbeat: Heartbeat, autogroup: Path = AUTOGROUP) -> str | None:
    """Why ranks gave up on this supervisor while it was alive, or None when no rank did.

    Args:
        error: the run's error, which holds :data:`workloads.lifeline.LOST_SUPERVISOR` when a rank's
            lifeline went stale.
        heartbeat: this supervisor's heartbeat, stopped; its ``longest_gap_s`` (seconds) tells whether
            the machine left it without CPU for the ranks' timeout (:data:`workloads.lifeline.TIMEOUT_S`).
        autogroup: the kernel's autogroup switch; where it reads 1, the note names it (see
            :mod:`workloads.heartbeat` for the measurement behind that advice).

    Returns:
        One sentence for the run's error: the longest gap and the fix.
    """
    if not error or LOST_SUPERVISOR not in error:
        return None
    gap = heartbeat.longest_gap_s
    if gap < TIMEOUT_S - heartbeat.interval_s:
        return (
            f"this supervisor was alive and its heartbeat never went more than {gap:.1f} s without a beat, so the "
            f"ranks did not see its beats: is {heartbeat.path.parent} shared with them without caching file contents?"
        )
    fix = "give the ranks fewer threads than the machine has CPUs (intra_op_threads, nproc_per_node)"
    try:
        if autogroup.read_text().strip() == "1":
            fix += ", or turn the kernel's autogroup off (sysctl -w kernel.sched_autogroup_enabled=0)"
    except OSError:
        pass
    return (
        f"this supervisor was alive, but its heartbeat went {gap:.1f} s without a beat (one is due every "
        f"{heartbeat.interval_s:g} s; ranks wait {TIMEOUT_S:g} s): the machine gave it no CPU for that long; {fix}"
    )
