"""Submissions: ``trainbench validate``, ``report`` and ``submission-schema`` (``submit`` and ``bands``
have modules of their own), with the options they share."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from suite.commands.options import tracking_options
from suite.console import console, err, markup
from suite.errors import BadInput, RunFailed, TrackingError
from suite.rules import RULES_PATH, load_rules
from suite.specs import SPECS_DIR
from suite.validation.bands import BANDS_PATH
from suite.validation.bands_file import load_bands


def bands_path_for(given: Path | None, tree: Path | None = None) -> Path:
    """The bands file: exactly the one given; else, for a tree, the tree's own ``bands.yaml``; else
    (commands that read no tree) the checkout's. Never a silent fallback from a tree to another file.

    Raises:
        BadInput: the tree's ``bands.yaml`` is not a regular file (a link, a FIFO, a directory),
            or the tree has none and no file was given.
    """
    if given is not None:
        return given
    if tree is None:
        return BANDS_PATH
    own = tree / "bands.yaml"
    if own.is_symlink() or (own.exists() and not own.is_file()):
        raise BadInput(f"{own} is not a regular file; make it the tree's bands file, or pass --bands FILE")
    if not own.exists():
        raise BadInput(
            f"{tree} has no bands.yaml; pass --bands FILE (the committed reference bands are submissions/bands.yaml)"
        )
    return own


def _write(text: str, target: Path) -> None:
    if str(target) == "-":
        click.echo(text, nl=False)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


rules_option = click.option(
    "--rules",
    "rules_path",
    type=click.Path(path_type=Path),
    default=RULES_PATH,
    show_default=False,
    help="Submission rules file [default: the one shipped with trainbench].",
)
specs_option = click.option(
    "--specs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=SPECS_DIR,
    show_default=False,
    help="Workload specs that define each workload's official config [default: trainbench's own].",
)
bands_option = click.option(
    "--bands",
    "bands_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Reference bands file [default: validate and report use PATH/bands.yaml (it must exist); bands list and "
    "derive the checkout's submissions/bands.yaml].",
)


@click.command("validate")
@click.argument("path", type=click.Path(path_type=Path), default=Path("submissions"))
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@bands_option
@rules_option
@specs_option
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the JSON report here ('-': stdout).")
@click.option(
    "--markdown", "md_out", type=click.Path(path_type=Path), help="Write the Markdown report here ('-': stdout)."
)
@click.option("--quiet", "-q", is_flag=True, help="Leave info findings (scores, in-band notes) out of the table.")
@click.option(
    "--reproduce",
    "reproduce_k",
    type=click.IntRange(0, 1000),
    default=0,
    metavar="K",
    help="Then measure again up to K results whose hardware class is this machine's (trainbench reproduce).",
)
@click.option("--repeats", type=click.IntRange(1, 1000), help="[--reproduce] Repeats of each re-measurement.")
@click.option(
    "--reproduce-dir",
    type=click.Path(path_type=Path),
    default=Path("results/reproductions"),
    show_default=True,
    help="[--reproduce] Where the re-measurements' results are written.",
)
@click.option("--tracking-uri", help="[--reproduce] MLflow store for the re-measurements [default: none].")
def validate(
    path: Path,
    strict: bool,
    bands_path: Path | None,
    rules_path: Path,
    specs_dir: Path,
    json_out: Path | None,
    md_out: Path | None,
    quiet: bool,
    reproduce_k: int,
    repeats: int | None,
    reproduce_dir: Path,
    tracking_uri: str | None,
) -> None:
    """Check a submissions tree: every file, every set of runs, every score against its reference band.

    With --reproduce K, up to K of its results whose hardware class is this machine's are then
    measured again (as `trainbench reproduce` does), for a reviewer's CI.

    Exit status: 0 compliant (and every re-measured claim reproduced), 1 error findings (warnings
    too with --strict) or a claim not reproduced, 2 the validator could not run (missing path,
    invalid rules or bands file).
    """
    from suite.validation.render import findings_table, groups_table, to_json, to_markdown, verdict_line
    from suite.validation.tree import validate_tree

    try:
        rules = load_rules(rules_path)
        bands_file = bands_path_for(bands_path, path)
        bands = load_bands(bands_file, specs_dir)
        report = validate_tree(path, rules, bands, specs_dir, strict)
    except BadInput as exc:  # rules, bands, specs or the path
        raise BadInput(f"the validator could not run: {exc}") from exc
    report.bands_source = str(bands_file)
    out = err if "-" in (str(json_out), str(md_out)) else console
    out.print(findings_table(report.findings, f"trainbench validate {path}", show_info=not quiet))
    if report.groups:
        out.print(groups_table(report))
    out.print(f"reference bands: {markup(report.bands_source)}", highlight=False)
    style = "bold green" if report.compliant else "bold red"
    out.print(f"[{style}]{markup(verdict_line(report))}[/]", highlight=False)
    if json_out is not None:
        _write(json.dumps(to_json(report), indent=1) + "\n", json_out)
    if md_out is not None:
        _write(to_markdown(report), md_out)
    reproduced = True
    if reproduce_k:
        from suite.commands.reproduce import reproduce_tree

        reproduced = reproduce_tree(report, reproduce_k, repeats, reproduce_dir, tracking_uri)
    sys.exit(report.exit_code or (0 if reproduced else 1))


@click.command("report")
@click.argument("path", type=click.Path(path_type=Path), default=Path("submissions"))
@bands_option
@rules_option
@specs_option
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("results/report"),
    show_default=True,
    help="Where report.md, report.json and report.png are written.",
)
@click.option("--no-published", is_flag=True, help="Rank only submitted systems, without the cited reference figures.")
@tracking_options("the report files are")
def report(
    path: Path,
    bands_path: Path | None,
    rules_path: Path,
    specs_dir: Path,
    output_dir: Path,
    no_published: bool,
    tracking_uri: str | None,
    no_tracking: bool,
) -> None:
    """Rank systems per workload by samples/s and samples per dollar, and say which to choose.

    Scores come from the validated submissions in PATH (with their band status); the
    cited reference bands are ranked beside them unless --no-published. Writes Markdown,
    JSON and a PNG chart, and logs them to MLflow.
    """

    from suite.console import plain
    from suite.tables import layout_width, print_table
    from suite.validation import ranking, ranking_chart, ranking_render
    from suite.validation.tree import validate_tree

    try:
        bands_file = bands_path_for(bands_path, path)
        bands_data = load_bands(bands_file, specs_dir)
        validated = validate_tree(path, load_rules(rules_path), bands_data, specs_dir)
    except BadInput as exc:  # rules, bands, specs or the path
        raise BadInput(f"the report could not be made: {exc}") from exc
    validated.bands_source = str(bands_file)
    console.print(f"reference bands: {markup(bands_file)}", highlight=False)
    rows = ranking.build_rows(validated, bands_data, include_published=not no_published, specs_dir=specs_dir)
    if not rows:
        raise RunFailed(f"nothing to rank: no scored submissions in {path} and no published bands")
    for table in ranking_render.rich_tables(rows, layout_width(console)):
        print_table(console, table)
    advice = [plain(ranking.recommendation_text(rec)) for rec in ranking.recommend(rows)]
    for text in advice:
        console.print(f"[bold]{markup(text)}[/bold]", highlight=False)
    output_dir.mkdir(parents=True, exist_ok=True)
    chart = ranking_chart.chart_png(rows, output_dir / "report.png")
    md = output_dir / "report.md"
    md.write_text(ranking_render.markdown(rows, chart))
    js = output_dir / "report.json"
    js.write_text(json.dumps(ranking.to_json(rows), indent=1) + "\n")
    console.print(markup(f"wrote {md}, {js}, {chart}"), soft_wrap=True, highlight=False)
    if no_tracking:
        return
    from suite.tracking import default_tracking_uri, log_report, ui_hint

    uri = tracking_uri or default_tracking_uri()
    try:
        rid = log_report(
            [md, js, chart],
            ranking.mlflow_metrics(rows),
            {"submissions": str(path.resolve()), "bands": str(bands_file.resolve())},
            uri,
            description=ranking_render.markdown_advice(rows),
        )
    except TrackingError as exc:
        raise TrackingError(f"{exc}\nThe report files are written in {output_dir}.") from exc
    hint = ui_hint(uri, rid)
    console.print(
        markup(f"MLflow run {rid} in {uri} (experiment trainbench-report)") + "\n" + markup(hint),
        soft_wrap=True,
        highlight=False,
    )


@click.command("submission-schema")
@click.argument("kind", type=click.Choice(["system", "bands"]))
@click.option("--write", is_flag=True, help="Write the schema file in the package instead of printing it.")
def submission_schema(kind: str, write: bool) -> None:
    """Print the JSON Schema of a system description or of the bands file."""
    from suite import systems
    from suite.validation import bands as bands_module

    schema, path = {
        "system": (systems.json_schema, systems.SYSTEM_SCHEMA_PATH),
        "bands": (bands_module.json_schema, bands_module.BANDS_SCHEMA_PATH),
    }[kind]
    text = json.dumps(schema(), indent=2, sort_keys=True) + "\n"
    if write:
        path.write_text(text)
        console.print(f"wrote {path}")
    else:
        click.echo(text, nl=False)


COMMANDS = (validate, report, submission_schema)
"""This area's commands (registered by :mod:`suite.commands`)."""
