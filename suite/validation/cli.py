"""CLI commands for submissions: ``validate``, ``submit``, ``bands`` and ``report`` (registered in suite.cli)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.markup import escape
from rich.table import Table

from suite.console import console, err, fail
from suite.specs import SPECS_DIR
from suite.validation.bands import BANDS_PATH, BandsError, MeasuredRuns, load_bands, write_bands
from suite.validation.rules import RULES_PATH, RulesError, load_rules
from suite.validation.systems import Price

EXIT_SETUP = 2
"""Exit status when the validator (or another command here) could not run."""


def _fail(message: str, code: int = EXIT_SETUP) -> NoReturn:
    fail(message, code)


def _bands_path(given: Path | None, tree: Path | None = None) -> Path:
    if given is not None:
        return given
    if tree is not None and (tree / "bands.yaml").is_file():
        return tree / "bands.yaml"
    return BANDS_PATH


def _write(text: str, target: Path) -> None:
    if str(target) == "-":
        click.echo(text, nl=False)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


_rules_option = click.option(
    "--rules",
    "rules_path",
    type=click.Path(path_type=Path),
    default=RULES_PATH,
    show_default=False,
    help="Submission rules file [default: the one shipped with trainbench].",
)
_specs_option = click.option(
    "--specs-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=SPECS_DIR,
    show_default=False,
    help="Workload specs that define each workload's official config [default: trainbench's own].",
)
_bands_option = click.option(
    "--bands",
    "bands_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Reference bands file [default: the checkout's submissions/bands.yaml; validate and report look for "
    "bands.yaml in PATH first].",
)


@click.command("validate")
@click.argument("path", type=click.Path(path_type=Path), default=Path("submissions"))
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@_bands_option
@_rules_option
@_specs_option
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the JSON report here ('-': stdout).")
@click.option(
    "--markdown", "md_out", type=click.Path(path_type=Path), help="Write the Markdown report here ('-': stdout)."
)
@click.option("--quiet", "-q", is_flag=True, help="Leave info findings (scores, in-band notes) out of the table.")
def validate(
    path: Path,
    strict: bool,
    bands_path: Path | None,
    rules_path: Path,
    specs_dir: Path,
    json_out: Path | None,
    md_out: Path | None,
    quiet: bool,
) -> None:
    """Check a submissions tree: every file, every set of runs, every score against its reference band.

    Exit status: 0 compliant, 1 error findings (warnings too with --strict), 2 the
    validator could not run (missing path, invalid rules or bands file).
    """
    from suite.validation.render import findings_table, groups_table, to_json, to_markdown, verdict_line
    from suite.validation.submission import ValidatorSetupError, validate_tree

    try:
        rules = load_rules(rules_path)
        bands = load_bands(_bands_path(bands_path, path), specs_dir)
        report = validate_tree(path, rules, bands, specs_dir, strict)
    except (RulesError, BandsError, ValidatorSetupError) as exc:
        _fail(f"the validator could not run: {exc}")
    out = err if "-" in (str(json_out), str(md_out)) else console
    out.print(findings_table(report.findings, f"trainbench validate {path}", show_info=not quiet))
    if report.groups:
        out.print(groups_table(report))
    style = "bold green" if report.compliant else "bold red"
    out.print(f"[{style}]{verdict_line(report)}[/]", highlight=False)
    if json_out is not None:
        _write(json.dumps(to_json(report), indent=1) + "\n", json_out)
    if md_out is not None:
        _write(to_markdown(report), md_out)
    sys.exit(report.exit_code)


@click.command("submit")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--submitter", required=True, help="Submitting organisation (its directory under the root).")
@click.option("--system", required=True, help="System name: the --system the runs were recorded with.")
@click.option(
    "--root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("submissions"),
    show_default=True,
    help="The submissions directory.",
)
@click.option(
    "--describe-system",
    is_flag=True,
    help="Write systems/<system>.json from the first result's environment (the system must be new).",
)
@click.option("--description", help="One line about the system (with --describe-system).")
@click.option("--system-class", help="A class of identical machines that bands may be keyed by.")
@click.option("--provider", help="Cloud provider, e.g. aws (with --describe-system).")
@click.option("--instance-type", help="Instance type; its price is looked up in the price table unless given.")
@click.option("--region", help="Region of the instance / price.")
@click.option(
    "--pricing", type=click.Choice(["on-demand", "spot", "reserved", "owned"]), default="on-demand", show_default=True
)
@click.option("--price-per-hour", type=float, help="Price in USD per hour (with --price-source).")
@click.option("--price-source", help="Where the price comes from.")
@click.option("--price-date", help="Month of the price source, YYYY-MM.")
@click.option("--no-price", "no_price", metavar="REASON", help="The system has no price; say why.")
@click.option("--dry-run", is_flag=True, help="Check only; copy nothing.")
@_rules_option
@_specs_option
def submit(
    results: tuple[Path, ...],
    submitter: str,
    system: str,
    root: Path,
    describe_system: bool,
    description: str | None,
    system_class: str | None,
    provider: str | None,
    instance_type: str | None,
    region: str | None,
    pricing: str,
    price_per_hour: float | None,
    price_source: str | None,
    price_date: str | None,
    no_price: str | None,
    dry_run: bool,
    rules_path: Path,
    specs_dir: Path,
) -> None:
    """Copy RESULTS into ROOT/SUBMITTER/results/SYSTEM/<workload>/result_<n>.json, checking them first.

    Nothing is copied when any result has an error finding (exit 1). The system needs a
    description; --describe-system writes one from the results' recorded environment.
    """
    from pydantic import ValidationError

    from suite.results import ResultError, read_result
    from suite.validation.render import findings_table
    from suite.validation.result_checks import CheckContext
    from suite.validation.submit import SubmitError, submit_results
    from suite.validation.systems import Instance, describe

    try:
        ctx = CheckContext(load_rules(rules_path), specs_dir)
    except RulesError as exc:
        _fail(str(exc))
    new_system = None
    if describe_system:
        price = _price(instance_type, pricing, region, price_per_hour, price_source, price_date, no_price)
        try:
            first = read_result(results[0])
            new_system = describe(
                first,
                system,
                submitter,
                price,
                description or f"{first.environment.get('cpu', {}).get('model')}",
                system_class=system_class,
                instance=Instance(provider=provider, instance_type=instance_type, region=region),
            )
        except (ResultError, ValidationError) as exc:
            _fail(f"cannot describe the system from {results[0]}: {exc}")
    try:
        outcome = submit_results(list(results), root, submitter, system, ctx, new_system, dry_run)
    except SubmitError as exc:
        if len(exc.findings):
            console.print(findings_table(exc.findings, f"trainbench submit: {len(results)} result(s)"))
        _fail(str(exc), 1 if len(exc.findings) else EXIT_SETUP)
    if outcome.system_written:
        console.print(f"wrote {outcome.system_written}")
    for src, dest in outcome.copied:
        console.print(f"{src} -> {dest}")
    if dry_run:
        console.print(f"dry run: {len(results)} result(s) checked, nothing copied")
    warnings = [f for f in outcome.findings if f.severity.value == "warning"]
    for f in warnings:
        console.print(f"[yellow]warning[/] {f.code} {f.where}: {f.message}", highlight=False)
    console.print(f"Check the submission with: trainbench validate {shlex.quote(str(root))}")


def _price(
    instance_type: str | None,
    pricing: str,
    region: str | None,
    price_per_hour: float | None,
    price_source: str | None,
    price_date: str | None,
    no_price: str | None,
) -> Price:
    from suite.cost import PriceTableError, load_price_table, lookup

    if no_price:
        if price_per_hour is not None:
            _fail("give either --price-per-hour or --no-price, not both")
        return Price(usd_per_hour=None, currency="USD", per="hour", pricing=None, source=no_price, date=None)
    if price_per_hour is not None:
        if not price_source:
            _fail("--price-per-hour needs --price-source (where the price comes from)")
        return Price(
            usd_per_hour=price_per_hour,
            currency="USD",
            per="hour",
            pricing=pricing,  # type: ignore[arg-type]
            source=price_source,
            date=price_date,
        )
    if instance_type:
        try:
            entry = lookup(load_price_table(), instance_type, pricing, region)
        except PriceTableError as exc:
            _fail(str(exc))
        return Price(
            usd_per_hour=entry.usd_per_hour,
            currency="USD",
            per="hour",
            pricing=entry.pricing,
            source=f"trainbench price table: {entry.source}",
            date=entry.date,
        )
    _fail(
        "--describe-system needs a price: --instance-type (price table), --price-per-hour with --price-source, "
        "or --no-price REASON"
    )


@click.group("bands")
def bands() -> None:
    """Reference throughput bands: list them, or derive one from at least 5 runs."""


@bands.command("list")
@_bands_option
@_specs_option
def bands_list(bands_path: Path | None, specs_dir: Path) -> None:
    """List the reference bands with their ranges and sources."""
    try:
        data = load_bands(_bands_path(bands_path), specs_dir)
    except BandsError as exc:
        _fail(str(exc))
    t = Table("name", "workload", "division", "system", "metric", "band", "conditions", "source", show_lines=True)
    for b in data.bands:
        src = b.source
        source = (
            f"measured: {len(src.runs)} runs, cv {src.stats.cv:.1%}" if isinstance(src, MeasuredRuns) else src.reference
        )
        cond = (
            ", ".join(f"{k}={v}" for k, v in b.conditions.items())
            if len(b.conditions) <= 6
            else (f"{len(b.conditions)} settings (the measured runs' config)")
        )
        cells = (b.name, b.workload, b.division, b.system, b.metric, b.describe(), cond or "-", source)
        t.add_row(*(escape(c) for c in cells))
    console.print(t)


@bands.command("derive")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--system", required=True, help="System name or class the band is for.")
@click.option("--division", type=click.Choice(["closed", "open"]), required=True)
@click.option("--name", help="Band name [default: <workload>-<division>-<system>-<profile>].")
@click.option(
    "--metric", type=click.Choice(["throughput", "samples_per_dollar"]), default="throughput", show_default=True
)
@click.option(
    "--margin",
    type=float,
    default=0.05,
    show_default=True,
    help="Fraction of the value added beyond the observed spread on each side.",
)
@click.option("--note", help="Conditions of the measurement, kept in the band's source (e.g. a shared machine).")
@click.option("--write", is_flag=True, help="Add the band to the bands file (default: print it).")
@click.option("--replace", is_flag=True, help="With --write: replace a band of the same name or key.")
@_bands_option
@_rules_option
@_specs_option
def bands_derive(
    results: tuple[Path, ...],
    system: str,
    division: str,
    name: str | None,
    metric: str,
    margin: float,
    note: str | None,
    write: bool,
    replace: bool,
    bands_path: Path | None,
    rules_path: Path,
    specs_dir: Path,
) -> None:
    """Derive a measured band from RESULTS (at least 5 runs of one config): median and spread.

    value = median; lower/upper = the observed min/max relative to the median, widened
    by --margin; the runs' digests, values and statistics are kept as the source.
    """
    import yaml

    from suite.results import ResultError, read_result
    from suite.validation.derive import DeriveError, add_band, derive_band
    from suite.validation.result_checks import CheckContext

    try:
        ctx = CheckContext(load_rules(rules_path), specs_dir)
        runs = [(str(p), read_result(p)) for p in results]
        band = derive_band(
            runs,
            system=system,
            division=division,
            ctx=ctx,
            name=name,
            metric=metric,
            margin=margin,
            note=note,
            argv=[
                "trainbench",
                "bands",
                "derive",
                *map(str, results),
                "--system",
                system,
                "--division",
                division,
                "--metric",
                metric,
                "--margin",
                f"{margin:g}",
            ],
        )
    except (RulesError, ResultError, DeriveError) as exc:
        _fail(str(exc))
    src = band.source
    assert isinstance(src, MeasuredRuns)
    console.print(
        f"band {band.name}: {band.describe()}; runs: {', '.join(f'{v:.4g}' for v in src.stats.values)} "
        f"(median {src.stats.median:.4g}, min {src.stats.min:.4g}, max {src.stats.max:.4g}, cv {src.stats.cv:.1%})",
        highlight=False,
    )
    if not write:
        click.echo(yaml.safe_dump([band.model_dump(mode="json")], sort_keys=False, width=100), nl=False)
        return
    target = _bands_path(bands_path)
    try:
        updated = add_band(load_bands(target, specs_dir), band, replace)
    except (BandsError, DeriveError) as exc:
        _fail(str(exc))
    write_bands(updated, target)
    console.print(f"wrote {target}")


@click.command("report")
@click.argument("path", type=click.Path(path_type=Path), default=Path("submissions"))
@_bands_option
@_rules_option
@_specs_option
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("results/report"),
    show_default=True,
    help="Where report.md, report.json and report.png are written.",
)
@click.option("--no-published", is_flag=True, help="Rank only submitted systems, without the cited reference figures.")
@click.option(
    "--tracking-uri",
    envvar="MLFLOW_TRACKING_URI",
    help="MLflow tracking URI [default: sqlite:///mlflow.db in the current directory].",
)
@click.option("--no-tracking", is_flag=True, help="Do not log the report to MLflow.")
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
    from suite import report_rank
    from suite.validation.submission import ValidatorSetupError, validate_tree

    try:
        bands_file = _bands_path(bands_path, path)
        bands_data = load_bands(bands_file, specs_dir)
        validated = validate_tree(path, load_rules(rules_path), bands_data, specs_dir)
    except (RulesError, BandsError, ValidatorSetupError) as exc:
        _fail(f"the report could not be made: {exc}")
    rows = report_rank.build_rows(validated, bands_data, include_published=not no_published)
    if not rows:
        _fail(f"nothing to rank: no scored submissions in {path} and no published bands", 1)
    for table in report_rank.rich_tables(rows):
        console.print(table)
    for rec in report_rank.recommend(rows):
        console.print(f"[bold]{report_rank.recommendation_text(rec)}[/bold]", highlight=False)
    output_dir.mkdir(parents=True, exist_ok=True)
    chart = report_rank.chart_png(rows, output_dir / "report.png")
    md = output_dir / "report.md"
    md.write_text(report_rank.markdown(rows, chart))
    js = output_dir / "report.json"
    js.write_text(json.dumps(report_rank.to_json(rows), indent=1) + "\n")
    console.print(f"wrote {md}, {js}, {chart}")
    if no_tracking:
        return
    from suite.tracking import TrackingError, default_tracking_uri, log_report

    uri = tracking_uri or default_tracking_uri()
    try:
        rid = log_report(
            [md, js, chart],
            report_rank.mlflow_metrics(rows),
            {"submissions": str(path.resolve()), "bands": str(bands_file.resolve())},
            uri,
        )
    except TrackingError as exc:
        _fail(f"{exc}\nThe report files are written in {output_dir}.", 3)
    console.print(f"MLflow run {rid} in {uri} (experiment trainbench-report)")


@click.command("submission-schema")
@click.argument("kind", type=click.Choice(["system", "bands"]))
@click.option("--write", is_flag=True, help="Write the schema file in the package instead of printing it.")
def submission_schema(kind: str, write: bool) -> None:
    """Print the JSON Schema of a system description or of the bands file."""
    from suite.validation import bands as bands_module
    from suite.validation import systems

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
