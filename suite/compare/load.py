"""The two sides of a comparison: result files, directories of results, or MLflow run ids.

Every result is read through :func:`suite.results.read_result` (size cap, schema,
digest, and the summary recomputed from the raw records). A directory is walked
without following links, to a bounded depth and file count.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from suite import labels
from suite.errors import BadInput
from suite.results import Result, ResultError, read_result

MAX_FILES = 1000
"""Most result files one side may hold."""
MAX_DEPTH = 8
"""Deepest directory level searched below a side's directory."""
RESULT_NAME = "result.json"
RUN_ID = re.compile(r"^[0-9a-f]{32}$")
"""The shape of an MLflow run id."""
SKIPPED_DIRS = frozenset({"single-process", ".outbox"})
"""Below a run: the single-process comparison of a data-parallel run (another config) and the tracking outbox."""


class CompareError(BadInput):
    """Inputs that cannot be compared as given; the message says what to change.

    Attributes:
        exit_code: 2, the CLI's exit status for bad input.
    """

    exit_code = 2


class FetchError(CompareError):
    """A side given as an MLflow run id could not be fetched (exit status 3, a tracking failure)."""

    exit_code = 3


@dataclass
class Side:
    """One side of a comparison.

    Attributes:
        label: ``A`` or ``B``.
        spec: what the user passed.
        results: the complete results, all of one config on one system.
        sources: where each result came from (path, or ``mlflow:<run id>``).
        notes: what was skipped while loading, and why.
    """

    label: str
    spec: str
    results: list[Result]
    sources: list[str]
    notes: list[str] = field(default_factory=list)


def _walk(root: Path) -> tuple[list[Path], int]:
    """``result.json`` files below ``root`` (no links followed, MAX_DEPTH levels) and the incomplete ones seen."""
    found: list[Path] = []
    incomplete = 0
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and len(here.parts) - base < MAX_DEPTH)
        if RESULT_NAME in filenames and not (here / RESULT_NAME).is_symlink():
            found.append(here / RESULT_NAME)
        incomplete += sum(1 for f in filenames if f == "result-incomplete.json")
        if len(found) > MAX_FILES:
            raise CompareError(f"{root} holds more than {MAX_FILES} results; pass a smaller directory")
    return sorted(found), incomplete


def _read(path: Path, label: str) -> Result:
    if path.is_symlink() or not path.is_file():
        raise CompareError(f"{label}: {path} is not a regular file")
    try:
        result = read_result(path)
    except ResultError as exc:
        raise CompareError(f"{label}: {exc}") from exc
    if result.status != "complete" or result.summary is None:
        raise CompareError(
            f"{label}: {path} is an incomplete run ({result.error or 'no summary'}); it has no throughput to compare"
        )
    return result


def config_key(result: Result) -> tuple[str, ...]:
    """What must be equal for two results to be repeats of one config on one system."""
    settings = labels.flat_settings(result.config)
    trained = sorted(f"{k}={labels.value_text(v)}" for k, v in settings.items() if k.startswith(labels.KNOB_SECTIONS))
    return (result.workload, result.system, str(result.world_size), *trained)


def load_side(spec: str, label: str, tracking_uri: str | None, scratch: Path) -> Side:
    """Read one side: a result file, a directory of results of one config, or an MLflow run id.

    Args:
        spec: the path or run id the user gave.
        label: ``A`` or ``B`` (for messages).
        tracking_uri: where to look up a run id [default: :func:`suite.tracking.default_tracking_uri`].
        scratch: a directory for result files downloaded from MLflow.

    Raises:
        CompareError: nothing usable (not a file, directory or run id; no complete result;
            an invalid or incomplete result file; results of several configs or systems).
        FetchError: the run id could not be fetched from MLflow.
    """
    path = Path(spec)
    side = Side(label, spec, [], [])
    if path.is_dir():
        files, incomplete = _walk(path)
        if incomplete:
            side.notes.append(f"{label}: skipped {incomplete} incomplete result(s) (result-incomplete.json) in {spec}")
        if not files:
            raise CompareError(f"{label}: no {RESULT_NAME} below {spec}; pass a result file or a run's directory")
        for f in files:
            side.results.append(_read(f, label))
            side.sources.append(str(f))
    elif path.exists():
        side.results.append(_read(path, label))
        side.sources.append(spec)
    else:
        if not RUN_ID.match(spec):
            raise CompareError(
                f"{label}: {spec!r} is neither a result file, a directory of results "
                "nor an MLflow run id (32 hex digits)"
            )
        from suite.tracking import TrackingError, default_tracking_uri, fetch_result  # MLflow only for run ids

        uri = tracking_uri or default_tracking_uri()
        try:
            fetched = fetch_result(spec, uri, scratch / label)
        except TrackingError as exc:
            raise FetchError(f"{label}: {exc}") from exc
        side.results.append(_read(fetched, label))
        side.sources.append(f"mlflow:{spec}")
    keys = {config_key(r) for r in side.results}
    if len(keys) > 1:
        names = sorted({labels.name(r) for r in side.results})
        raise CompareError(
            f"{label}: {spec} holds results of {len(keys)} different configs or systems ({'; '.join(names)}); "
            "pass a file, or a directory that holds repeats of one config"
        )
    return side
