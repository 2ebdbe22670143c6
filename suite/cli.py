"""The ``trainbench`` command line (click)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import yaml
from rich.markup import escape
from rich.table import Table

from suite import __version__
from suite.console import console, fail, stop_on_sigterm
from suite.containers.cli import RuntimeRequest, images, runtime_options
from suite.containers.errors import ContainerError
from suite.cost import PriceTableError, load_price_table
from suite.launch import LaunchError
from suite.results import ResultError, json_schema, read_result
from suite.runner import PreflightError, ResultElsewhere, RunError, RunOptions, execute
from suite.specs import ConfigError, load_specs, resolve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainbench")
def main() -> None:
    """trainbench: reproducible training-throughput benchmarks (samples/s and samples per dollar)."""


@main.command()
@click.argument("workload")
@click.option("--profile", "-p", help="Profile of the workload spec (default: the spec's default, usually quick).")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a setting, e.g. --set batch_size=32 --set allocator=jemalloc (repeatable).",
)
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where result files are written.",
)
@click.option(
    "--tracking-uri",
    envvar="MLFLOW_TRACKING_URI",
    help="MLflow tracking URI [default: sqlite:///mlflow.db in the current directory].",
)
@click.option("--no-tracking", is_flag=True, help="Do not log to MLflow (the result JSON is still written).")
@click.option("--system", help="System name recorded in the result [default: host name].")
@click.option("--price-per-hour", type=float, help="Machine price in USD/hour, for samples per dollar.")
@click.option("--instance-type", help="Look the price up in the price table (see `trainbench prices`).")
@click.option("--pricing", type=click.Choice(["on-demand", "spot"]), default="on-demand", show_default=True)
@click.option("--region", help="Region for the price-table lookup.")
@click.option(
    "--sweep",
    metavar="KEY=V1,V2,...",
    help="Run once per value of one setting (e.g. num_workers=0,1,2); each point is a child MLflow run "
    "under one parent; prints a table and writes a plot of throughput and input-bound fraction.",
)
@runtime_options
def run(
    workload: str,
    profile: str | None,
    overrides: tuple[str, ...],
    output_dir: Path,
    tracking_uri: str | None,
    no_tracking: bool,
    system: str | None,
    price_per_hour: float | None,
    instance_type: str | None,
    pricing: str,
    region: str | None,
    runtime: RuntimeRequest,
    sweep: str | None,
) -> None:
    """Run WORKLOAD through the harness, write its result JSON and log it to MLflow."""
    from suite.report import LiveProgress, summary_table
    from suite.sweep import first_point
    from suite.tracking import default_tracking_uri

    try:  # with --sweep, the first point stands for all (each is resolved again by the sweep)
        config = resolve(workload, profile, [*overrides, *first_point(sweep)])
    except ConfigError as exc:
        fail(str(exc))
    try:
        wrap = runtime.wrapper(config)  # None for --runtime local; docker: engine and image checked now
    except ContainerError as exc:
        fail(str(exc), exc.exit_code)
    uri = None if no_tracking else (tracking_uri or default_tracking_uri())
    opts = RunOptions(
        output_dir=output_dir.resolve(),
        tracking_uri=uri,
        system=system,
        price_per_hour=price_per_hour,
        instance_type=instance_type,
        pricing=pricing,
        region=region,
        wrap=wrap,
    )
    stop_on_sigterm()
    if sweep:
        from suite.sweep_cli import run_sweep_command

        sys.exit(run_sweep_command(workload, profile, list(overrides), sweep, opts, console))
    try:
        with LiveProgress(config, console) as live:
            outcome = execute(config, opts, live)
    except (PreflightError, PriceTableError, LaunchError) as exc:
        fail(str(exc))
    except RunError as exc:
        fail(str(exc), exc.exit_code)
    except ResultElsewhere as exc:
        console.print(escape(str(exc)))
        return
    console.print(summary_table(outcome.result))
    console.print(f"result: {outcome.result_path}\ntimeline: {outcome.timeline_path}")
    if outcome.mlflow_run_id:
        console.print(
            f"MLflow run {outcome.mlflow_run_id} in {uri}\n"
            "Open the results UI with [bold]make ui[/bold] (http://127.0.0.1:5000)."
        )
    if outcome.tracking_error:
        fail(f"{outcome.tracking_error}\nThe result itself is safe in {outcome.result_path}.", 3)


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    hidden=True,
)
@click.pass_context
def rank(ctx: click.Context) -> None:
    """Run one rank (``workloads.rank``): the command a launcher or container executes.

    Arguments: --job JOB.json --out MEASUREMENT.json [--progress PROGRESS.jsonl].
    """
    from workloads.rank import main as rank_main

    sys.exit(rank_main(list(ctx.args)))


@main.command()
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Result root whose outbox is drained.",
)
@click.option("--tracking-uri", help="Send every queued run here instead of to the URI it was meant for.")
def sync(output_dir: Path, tracking_uri: str | None) -> None:
    """Log the runs queued in the outbox while the tracking server was unreachable (idempotent)."""
    from suite.outbox import pending
    from suite.outbox import sync as sync_outbox

    if not pending(output_dir):
        console.print(f"nothing queued in {output_dir}")
        return
    outcomes = sync_outbox(output_dir, tracking_uri)
    t = Table("entry", "status", "detail")
    for o in outcomes:
        t.add_row(o.entry.name, o.status, o.detail)
    console.print(t)
    left = [o for o in outcomes if o.status != "logged"]
    if left:
        fail(f"{len(left)} of {len(outcomes)} queued runs could not be logged; they stay queued", 3)


@main.command("list")
def list_cmd() -> None:
    """List the workloads and their profiles."""
    try:
        specs = load_specs()
    except ConfigError as exc:
        fail(str(exc))
    t = Table("workload", "profiles (default first)", "image", "description")
    for name, spec in specs.items():
        profiles = [spec.default_profile, *sorted(p for p in spec.profiles if p != spec.default_profile)]
        t.add_row(name, ", ".join(profiles), spec.image, spec.description)
    console.print(t)


@main.command()
@click.argument("target")
@click.option("--profile", "-p")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
def show(target: str, profile: str | None, overrides: tuple[str, ...]) -> None:
    """Show a workload's resolved config, or a result file's summary (TARGET = name or path)."""
    from suite.report import summary_table

    path = Path(target)
    if path.suffix == ".json" or path.is_file():
        try:
            result = read_result(path)
        except ResultError as exc:
            fail(str(exc), 1)
        console.print(summary_table(result))
        console.print(f"digest {result.digest} verified; status {result.status}")
        return
    try:
        config = resolve(target, profile, list(overrides))
    except ConfigError as exc:
        fail(str(exc))
    console.print(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), end="", highlight=False)


@main.command()
def prices() -> None:
    """Show the versioned price table used for samples per dollar."""
    try:
        table = load_price_table()
    except PriceTableError as exc:
        fail(str(exc))
    t = Table("provider", "instance type", "pricing", "region", "USD/hour", "date", "source")
    for e in table.entries:
        t.add_row(e.provider, e.instance_type, e.pricing, e.region or "-", f"{e.usd_per_hour:g}", e.date, e.source)
    console.print(t)


@main.command()
@click.option("--write", is_flag=True, help="Write the schema file in the package instead of printing it.")
def schema(write: bool) -> None:
    """Print the result JSON Schema."""
    from suite.results import SCHEMA_PATH

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if write:
        SCHEMA_PATH.write_text(text)
        console.print(f"wrote {SCHEMA_PATH}")
    else:
        click.echo(text, nl=False)


@main.command()
@click.argument("part", type=click.Choice(["all", "overhead", "ladder"]), default="all")
@click.option("--pairs", default=3, show_default=True, help="Bare/harness pairs for the overhead benchmark.")
@click.option("--steps", default=10, show_default=True, help="Measured steps per leg or rung.")
@click.option("--batch-size", default=16, show_default=True, help="Batch size (CONTEXT.md's bare-loop figures: 16).")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/bench"), show_default=True)
def bench(part: str, pairs: int, steps: int, batch_size: int, output_dir: Path) -> None:
    """Benchmarks that print figures: harness overhead and the CPU optimization ladder."""
    from suite.bench import main as bench_main

    if pairs < 1 or steps < 2 or batch_size < 1:
        fail("--pairs must be >= 1, --steps >= 2 and --batch-size >= 1")
    bench_main(part, pairs, steps, batch_size, output_dir.resolve())


@main.command("bench-gpu")
@click.option(
    "--rungs",
    default="fp32,bf16,bf16+channels_last,+compile",
    show_default=True,
    help="Comma-separated rungs of the GPU ladder.",
)
@click.option("--batch-sizes", default="128,256", show_default=True, help="Comma-separated batch sizes per GPU.")
@click.option("--steps", default=100, show_default=True, help="Measured steps per cell (after 10 warm-up steps).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Extra settings, e.g. engine=ddp.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/bench-gpu"), show_default=True)
@runtime_options
def bench_gpu(
    rungs: str, batch_sizes: str, steps: int, overrides: tuple[str, ...], output_dir: Path, runtime: RuntimeRequest
) -> None:
    """The GPU ladder (fp32, bf16, bf16+channels_last, +compile) of resnet50-gpu-horovod at each
    batch size, with images/s, % of the GPU's bf16 peak and the published anchors."""
    from suite.bench_gpu import RUNGS
    from suite.bench_gpu import main as bench_gpu_main

    chosen = [r.strip() for r in rungs.split(",") if r.strip()]
    unknown = [r for r in chosen if r not in RUNGS]
    if unknown or not chosen:
        fail(f"--rungs {rungs!r}: unknown rung(s) {unknown}; choose from {', '.join(RUNGS)}")
    try:
        sizes = [int(b) for b in batch_sizes.split(",") if b.strip()]
    except ValueError:
        fail(f"--batch-sizes {batch_sizes!r}: expected integers such as 128,256")
    if not sizes or min(sizes) < 1 or steps < 2:
        fail("--batch-sizes must be >= 1 and --steps >= 2")
    try:
        config = resolve("resnet50-gpu-horovod", "quick", list(overrides))
        wrap = runtime.wrapper(config)
        bench_gpu_main(chosen, sizes, steps, list(overrides), output_dir.resolve(), wrap)
    except ConfigError as exc:
        fail(str(exc))
    except ContainerError as exc:
        fail(str(exc), exc.exit_code)
    except (PreflightError, LaunchError) as exc:
        fail(str(exc))


from suite.validation.cli import bands, report, submission_schema, submit, validate  # noqa: E402  (issue 4)

for _command in (validate, submit, bands, report, submission_schema):
    main.add_command(_command)

from suite.data_cli import bench_mnist, data, data_service  # noqa: E402  (issue 5)

for _command in (data, data_service, bench_mnist):
    main.add_command(_command)

main.add_command(images)  # issue 3: trainbench images build|base|lock|list


if __name__ == "__main__":
    main()
