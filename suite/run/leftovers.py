"""What the ranks of a run leave in its directory, read back by the supervisor: the progress log
as it grows (:func:`tail_progress`), the steps of a rank that died (:func:`steps_from_log`), and
every local rank's partial measurement (:func:`partial_ranks`).

Each rank appends its step records to ``progress[-rank<r>].jsonl`` (a write-ahead log) and
writes ``measurement[-rank<r>].json`` when it ends, so a rank that dies still leaves its steps.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.records import StepRecord
from suite.run.options import ProgressCallback
from workloads.measurement import RankMeasurement


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
