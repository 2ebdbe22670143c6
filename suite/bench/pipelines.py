"""``trainbench bench-pipelines``: seed 001's question on one device. Is the GPU fed, and by what?

It runs resnet50-gpu-horovod through the real ``trainbench run`` path (harness windows, result
JSON, validation-ready) first on the resident synthetic batch (the device's ceiling), then on
real JPEGs through each input pipeline (``dataloader``, ``dali``, ``tfdata-service``), on the same
device with the same settings. Per pipeline: images/s and its share of the ceiling, the
input-bound fraction, the CPU cores the trainer's process tree used in the measurement windows
(and the cores a tf.data service's workers were given), and samples per dollar, with the service's
extra CPU instances priced in for ``tfdata-service`` (seed 001's price-performance: "Improve price
performance of your model training using Amazon SageMaker heterogeneous clusters", Oct 2022).
:mod:`suite.bench.pipelines_report` turns the rows into the table and the verdict in words.

The tf.data service runs on this machine (``LocalService``: a dispatcher and workers as processes,
optionally pinned with ``service_cpus``), standing for the extra CPU machines of the seed's
cluster; the trainer can be pinned apart with ``trainer_cpus`` (its ranks inherit the affinity).
On CPU (``--set device=cpu``) the same runs work with a tiny set, which is how the tests run it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from harness.system import parse_cpulist
from harness.utilization import measurement_spans
from suite.cost import load_price_table, lookup, samples_per_dollar_or_none
from suite.errors import BadInput
from suite.extras import MissingExtra, require
from suite.results import Result
from suite.run.execute import execute
from suite.run.options import RunError, RunOptions
from suite.runtimes.base import Runtime
from suite.runtimes.local import LocalRuntime
from suite.specs import resolve

WORKLOAD = "resnet50-gpu-horovod"
PIPELINES = ("dataloader", "dali", "tfdata-service")
"""The real-data pipelines, in the order they run (after the synthetic ceiling)."""


@dataclass(frozen=True)
class Pricing:
    """Prices, USD/hour (each optional; without one, samples per dollar are not given).

    Attributes:
        usd_per_hour: the trainer's machine (``--price-per-hour``), or None to take it from the
            price table (``instance_type``) or leave it out.
        instance_type, pricing, region: price-table lookup of the trainer's machine.
        service_usd_per_hour: one extra CPU instance of the tf.data service, or None.
        service_instance_type: price-table lookup of that instance instead.
        service_instances: how many such instances the service's workers stand for.
    """

    usd_per_hour: float | None = None
    instance_type: str | None = None
    pricing: str = "on-demand"
    region: str | None = None
    service_usd_per_hour: float | None = None
    service_instance_type: str | None = None
    service_instances: int = 1

    def service_price(self) -> float | None:
        """USD/hour of all the service's instances, or None when not priced.

        Raises:
            suite.cost.PriceTableError: the service instance type is not in the price table.
        """
        each = self.service_usd_per_hour
        if each is None and self.service_instance_type:
            each = lookup(load_price_table(), self.service_instance_type, self.pricing, self.region).usd_per_hour
        return None if each is None else each * self.service_instances


@dataclass(frozen=True)
class BenchSettings:
    """What ``bench-pipelines`` runs.

    Attributes:
        data_dir: the JPEG tree (ImageNet's train/, or ``trainbench data make-imagenet-like``).
        pipelines: the real-data pipelines to run after the synthetic ceiling.
        profile: the workload profile (windows and defaults).
        overrides: ``--set`` settings for every run (device, batch_size, num_workers, windows...).
        service_cpus: one entry per local tf.data service worker: a cpulist to pin it to, or None.
        trainer_cpus: a cpulist the trainer runs on (every row), or None for all.
        pricing: prices for samples per dollar.
    """

    data_dir: Path
    pipelines: tuple[str, ...] = PIPELINES
    profile: str = "quick"
    overrides: tuple[str, ...] = ()
    service_cpus: tuple[str | None, ...] = (None,)
    trainer_cpus: str | None = None
    pricing: Pricing = field(default_factory=Pricing)


@dataclass
class Row:
    """One measured pipeline (or why it was not).

    Attributes:
        pipeline: ``synthetic`` or a real-data pipeline.
        images_per_s: throughput of all ranks (None: not measured).
        ceiling_share: images_per_s / the synthetic row's (None without both).
        input_bound: the input-bound fraction (data wait / step time), 0-1.
        ci_rel: the 95% CI's half-width / throughput (None: unbounded).
        cores_used: CPU cores the trainer's process tree kept busy in the measurement windows.
        service_cores: cores the tf.data service's workers were given (tfdata-service only).
        usd_per_hour: the price the row is charged (trainer + service instances).
        samples_per_dollar: images_per_s x 3600 / usd_per_hour.
        verdict: the run's diagnosis (input-bound, partly input-bound, compute-bound).
        world_size: ranks (GPUs) of the run.
        device: the device the rank reported.
        result: the result JSON's path.
        error: why the row has no figures.
    """

    pipeline: str
    images_per_s: float | None = None
    ceiling_share: float | None = None
    input_bound: float | None = None
    ci_rel: float | None = None
    cores_used: float | None = None
    service_cores: int | None = None
    usd_per_hour: float | None = None
    samples_per_dollar: float | None = None
    verdict: str | None = None
    world_size: int = 1
    device: str = "?"
    result: str | None = None
    error: str | None = None


def cores_used(result: Result) -> float | None:
    """Cores the run's process tree kept busy on average in its measurement windows (None without readings).

    CPU-seconds of the tree (the sampler's ``run_cpu_s``) over the readings' wall seconds
    (``machine_cpu_s`` / cores), for the readings that fell inside a measurement window.
    """
    spans = measurement_spans(result.windows)
    busy = wall = 0.0
    for s in result.utilization:
        if s.run_cpu_s is None or s.machine_cpu_s is None or not s.cpu_percent:
            continue
        if any(a <= s.t_s <= b for a, b, _ in spans):
            busy += s.run_cpu_s
            wall += s.machine_cpu_s / len(s.cpu_percent)
    return busy / wall if wall > 0 else None


@contextlib.contextmanager
def _pinned(cpus: str | None) -> Iterator[None]:
    """Run the block with this process (and the ranks it starts) restricted to ``cpus``."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        wanted = set(parse_cpulist(cpus))
    except ValueError as exc:
        raise BadInput(f"--trainer-cpus {cpus!r} is not a cpulist such as 0-7: {exc}") from exc
    if not wanted or not wanted <= before:
        raise BadInput(f"--trainer-cpus {cpus}: this process may use CPUs {sorted(before)} only")
    os.sched_setaffinity(0, wanted)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _measure(pipeline: str, overrides: list[str], settings: BenchSettings, opts: RunOptions) -> Row:
    """One run; a failed run is a row with its error (a KeyboardInterrupt after Ctrl-C propagates)."""
    try:
        outcome = execute(resolve(WORKLOAD, settings.profile, overrides), opts)
    except RunError as exc:
        if exc.exit_code == 130:
            raise KeyboardInterrupt from exc
        return Row(pipeline, error=str(exc), result=str(exc.result_path) if exc.result_path else None)
    r = outcome.result
    s = r.summary
    assert s is not None  # a complete result has one
    prep = r.workload_info.get("preprocessing") or {}
    trainer_price = r.cost.usd_per_hour if r.cost is not None else None
    return Row(
        pipeline,
        images_per_s=s.throughput,
        input_bound=s.input_bound_fraction,
        ci_rel=s.throughput_ci95_rel,
        cores_used=cores_used(r),
        service_cores=int(prep["cores"]) if pipeline == "tfdata-service" and "cores" in prep else None,
        usd_per_hour=trainer_price,
        verdict=r.diagnosis.verdict if r.diagnosis else None,
        world_size=r.world_size,
        device=str(r.workload_info.get("device_name", "?")),
        result=str(outcome.result_path),
    )


def check_settings(settings: BenchSettings) -> float | None:
    """Refuse what would fail later, before anything runs; returns the service instances' USD/hour (or None).

    Raises:
        suite.errors.BadInput: an unknown pipeline.
        suite.specs.ConfigError: an override the workload refuses.
        suite.cost.PriceTableError: an instance type the price table lacks.
    """
    unknown = [p for p in settings.pipelines if p not in PIPELINES]
    if unknown:
        raise BadInput(f"unknown pipeline(s) {unknown}; choose from {', '.join(PIPELINES)}")
    real = [*settings.overrides, f"data_dir={settings.data_dir.resolve()}", "input_pipeline=dataloader"]
    resolve(WORKLOAD, settings.profile, real)
    p = settings.pricing
    if p.instance_type:
        lookup(load_price_table(), p.instance_type, p.pricing, p.region)
    return settings.pricing.service_price()


def run_pipelines(
    settings: BenchSettings,
    output_dir: Path,
    console: Console,
    runtime: Runtime | None = None,
    rows: list[Row] | None = None,
) -> list[Row]:
    """Run the synthetic ceiling, then each pipeline; return one row each (appended to ``rows`` as they end).

    Raises:
        suite.specs.ConfigError: an override is invalid (before anything runs).
        suite.cost.PriceTableError: a price cannot be looked up.
        suite.errors.BadInput: ``trainer_cpus`` is not a cpulist this process may use.
        KeyboardInterrupt: Ctrl-C (the rows measured so far are in ``rows``).
    """
    rows = [] if rows is None else rows
    service_price = check_settings(settings)
    base = list(settings.overrides)
    real = [*base, f"data_dir={settings.data_dir.resolve()}"]
    p = settings.pricing
    opts = RunOptions(output_dir, None, price_per_hour=p.usd_per_hour, instance_type=p.instance_type,
                      pricing=p.pricing, region=p.region, runtime=runtime or LocalRuntime())  # fmt: skip
    with _pinned(settings.trainer_cpus):
        for pipeline in ("synthetic", *settings.pipelines):
            console.rule(f"{pipeline}")
            if pipeline == "synthetic":
                row = _measure(pipeline, [*base, "input_pipeline=synthetic"], settings, opts)
            elif pipeline == "dali":
                try:
                    require("dali", "input_pipeline=dali")
                except MissingExtra as exc:
                    rows.append(Row(pipeline, error=str(exc)))
                    continue
                row = _measure(pipeline, [*real, "input_pipeline=dali"], settings, opts)
            elif pipeline == "tfdata-service":
                row = _service_row(real, settings, output_dir, opts)
                if row.usd_per_hour is not None and service_price is not None:
                    row.usd_per_hour += service_price
                elif service_price is None:
                    row.usd_per_hour = None  # the extra instances are not priced: no fair figure
            else:
                row = _measure(pipeline, [*real, f"input_pipeline={pipeline}"], settings, opts)
            row.samples_per_dollar = samples_per_dollar_or_none(row.images_per_s, row.usd_per_hour)
            rows.append(row)
            ceiling = rows[0].images_per_s
            if ceiling and row.images_per_s is not None:
                row.ceiling_share = row.images_per_s / ceiling
            done = f"{row.images_per_s:.4g} images/s" if row.images_per_s is not None else f"failed: {row.error}"
            console.print(escape(f"{pipeline}: {done}"))
    return rows


def _service_row(real: list[str], settings: BenchSettings, output_dir: Path, opts: RunOptions) -> Row:
    """Start a tf.data service here (its workers pinned as asked), run the trainer against it, stop it."""
    try:
        require("offload", "input_pipeline=tfdata-service")
    except MissingExtra as exc:
        return Row("tfdata-service", error=str(exc))
    from suite.datasets.service import DataServiceError, LocalService

    try:
        with LocalService(list(settings.service_cpus), output_dir / "service-logs") as service:
            # num_workers=0: each service worker's map runs as parallel as tf.data finds its cores allow
            overrides = [*real, "input_pipeline=tfdata-service", f"data_service={service.address}", "num_workers=0"]
            return _measure("tfdata-service", overrides, settings, opts)
    except DataServiceError as exc:
        return Row("tfdata-service", error=str(exc))
