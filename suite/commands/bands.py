"""Reference bands: ``trainbench bands list`` and ``trainbench bands derive``."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from suite.commands.validate import bands_option, bands_path_for, rules_option, specs_option
from suite.console import console, markup
from suite.rules import load_rules
from suite.validation.bands import MeasuredRuns
from suite.validation.bands_file import load_bands, write_bands


@click.group("bands")
def bands() -> None:
    """Reference throughput bands: list them, or derive one from at least 5 runs."""


@bands.command("list")
@bands_option
@specs_option
def bands_list(bands_path: Path | None, specs_dir: Path) -> None:
    """List the reference bands with their ranges and sources."""
    data = load_bands(bands_path_for(bands_path), specs_dir)
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
        t.add_row(*(markup(c) for c in cells))
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
@bands_option
@rules_option
@specs_option
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

    from suite.validation.derive import add_band, derive_band, read_runs
    from suite.validation.result_checks import CheckContext

    ctx = CheckContext(load_rules(rules_path), specs_dir)
    runs = read_runs(results)
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
    target = bands_path_for(bands_path)
    updated = add_band(load_bands(target, specs_dir), band, replace)
    write_bands(updated, target)
    console.print(f"wrote {markup(target)}", highlight=False)


COMMANDS = (bands,)
"""This area's commands (registered by :mod:`suite.commands`)."""
