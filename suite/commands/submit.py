"""``trainbench submit``: copy results into the submission tree, checking them on the way in."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from suite.commands.validate import rules_option, specs_option
from suite.console import console, markup
from suite.errors import BadInput
from suite.rules import load_rules
from suite.systems import Price


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
@click.option(
    "--mlperf",
    is_flag=True,
    help="With --describe-system: also write the 33 fields of MLPerf's training system description "
    "(under the system file's `mlperf` key; see `trainbench export mlperf`).",
)
@click.option(
    "--mlperf-field",
    "mlperf_fields",
    multiple=True,
    metavar="NAME=VALUE",
    help="With --mlperf: a field the submitter supplies, e.g. status='Available cloud' (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Check only; copy nothing.")
@rules_option
@specs_option
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
    mlperf: bool,
    mlperf_fields: tuple[str, ...],
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
    from suite.systems import Instance, describe
    from suite.validation.render import findings_table
    from suite.validation.result_checks import CheckContext
    from suite.validation.submit import SubmitError, submit_results

    ctx = CheckContext(load_rules(rules_path), specs_dir)
    new_system = None
    if (mlperf or mlperf_fields) and not describe_system:
        raise BadInput("--mlperf and --mlperf-field describe a new system: add --describe-system")
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
            raise BadInput(f"cannot describe the system from {results[0]}: {exc}") from exc
        if mlperf or mlperf_fields:
            from suite.export.system_desc import parse_field_overrides, with_mlperf

            new_system, undisclosed = with_mlperf(new_system, first, parse_field_overrides(list(mlperf_fields)))
            if undisclosed:
                console.print(
                    f"MLPerf fields not disclosed (add with --mlperf-field NAME=VALUE): {', '.join(undisclosed)}",
                    highlight=False,
                    markup=False,
                )
    try:
        outcome = submit_results(list(results), root, submitter, system, ctx, new_system, dry_run)
    except SubmitError as exc:  # exit 1 with findings (shown first), 2 without
        if len(exc.findings):
            console.print(findings_table(exc.findings, f"trainbench submit: {len(results)} result(s)"))
        raise
    if outcome.system_written:
        console.print(f"wrote {markup(outcome.system_written)}", highlight=False)
    for src, dest in outcome.copied:
        console.print(f"{markup(src)} -> {markup(dest)}", highlight=False)
    if dry_run:
        console.print(f"dry run: {len(results)} result(s) checked, nothing copied")
    warnings = [f for f in outcome.findings if f.severity.value == "warning"]
    for f in warnings:
        console.print(f"[yellow]warning[/] {f.code} {markup(f.where)}: {markup(f.message)}", highlight=False)
    console.print(f"Check the submission with: trainbench validate {markup(shlex.quote(str(root)))}", highlight=False)


def _price(
    instance_type: str | None,
    pricing: str,
    region: str | None,
    price_per_hour: float | None,
    price_source: str | None,
    price_date: str | None,
    no_price: str | None,
) -> Price:
    from suite.cost.prices import load_price_table, lookup

    if no_price:
        if price_per_hour is not None:
            raise BadInput("give either --price-per-hour or --no-price, not both")
        return Price(usd_per_hour=None, currency="USD", per="hour", pricing=None, source=no_price, date=None)
    if price_per_hour is not None:
        if not price_source:
            raise BadInput("--price-per-hour needs --price-source (where the price comes from)")
        return Price(
            usd_per_hour=price_per_hour,
            currency="USD",
            per="hour",
            pricing=pricing,  # type: ignore[arg-type]
            source=price_source,
            date=price_date,
        )
    if instance_type:
        entry = lookup(load_price_table(), instance_type, pricing, region)  # PriceTableError: exit 2
        return Price(
            usd_per_hour=entry.usd_per_hour,
            currency="USD",
            per="hour",
            pricing=entry.pricing,
            source=f"trainbench price table: {entry.source}",
            date=entry.date,
        )
    raise BadInput(
        "--describe-system needs a price: --instance-type (price table), --price-per-hour with --price-source, "
        "or --no-price REASON"
    )


COMMANDS = (submit,)
"""This area's commands (registered by :mod:`suite.commands`)."""
