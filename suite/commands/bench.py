"""Benchmarks that print figures: ``trainbench bench`` (CPU), ``bench-pipelines`` and ``bench-mnist`` (the GPU
ladder is ``trainbench ladder resnet50-gpu-horovod``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from suite.bench.container_result import ContainerSettings
from suite.bench.overhead import OverheadSettings
from suite.console import console, stop_on_sigterm
from suite.errors import BadInput, Interrupted, RunFailed
from suite.extras import require


@click.command()
@click.argument("parts", nargs=-1, type=click.Choice(["all", "overhead", "docker", "ladder"]))
@click.option("--pairs", type=click.IntRange(1, 10_000), default=OverheadSettings.pairs, show_default=True,
              help="Overhead: pairs of bare and harness blocks (two make an ABBA quad; >= 12 bound a 95% CI; "
                   "about 9 s each at the defaults on a 2-vCPU CPU).")  # fmt: skip
@click.option("--block-steps", type=click.IntRange(1, 10_000), default=OverheadSettings.block_steps, show_default=True,
              help="Overhead and docker/local: measured steps per block.")  # fmt: skip
@click.option("--docker-sessions", type=click.IntRange(1, 100), default=ContainerSettings.sessions,
              show_default=True,
              help="Docker/local: sessions, each with new local and container workers; they alternate "
                   "which starts first, and the verdict needs an even number.")  # fmt: skip
@click.option("--docker-pairs", type=click.IntRange(2, 1_000), default=ContainerSettings.pairs, show_default=True,
              help="Docker/local: pairs of blocks per session (two make a quad; about 8 s each at the "
                   "defaults on a 2-vCPU CPU, plus about a minute per session to start and warm up).")  # fmt: skip
@click.option("--steps", type=click.IntRange(2, 100_000), default=8, show_default=True,
              help="Ladder: measured steps per rung.")  # fmt: skip
@click.option("--batch-size", type=click.IntRange(1, 4096), default=16, show_default=True,
              help="Batch size (CONTEXT.md's bare-loop figures: 16).")  # fmt: skip
@click.option("--image-size", type=click.IntRange(32, 1024), default=224, show_default=True,
              help="Overhead and docker/local: input size in pixels.")  # fmt: skip
@click.option("--image", metavar="IMAGE", help="Docker/local: the image [default: the workload's, trainbench-cpu].")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/bench"), show_default=True)
def bench(
    parts: tuple[str, ...],
    pairs: int,
    block_steps: int,
    docker_sessions: int,
    docker_pairs: int,
    steps: int,
    batch_size: int,
    image_size: int,
    image: str | None,
    output_dir: Path,
) -> None:
    """The developers' benchmarks: PARTS of overhead (harness vs a bare loop), docker (container
    vs local) and ladder (the CPU optimization ladder); default: overhead and docker."""
    require("train", "trainbench bench")
    from suite.bench.cpu import BenchSettings
    from suite.bench.cpu import main as bench_main

    chosen = ("overhead", "docker") if not parts else ("overhead", "docker", "ladder") if "all" in parts else parts
    settings = BenchSettings(
        parts=tuple(chosen),
        overhead=OverheadSettings(pairs=pairs, block_steps=block_steps, batch_size=batch_size, image_size=image_size),
        container=ContainerSettings(
            sessions=docker_sessions,
            pairs=docker_pairs,
            block_steps=block_steps,
            batch_size=batch_size,
            image_size=image_size,
            image=image,
        ),
        ladder_steps=steps,
    )
    stop_on_sigterm()
    try:
        bench_main(settings, output_dir.resolve())
    except KeyboardInterrupt:
        raise Interrupted("bench interrupted; the runs finished so far are in --output-dir") from None


@click.command("bench-pipelines")
@click.argument("data_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--pipelines", default="dataloader,dali,tfdata-service", show_default=True,
              help="Comma-separated real-data pipelines, run after the synthetic ceiling.")  # fmt: skip
@click.option("--profile", default="quick", show_default=True, help="Profile of resnet50-gpu-horovod.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Settings for every run, e.g. engine=ddp, num_workers=15, device=cpu.")  # fmt: skip
@click.option("--service-cpus", multiple=True, metavar="CPULIST",
              help="tfdata-service: a local service worker pinned to CPULIST (repeat for more) "
                   "[default: one, unpinned].")  # fmt: skip
@click.option("--trainer-cpus", metavar="CPULIST", help="Pin the trainer (every run) to these CPUs.")
@click.option("--price-per-hour", type=click.FloatRange(min=0, min_open=True), help="Trainer machine, USD/h.")
@click.option("--instance-type", help="Trainer machine: look its price up in the price table.")
@click.option("--pricing", type=click.Choice(["on-demand", "spot"]), default="on-demand", show_default=True)
@click.option("--region", help="Region of the price-table lookups.")
@click.option("--service-price-per-hour", type=click.FloatRange(min=0, min_open=True),
              help="tfdata-service: USD/h of each extra CPU instance its workers stand for.")  # fmt: skip
@click.option("--service-instance-type", help="tfdata-service: look that instance's price up instead.")
@click.option("--service-instances", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="tfdata-service: extra CPU instances to price in.")  # fmt: skip
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/bench-pipelines"),
              show_default=True)  # fmt: skip
def bench_pipelines(
    data_dir: Path,
    pipelines: str,
    profile: str,
    overrides: tuple[str, ...],
    service_cpus: tuple[str, ...],
    trainer_cpus: str | None,
    price_per_hour: float | None,
    instance_type: str | None,
    pricing: str,
    region: str | None,
    service_price_per_hour: float | None,
    service_instance_type: str | None,
    service_instances: int,
    output_dir: Path,
) -> None:
    """Is the GPU fed? resnet50-gpu-horovod on the synthetic ceiling, then on the JPEGs of DATA_DIR
    through each input pipeline, on this machine's device: images/s, share of the ceiling,
    input-bound fraction, CPU cores, samples per dollar (tfdata-service's extra CPU instances priced
    in), and a verdict in words. --set device=cpu runs it without a GPU (a tiny set is enough).

    Exit codes: 0 every row measured; 1 a row failed; 2 bad input; 130 interrupted (the rows measured are kept).
    """
    require("train", "trainbench bench-pipelines")
    from suite.bench.pipelines import BenchSettings, Pricing
    from suite.bench.pipelines_report import main as bench_main

    if price_per_hour is not None and instance_type is not None:
        raise BadInput("give --price-per-hour or --instance-type, not both")
    if service_price_per_hour is not None and service_instance_type is not None:
        raise BadInput("give --service-price-per-hour or --service-instance-type, not both")
    chosen = tuple(p.strip() for p in pipelines.split(",") if p.strip())
    settings = BenchSettings(
        data_dir=data_dir,
        pipelines=chosen,
        profile=profile,
        overrides=overrides,
        service_cpus=tuple(service_cpus) or (None,),
        trainer_cpus=trainer_cpus,
        pricing=Pricing(
            price_per_hour,
            instance_type,
            pricing,
            region,
            service_price_per_hour,
            service_instance_type,
            service_instances,
        ),
    )
    stop_on_sigterm()  # a supervisor's SIGTERM stops like Ctrl-C: the rows measured are kept
    doc = bench_main(settings, output_dir.resolve())
    if not doc["complete"]:
        raise Interrupted(f"bench-pipelines interrupted; the {len(doc['rows'])} row(s) measured are in {doc['path']}")
    failed = [r["pipeline"] for r in doc["rows"] if r["error"]]
    if failed:
        raise RunFailed(f"{', '.join(failed)} not measured (see the table); the other rows are in {doc['path']}")


@click.command("bench-mnist")
@click.option("--repeats", "chain_repeats", type=click.IntRange(0, 64), default=4, show_default=True,
              help="preprocess_repeats of the heavy chain.")  # fmt: skip
@click.option("--batch-size", type=click.IntRange(1, 4096), default=64, show_default=True)
@click.option("--steps", type=click.IntRange(2, 100_000), default=20, show_default=True, help="Minimum measured steps.")
@click.option("--seconds", type=click.FloatRange(0, 3600), default=10.0, show_default=True, help="Minimum measured s.")
@click.option("--runs", type=click.IntRange(1, 100), default=2, show_default=True, help="Repeats per point.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/bench-mnist"), show_default=True)
@click.option("--service-image", metavar="IMAGE",
              help="Also run the tf.data service in CPU-pinned containers of IMAGE (e.g. trainbench-cpu).")  # fmt: skip
def bench_mnist(
    chain_repeats: int,
    batch_size: int,
    steps: int,
    seconds: float,
    runs: int,
    output_dir: Path,
    service_image: str | None,
) -> None:
    """Input-bound training and offloaded preprocessing on this machine, in printed figures (issue 5).

    Part 1: 0, 1, 2 DataLoader workers. Part 2: the trainer pinned to one CPU,
    preprocessing on that CPU vs on a tf.data service worker pinned to another
    (a process, and with --service-image also a container).
    """
    from suite.bench.mnist import BenchSettings, main
    from suite.containers.errors import ContainerError
    from suite.datasets.service import DataServiceError
    from suite.runtimes.docker_args import image_reference

    image = image_reference(service_image) if service_image else None
    if image:  # before part 1's minutes of measurement, not after them
        from suite.containers.service import check_service_image

        try:
            check_service_image(image)
        except ContainerError as exc:
            raise BadInput(f"--service-image: {exc}") from exc
    settings = BenchSettings(chain_repeats, batch_size, steps, seconds, runs, image)
    stop_on_sigterm()  # points/steps measured are kept, services removed
    try:
        code = main(settings, output_dir.resolve(), console)
    except DataServiceError as exc:  # the service of part 2 did not start: the benchmark failed
        raise RunFailed(str(exc)) from exc
    except KeyboardInterrupt:
        raise Interrupted("bench-mnist interrupted between points; the points measured are in --output-dir") from None
    sys.exit(code)


@click.command("bench-validate")
@click.option("--steps", type=click.IntRange(10, 80_000), default=10_000, show_default=True, help="Measured steps.")
def bench_validate(steps: int) -> None:
    """Seconds and peak memory to validate one result of STEPS steps (in a fresh process)."""
    from suite.bench.validation import main as bench_main

    try:
        bench_main(steps)
    except RuntimeError as exc:
        raise RunFailed(str(exc)) from exc


COMMANDS = (bench, bench_pipelines, bench_mnist, bench_validate)
"""This area's commands (registered by :mod:`suite.commands`)."""
