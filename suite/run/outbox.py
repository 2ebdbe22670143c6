"""The tracking outbox: runs whose MLflow logging failed wait here for ``trainbench sync``.

An entry is a small JSON file ``<output_dir>/.outbox/<result run_id>.json`` naming
the result file (already on disk: it is always written first), its artifacts, the
tracking URI and the parent run. Syncing re-reads the result (schema and digest
checked), logs it idempotently and removes the entry, so a run is never lost and
never duplicated.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from suite.errors import TrackingError
from suite.files import FileProblem, read_json
from suite.results import ResultError, read_result

OUTBOX_DIR = ".outbox"


@dataclass(frozen=True)
class OutboxEntry:
    """A run waiting to be logged.

    Attributes:
        result_path: absolute path of the result JSON.
        artifacts: absolute paths of extra artifacts (the timeline plot).
        tracking_uri: where it should have gone.
        parent_run_id: MLflow parent run, for sweep points.
        error: why logging failed the last time.
    """

    result_path: str
    artifacts: list[str]
    tracking_uri: str
    parent_run_id: str | None
    error: str


def enqueue(output_dir: Path, run_id: str, entry: OutboxEntry) -> Path:
    """Write (or replace) the entry for result ``run_id``; returns its path."""
    box = output_dir / OUTBOX_DIR
    box.mkdir(parents=True, exist_ok=True)
    path = box / f"{run_id}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(entry), indent=1))
    os.replace(tmp, path)
    return path


def pending(output_dir: Path) -> list[Path]:
    """Entries waiting in ``output_dir``'s outbox, oldest first."""
    box = output_dir / OUTBOX_DIR
    return sorted(box.glob("*.json"), key=lambda p: p.stat().st_mtime) if box.is_dir() else []


@dataclass(frozen=True)
class SyncOutcome:
    """What happened to one entry: ``logged`` (with the MLflow run id), ``failed`` or ``invalid``."""

    entry: Path
    status: str
    detail: str


def sync(output_dir: Path, tracking_uri: str | None = None) -> list[SyncOutcome]:
    """Log every pending entry; entries that still fail stay for the next sync.

    Args:
        output_dir: the result root whose outbox is drained.
        tracking_uri: send everything here instead of each entry's own URI.

    An entry whose result file is missing, fails its schema or its digest is left
    in place and reported ``invalid``: nothing unverifiable is ever logged.
    """
    from suite.tracking import log_result

    outcomes = []
    for path in pending(output_dir):
        try:
            entry = OutboxEntry(**read_json(path))
            result = read_result(Path(entry.result_path))
        except FileProblem as exc:
            outcomes.append(SyncOutcome(path, "invalid", f"{exc.message}; {exc.fix}"))
            continue
        except (TypeError, ResultError) as exc:
            outcomes.append(SyncOutcome(path, "invalid", str(exc)))
            continue
        uri = tracking_uri or entry.tracking_uri
        artifacts = [Path(a) for a in entry.artifacts if Path(a).exists()]
        try:
            rid = log_result(result, Path(entry.result_path), artifacts, uri, entry.parent_run_id)
        except TrackingError as exc:
            enqueue(output_dir, result.run_id, OutboxEntry(**{**asdict(entry), "error": str(exc)}))
            outcomes.append(SyncOutcome(path, "failed", str(exc)))
            continue
        path.unlink()
        outcomes.append(SyncOutcome(path, "logged", rid))
    return outcomes
