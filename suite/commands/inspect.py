"""Looking things up: ``trainbench list``, ``show``, ``prices`` and ``schema``."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml
from rich.table import Table

from suite.console import console, markup, plain_tree
from suite.specs import RunConfig, load_specs, resolve


@click.command("list")
def list_cmd() -> None:
    """List the workloads and their profiles."""
    specs = load_specs()
    t = Table("workload", "profiles (default first)", "image", "description")
    for name, spec in specs.items():
        profiles = [spec.default_profile, *sorted(p for p in spec.profiles if p != spec.default_profile)]
        t.add_row(name, ", ".join(profiles), spec.image, spec.description)
    console.print(t)


@click.command()
@click.argument("target")
@click.option("--profile", "-p")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option(
    "--probe-onednn",
    is_flag=True,
    help="With a workload: also ask oneDNN for the ISA it dispatches to (starts a Python with torch; seconds).",
)
def show(target: str, profile: str | None, overrides: tuple[str, ...], probe_onednn: bool) -> None:
    """Show a workload's resolved config and what this machine's CPU gives it (matrix ISA, the precision
    ``auto`` picks and why), or a result file's summary with its recorded ISA and precision (TARGET = name or path)."""
    from suite.results import Result, read_result
    from suite.run.progress import summary_table

    path = Path(target)
    if path.suffix == ".json" or path.is_file() or path.exists():
        result = read_result(path)  # ResultError (unreadable, FIFO, too deep, forged...): exit 1
        # every string of the file is untrusted: no escape sequence or control character reaches the
        # terminal, and the names the table's title shows as markup are escaped
        doc = plain_tree(result.model_dump(mode="json"))
        doc.update({k: markup(doc[k]) for k in ("workload", "profile", "system")})
        console.print(summary_table(Result.model_validate(doc)))
        console.print(f"digest {result.digest} verified; status {markup(result.status)}", highlight=False)
        return
    config = resolve(target, profile, list(overrides))
    console.print(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), end="", highlight=False)
    _this_machine(config, probe_onednn)


def _this_machine(config: RunConfig, probe_onednn: bool) -> None:
    """Print this machine's ISA record and the precision decision ``config`` gets here."""
    import os

    from harness.precision import choose_precision
    from harness.system import read_isa
    from suite.run.header import header_lines, planned_header

    header = planned_header(config, os.environ)
    if probe_onednn:
        header["isa"] = read_isa(probe_onednn=True).to_dict()
    console.rule("this machine", align="left")
    for line in header_lines(header):
        console.print(markup(line), highlight=False, soft_wrap=True)
    isa = header["isa"]
    console.print(f"CPU matrix features: {markup(_flags(isa['features']))}", highlight=False)
    console.print(f"effective (after the caps): {markup(_flags(isa['effective']))}", highlight=False)
    if isa.get("onednn_isa"):
        console.print(f"oneDNN reports: {markup(str(isa['onednn_isa']))}", highlight=False)
    if header["precision"] is not None and header["precision"]["requested"] != "auto":
        auto = choose_precision("auto", read_isa())
        console.print(f"precision=auto would choose here: {markup(auto.reason)}", highlight=False)


def _flags(flags: dict[str, bool]) -> str:
    """``has a b; lacks c d`` for a feature map."""
    if not flags:
        return "none tracked for this architecture"
    has = " ".join(k for k, v in flags.items() if v) or "none"
    lacks = " ".join(k for k, v in flags.items() if not v)
    return f"{has}" + (f"; lacks {lacks}" if lacks else "")


@click.command()
def prices() -> None:
    """Show the versioned price table used for samples per dollar."""
    from suite.cost.prices import load_price_table

    table = load_price_table()
    t = Table("provider", "instance type", "pricing", "region", "USD/hour", "date", "source")
    for e in table.entries:
        t.add_row(e.provider, e.instance_type, e.pricing, e.region or "-", f"{e.usd_per_hour:g}", e.date, e.source)
    console.print(t)


@click.command()
@click.option("--write", is_flag=True, help="Write the schema file in the package instead of printing it.")
def schema(write: bool) -> None:
    """Print the result JSON Schema."""
    from suite.results import SCHEMA_PATH, json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if write:
        SCHEMA_PATH.write_text(text)
        console.print(f"wrote {SCHEMA_PATH}")
    else:
        click.echo(text, nl=False)


COMMANDS = (list_cmd, show, prices, schema)
"""This area's commands (registered by :mod:`suite.commands`)."""
