"""Exports to other tools' formats: ``trainbench export mlperf``."""

from __future__ import annotations

from pathlib import Path

import click

from suite.console import console
from suite.errors import RunFailed


@click.group("export")
def export() -> None:
    """Write trainbench results in other tools' formats."""


@export.command("mlperf")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--output",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Where to write systems/<system>.json and results/<system>/resnet/result_N.txt.",
)
@click.option("--submitter", help="MLPerf submitter name (required unless --system-file names one).")
@click.option(
    "--system-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A trainbench system description (e.g. from `trainbench submit --describe-system --mlperf`).",
)
@click.option(
    "--mlperf-field",
    "mlperf_fields",
    multiple=True,
    metavar="NAME=VALUE",
    help="An MLPerf system field the submitter supplies, e.g. status='Available cloud' (repeatable).",
)
@click.option(
    "--check/--no-check",
    default=True,
    show_default=True,
    help="Run MLperf's official system-description and compliance checkers (ruleset 4.0.0) on the output.",
)
def mlperf(
    results: tuple[Path, ...],
    output: Path,
    submitter: str | None,
    system_file: Path | None,
    mlperf_fields: tuple[str, ...],
    check: bool,
) -> None:
    """Write RESULTS as an MLPerf Training (open division, benchmark `resnet`) submission tree.

    A format bridge so MLPerf's tools can read trainbench runs, not a claim of an MLPerf
    result: always the open division, throughput in `tracked_stats`, `eval_accuracy` only
    from a real evaluation pass (run with `--set eval_samples=N`).
    """
    from suite.export.checkers import check_result_log, check_system_description
    from suite.export.mlperf import export_mlperf, read_system_description
    from suite.export.system_desc import parse_field_overrides

    system = read_system_description(system_file) if system_file else None  # ExportError: exit 2
    supplied = parse_field_overrides(list(mlperf_fields))  # SystemFieldError: exit 2
    outcome = export_mlperf(list(results), output, submitter, system, supplied)
    console.print(f"wrote {outcome.system_file}", highlight=False, markup=False)
    for path in outcome.result_files:
        console.print(f"wrote {path}", highlight=False, markup=False)
    if outcome.undisclosed:
        console.print(
            f"MLPerf fields not disclosed (add with --mlperf-field NAME=VALUE): {', '.join(outcome.undisclosed)}",
            highlight=False,
            markup=False,
        )
    for note in outcome.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    if not check:
        return
    reports = [check_system_description(outcome.system_file), *(check_result_log(p) for p in outcome.result_files)]
    failed = [r for r in reports if not r.passed]
    for r in reports:
        console.print(f"{'passed' if r.passed else 'FAILED'}: {r.command}", highlight=False, markup=False)
        for line in r.errors:
            console.print(f"  {line}", highlight=False, markup=False)
    if failed:
        raise RunFailed(f"{len(failed)} of {len(reports)} MLPerf checker runs reported errors (listed above)")


COMMANDS = (export,)
"""This area's commands (registered by :mod:`suite.commands`)."""
