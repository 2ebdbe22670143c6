"""``trainbench export mlperf RESULT... --output DIR``: trainbench runs as an MLPerf Training submission tree.

Writes, under DIR (MLPerf's ``<submitter>/`` level)::

    systems/<system>.json                      the 33 MLPerf system-description fields
    results/<system>/resnet/result_<N>.txt     one MLPerf log per trainbench result

The logs are written by ``mlperf_logging.mllog`` (see :mod:`suite.export.mllog_writer`);
``suite.export.checkers`` runs the official checkers on them.

Honesty first: an export is a format bridge so MLPerf's tools can read trainbench runs,
never a claim of an MLPerf result.
- Always the open division: trainbench's closed division is not MLPerf's (which needs
  convergence to a quality target, reference convergence points and seeds).
- Throughput goes in ``tracked_stats``; ``run_stop`` says ``aborted`` (no quality target
  was trained to).
- ``eval_accuracy`` is never invented: a result without a measured evaluation pass
  (``--set eval_samples=N`` on the run) is refused, and the log says which data it was.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from suite.errors import BadInput
from suite.export.mllog_writer import BENCHMARK, write_mllog
from suite.export.system_desc import SystemFieldError, contradictions, mlperf_fields
from suite.files import FileProblem, read_bounded, read_json
from suite.results import Result, ResultError, read_result
from suite.systems import SYSTEM_NAME_PATTERN, SystemDescription
from suite.systems.mlperf_fields import MLPerfSystemFields, precheck
from workloads.evaluation import EVALUATION_KEY

RESNET_WORKLOADS = ("numa-ddp", "resnet50-cpu", "resnet50-gpu-horovod", "resnet50-tf-horovod")
"""trainbench workloads that train ResNet-50, MLPerf's ``resnet`` benchmark."""


class ExportError(BadInput):
    """An export that cannot be made: the message says what is wrong and how to fix it."""

    exit_code = 2


@dataclass(frozen=True)
class ExportOutcome:
    """What :func:`export_mlperf` wrote.

    Attributes:
        system_file: ``DIR/systems/<system>.json`` (written, or already there and identical).
        result_files: one ``result_<N>.txt`` per result, in the order given.
        undisclosed: MLPerf system fields left empty (the submitter may add them).
        notes: things a reader of the export should know (e.g. chance-level accuracy).
    """

    system_file: Path
    result_files: list[Path]
    undisclosed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_exportable(result: Result) -> list[str]:
    """Why ``result`` cannot be exported as an MLPerf ``resnet`` log (empty when it can)."""
    rid = result.run_id
    problems = []
    if result.workload not in RESNET_WORKLOADS:
        problems.append(
            f"run {rid} is {result.workload}; MLPerf's resnet benchmark takes the ResNet-50 workloads "
            f"({', '.join(RESNET_WORKLOADS)})"
        )
    if result.status != "complete" or result.summary is None:
        problems.append(f"run {rid} is incomplete ({result.error or 'no summary'}); export complete runs only")
    ev = result.workload_info.get(EVALUATION_KEY)
    if not isinstance(ev, dict):
        problems.append(
            f"run {rid} has no evaluation pass, and eval_accuracy is never invented: re-run with --set eval_samples=N"
        )
    elif "error" in ev:
        problems.append(f"run {rid}: its evaluation pass failed ({ev['error']}); re-run it")
    else:

        def number(key: str) -> float:
            v = ev.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0:
                return float(v)
            return math.nan

        acc, start, secs, n = number("accuracy"), number("start_s"), number("seconds"), ev.get("samples")
        if not (0 <= acc <= 1 and start >= 0 and secs >= 0 and isinstance(n, int) and n >= 1):
            problems.append(f"run {rid}: its evaluation record is not a valid measurement: {ev!r:.300}")
        if not all(isinstance(ev.get(k), str) for k in ("split", "dataset", "metric")):
            problems.append(f"run {rid}: its evaluation record does not say which data it used")
    return problems


def read_system_description(path: Path) -> SystemDescription:
    """Read a trainbench system description (bounded; the model checks every field).

    Raises:
        ExportError: unreadable, too large, not JSON, or not a valid system description.
    """
    try:
        return SystemDescription.model_validate(read_json(path))
    except FileProblem as exc:
        raise ExportError(f"{path}: {exc.message}; {exc.fix}") from exc
    except ValidationError as exc:
        errors = "; ".join(f"{'/'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10])
        raise ExportError(f"{path}: not a valid trainbench system description: {errors}") from exc


def _fields(
    results: list[Result], submitter: str | None, system: SystemDescription | None, supplied: Mapping[str, str]
) -> tuple[MLPerfSystemFields, list[str]]:
    name = results[0].system
    if system is not None and system.name != name:
        raise ExportError(f"the system description is for {system.name!r}, the results ran on {name!r}")
    if system is not None and submitter and submitter != system.submitter:
        raise ExportError(f"--submitter {submitter!r} differs from the system description's {system.submitter!r}")
    try:
        if system is not None and system.mlperf is not None:
            if supplied:
                raise ExportError(
                    "the system description already holds its MLPerf fields; edit them there instead of "
                    f"giving {', '.join(sorted(supplied))} again"
                )
            fields, undisclosed = system.mlperf, [k for k, v in system.mlperf.as_mlperf_json().items() if v == ""]
        else:
            who = system.submitter if system is not None else submitter
            if not who:
                raise ExportError("give --submitter (or a system description, which names its submitter)")
            fields, undisclosed = mlperf_fields(results[0], who, name, supplied, system)
    except SystemFieldError as exc:
        raise ExportError(str(exc)) from exc
    problems = precheck(fields.as_mlperf_json()) + [p for r in results for p in contradictions(fields, r)]
    if problems:
        raise ExportError("the MLPerf system description does not fit the results: " + "; ".join(problems))
    return fields, undisclosed


def _exported_runs(directory: Path) -> tuple[int, set[str]]:
    """(the next free result index, run ids already exported) in ``results/<system>/resnet/``."""
    taken, runs = -1, set()
    for path in directory.glob("result_*.txt") if directory.is_dir() else []:
        m = re.fullmatch(r"result_(\d+)\.txt", path.name)
        if m is None:
            continue
        taken = max(taken, int(m.group(1)))
        try:
            text = read_bounded(path).decode("utf-8", "replace")
        except FileProblem as exc:
            raise ExportError(f"{path}: {exc.message}") from exc
        runs.update(re.findall(r'"run_id": "([^"]+)"', text))
    return taken + 1, runs


def export_mlperf(
    results: Sequence[Path],
    output: Path,
    submitter: str | None = None,
    system: SystemDescription | None = None,
    supplied: Mapping[str, str] | None = None,
) -> ExportOutcome:
    """Export trainbench results of one system as MLPerf Training logs plus its system description.

    Args:
        results: result files (each read with its digest and summary checked).
        output: the export's root (MLPerf's ``<submitter>/`` directory); created as needed.
        submitter: the submitting organisation; not needed with ``system``.
        system: trainbench's description of the system; its ``mlperf`` fields are used
            when present, else they are generated from the first result.
        supplied: MLPerf fields the submitter gives (``--mlperf-field``), without ``system.mlperf``.

    Returns:
        The files written and the fields left undisclosed.

    Raises:
        ExportError: a result is unreadable, incomplete, not ResNet-50 or has no evaluation;
            the results ran on different systems; the system fields are invalid or contradict
            a result; a file in ``output`` would be overwritten or a run is already there;
            mlperf-logging is not installed. Nothing is written when the inputs are refused.
    """
    try:
        import mlperf_logging.mllog  # noqa: F401  # fail before writing anything
    except ImportError as exc:
        raise ExportError("the MLPerf export needs mlperf-logging: pip install 'trainbench[mlperf]'") from exc
    if not results:
        raise ExportError("give at least one result file")
    loaded = []
    for path in results:
        try:
            loaded.append(read_result(path))
        except ResultError as exc:
            raise ExportError(str(exc)) from exc
    problems = [f"{path}: {p}" for path, r in zip(results, loaded, strict=True) for p in check_exportable(r)]
    systems = sorted({r.system for r in loaded})
    if len(systems) > 1:
        problems.append(f"the results ran on several systems ({', '.join(systems)}); export one system at a time")
    if not re.fullmatch(SYSTEM_NAME_PATTERN, systems[0]):
        problems.append(f"system name {systems[0]!r} cannot name a file; it must match {SYSTEM_NAME_PATTERN}")
    if problems:
        raise ExportError("cannot export: " + "; ".join(problems))
    fields, undisclosed = _fields(loaded, submitter, system, supplied or {})
    name = systems[0]
    system_file = output / "systems" / f"{name}.json"
    text = json.dumps(fields.as_mlperf_json(), indent=4) + "\n"
    if system_file.exists() and system_file.read_text(errors="replace") != text:
        raise ExportError(f"{system_file} exists with other content; export into a new directory or remove it")
    target = output / "results" / name / BENCHMARK
    first, done = _exported_runs(target)
    counts = Counter(r.run_id for r in loaded)
    again = sorted({rid for rid, n in counts.items() if n > 1 or rid in done})
    if again:
        raise ExportError(f"run(s) {', '.join(again)} given twice or already exported in {target}")
    system_file.parent.mkdir(parents=True, exist_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    if not system_file.exists():
        system_file.write_text(text)
    written = []
    for i, result in enumerate(loaded):
        path = target / f"result_{first + i}.txt"
        write_mllog(result, fields, path)
        written.append(path)
    notes = []
    for result in loaded:
        ev = result.workload_info[EVALUATION_KEY]
        if ev["split"] == "synthetic":
            notes.append(
                f"run {result.run_id}: evaluated on synthetic data, so its accuracy is chance level by construction"
            )
        if ev["accuracy"] >= 1.0:
            notes.append(
                f"run {result.run_id}: eval_accuracy is 1.0 as measured; the official checker expects a value below 1.0"
            )
    return ExportOutcome(system_file, written, undisclosed, notes)
