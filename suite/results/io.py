"""Reading and writing result files: bounded strict reading, checks as stored, upgrade, atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.stats import MeasurementError, summarize
from suite.errors import TrainbenchError
from suite.files import FileProblem, read_json
from suite.results.migrations import supported, upgrade, versions_text
from suite.results.model import Result, verify_digest
from suite.results.recheck import CORE, summary_differences
from suite.results.schema_check import schema_errors


class ResultError(TrainbenchError, ValueError):
    """A result file that cannot be read, fails its schema, its digest or its recomputed summary (exit 1)."""

    exit_code = 1


def check_summary(result: Result) -> None:
    """Recompute the summary from the raw records and compare it with the stored one.

    The digest proves a file was not edited after sealing, but anyone can reseal a
    forged file; re-deriving the statistics from the raw step and window records
    catches a summary that the records do not support.

    Raises:
        ResultError: a complete result without a summary, an incomplete one with a
            score, or stored statistics that differ from the recomputed ones.
    """
    if result.status != "complete":
        if result.summary is not None or result.cost is not None:
            raise ResultError("an incomplete result must not carry a summary or cost")
        return
    if result.summary is None:
        raise ResultError("a complete result has no summary")
    try:
        fresh = summarize(result.steps, result.windows)
    except MeasurementError as exc:
        raise ResultError(f"the raw records give no valid measurement: {exc}") from exc
    for name, a, b in summary_differences(result.summary, fresh, CORE)[:1]:
        raise ResultError(f"summary.{name} is {a} but the raw records give {b}")


def load_document(doc: Any, check_digest: bool = True) -> Result:
    """A parsed result file as a :class:`Result` of the current schema.

    The order is the rule of :mod:`suite.results.migrations`: the schema of the stored
    version and the digest are checked on the document as stored, then it is upgraded.

    Raises:
        ResultError: not an object, an unsupported ``schema_version`` (the message says
            which versions this trainbench reads), a schema violation, a digest mismatch
            (the content was edited after the run), or content the model refuses.
    """
    if not isinstance(doc, dict):
        raise ResultError("a result must be a JSON object")
    version = doc.get("schema_version")
    if not supported(version):
        raise ResultError(
            f"result schema_version {version!r} is not supported; this trainbench reads version "
            f"{versions_text()}. Re-run with this suite version, or use the trainbench that wrote it"
        )
    assert isinstance(version, int)
    first = next(schema_errors(doc, version), None)
    if first is not None:  # stop at the first error: a hostile file costs bounded work
        where = "/".join(str(p) for p in first.absolute_path) or "(top)"
        raise ResultError(f"schema error at {where}: {first.message}")
    if check_digest and not verify_digest(doc):
        raise ResultError("digest mismatch: the file was changed after the run wrote it")
    try:
        return Result.model_validate(upgrade(doc))
    except (ValidationError, ValueError, TypeError) as exc:
        raise ResultError(str(exc)) from exc


def read_result(path: Path, check_digest: bool = True) -> Result:
    """Read (bounded, strict JSON: :mod:`suite.files`), check, upgrade and re-derive a result file.

    Raises:
        ResultError: unreadable, oversized, not JSON (NaN and Infinity included), an
            unsupported schema version, a schema violation, a digest mismatch, or a
            summary that the raw records do not support (:func:`check_summary`). The
            message starts with the path.
    """
    try:
        doc = read_json(path)
    except FileProblem as exc:
        raise ResultError(f"{path}: cannot read result: {exc.message}") from exc
    try:
        result = load_document(doc, check_digest)
        check_summary(result)
    except ResultError as exc:
        raise ResultError(f"{path}: {exc}") from exc
    return result


def write_result(result: Result, path: Path) -> Path:
    """Write atomically (temp file + rename) as indented JSON; returns ``path``.

    Raises:
        ResultError: the result's digest does not match its content: a result upgraded
            from an older schema keeps its stored digest, so it is written only after
            :func:`suite.results.seal` seals it again.
    """
    doc = result.model_dump(mode="json")
    if not verify_digest(doc):
        raise ResultError(f"{path}: the result's digest does not match its content; seal it before writing it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)
    return path
