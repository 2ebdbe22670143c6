"""Comparing results: ``trainbench compare A B``.

Exit status: 0 compared (whatever the outcome, without ``--fail-above``); 1 a
regression under ``--fail-above``; 2 bad input (unreadable, invalid or incomplete
results, several configs on one side, or incomparable results under
``--fail-above``); 3 a run id could not be fetched from MLflow.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from suite.console import console
from suite.errors import BadInput, RunFailed


class Regression(RunFailed):
    """``--fail-above``: B is significantly slower than A by more than the allowed percentage (exit 1)."""


@click.command("compare")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option(
    "--fail-above",
    type=click.FloatRange(min=0, max=100),
    metavar="PCT",
    help="Exit 1 when B is slower than A by more than PCT percent and the slowdown is significant "
    "(the 95% CI of B/A lies below 1), as asv continuous does. Incomparable results exit 2.",
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Also write JSON here.")
@click.option(
    "--markdown", "md_path", type=click.Path(dir_okay=False, path_type=Path), help="Also write Markdown here."
)
@click.option(
    "--tracking-uri",
    envvar="MLFLOW_TRACKING_URI",
    help="MLflow tracking URI to fetch A or B from when they are run ids [default: sqlite:///mlflow.db here].",
)
def compare(
    a: str, b: str, fail_above: float | None, json_path: Path | None, md_path: Path | None, tracking_uri: str | None
) -> None:
    """Compare B with A: the throughput ratio B/A with its 95% CI, whether it is significant, and what differs.

    A and B are result files, directories of results of one config (its repeats), or
    MLflow run ids. The interval comes from the delta method on the log scale, with each
    side's standard error from the units of its runs' own intervals (batch means of
    measured steps, or repeats from 5 on); the output names the method.
    """
    from suite.compare.analysis import compare as compare_sides
    from suite.compare.load import load_side
    from suite.compare.render import print_comparison, to_markdown, write_json

    with tempfile.TemporaryDirectory(prefix="trainbench-compare-") as tmp:  # CompareError: exit 2, FetchError: 3
        side_a = load_side(a, "A", tracking_uri, Path(tmp))
        side_b = load_side(b, "B", tracking_uri, Path(tmp))
    result = compare_sides(side_a, side_b, fail_above)
    print_comparison(result, console)
    try:
        if json_path is not None:
            console.print(f"JSON: {write_json(result, json_path)}", highlight=False, markup=False)
        if md_path is not None:
            md_path.parent.mkdir(parents=True, exist_ok=True)
            md_path.write_text(to_markdown(result))
            console.print(f"Markdown: {md_path}", highlight=False, markup=False)
    except OSError as exc:
        raise BadInput(f"cannot write the comparison: {exc}") from exc
    if fail_above is not None and not result.comparable:
        raise BadInput("--fail-above cannot gate incomparable results: " + "; ".join(result.reasons))
    if result.regression:
        raise Regression(f"B is more than {fail_above:g}% slower than A, and the slowdown is significant")


COMMANDS = (compare,)
