"""Deriving a measured reference band from at least 5 runs of one configuration on one system.

value = the median of the runs' metric (samples/s); the bounds are the observed
extremes relative to the median, each widened by ``margin`` (a fraction of the value):

    lower = min(min / median - 1 - margin, 0), clamped to >= -1
    upper = max(max / median - 1 + margin, 0)

Five runs see only part of a machine's spread, so the margin (default 5% of the value)
covers what they missed. The band records the runs' digests, their values and
statistics, so the validator can check that the band follows from them.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from suite import __version__
from suite.errors import BadInput
from suite.launchers import LAUNCHERS
from suite.results import Result, ResultError, read_result
from suite.rules import flatten_config
from suite.validation.bands import (
    METRIC_UNITS,
    MIN_MEASURED_RUNS,
    BandsFile,
    MeasuredRuns,
    ReferenceBand,
    run_stats,
    score,
)
from suite.validation.duplicates import find_twins
from suite.validation.findings import Findings
from suite.validation.result_checks import CheckContext, check_result

MIN_RUNS = MIN_MEASURED_RUNS
"""Fewest runs a measured band may come from."""
DEFAULT_MARGIN = 0.05
"""Fraction of the value added beyond the observed spread on each side."""


class DeriveError(BadInput, ValueError):
    """The runs cannot give a band; the message says why and what to do."""


def read_runs(paths: Sequence[Path]) -> list[tuple[str, Result]]:
    """``(path, result)`` of each result file a band is to be derived from.

    Raises:
        DeriveError: a file cannot be read or fails its checks (``suite.results.read_result``).
    """
    try:
        return [(str(p), read_result(p)) for p in paths]
    except ResultError as exc:
        raise DeriveError(str(exc)) from exc


def _metric(result: Result, metric: str) -> float:
    value = metric_value(result, metric)
    if value is not None:
        return value
    raise DeriveError(f"run {result.run_id} has no {metric} (samples per dollar needs --price-per-hour at run time)")


ALWAYS_PINNED = ("launch.launcher", "launch.allocator")
"""Launch settings an open-division band always pins (others only when not at their default)."""


def open_conditions(result: Result) -> dict[str, object]:
    """The settings an open-division band derived from ``result`` applies to.

    Every workload param, the launcher and the allocator, and any other launch
    setting that differs from its default (an untouched default is left free, so a
    launch option added to the suite later does not orphan the band).
    """
    variant = LAUNCHERS[result.config.launch.launcher]
    defaults = {f"launch.{k}": f.default for k, f in variant.model_fields.items()}
    return {
        key: value
        for key, value in flatten_config(result.config).items()
        if key.startswith("params.") or key in ALWAYS_PINNED or (key.startswith("launch.") and value != defaults[key])
    }


def band_bounds(values: Sequence[float], margin: float) -> tuple[float, float, float]:
    """(value, lower, upper) of a measured band from its runs' metric values, by the method above.

    ``lower`` and ``upper`` are fractions of the value rounded to 6 decimals (as written).
    The validator recomputes a measured band's figures with this same function.

    Raises:
        ValueError: no values.
    """
    median = score(values, "median")
    lower = max(-1.0, min(min(values) / median - 1 - margin, 0.0))
    upper = max(max(values) / median - 1 + margin, 0.0)
    return median, round(lower, 6), round(upper, 6)


def metric_value(result: Result, metric: str) -> float | None:
    """The run's value of a band metric (samples/s, or samples per USD), or None when it has none."""
    if metric == "throughput" and result.summary is not None:
        return result.summary.throughput
    if metric == "samples_per_dollar" and result.cost is not None:
        return result.cost.samples_per_dollar
    return None


def derive_band(
    results: Sequence[tuple[str, Result]],
    *,
    system: str,
    division: str,
    ctx: CheckContext,
    name: str | None = None,
    metric: str = "throughput",
    margin: float = DEFAULT_MARGIN,
    note: str | None = None,
    argv: Sequence[str] = (),
) -> ReferenceBand:
    """A measured band from ``results`` (``(label, result)`` pairs, labels for messages).

    Every run must pass the validator's per-result checks without an error, be
    complete, of one workload, config, division and recorded system, and distinct
    (digests and raw records).

    Raises:
        DeriveError: fewer than :data:`MIN_RUNS` runs, a run with error findings, or
            runs that differ in workload, config, division or system.
    """
    if len(results) < MIN_RUNS:
        raise DeriveError(f"{len(results)} run(s) given; a measured band needs at least {MIN_RUNS}")
    if not 0 <= margin <= 1:
        raise DeriveError(f"--margin {margin} must be a fraction between 0 and 1")
    findings = Findings()
    for label, r in results:
        check_result(r, label, findings, ctx)
    errors = [f for f in findings if f.severity.value == "error"]
    if errors:
        detail = "; ".join(f"{f.where}: {f.message}" for f in errors[:5])
        raise DeriveError(f"{len(errors)} error finding(s) in the runs, e.g. {detail}")
    first = results[0][1]
    flat = flatten_config(first.config)
    for label, r in results:
        if r.workload != first.workload or flatten_config(r.config) != flat:
            raise DeriveError(f"{label}: its workload or config differs from the first run's; a band is one config")
        if r.division != division:
            raise DeriveError(f"{label}: a {r.division}-division run cannot give a {division}-division band")
        if r.system != first.system:
            raise DeriveError(f"{label}: recorded on system {r.system!r}, the first run on {first.system!r}")
    digests = [r.digest for _, r in results]
    if len(set(digests)) != len(digests):
        raise DeriveError("the same run is given twice (equal digests)")
    twins = find_twins([r for _, r in results])
    if twins:
        t = twins[0]
        raise DeriveError(
            f"{results[t.index][0]} is the same run as {results[t.original][0]} ({t.reason}); "
            "one measurement counts once"
        )
    values = [_metric(r, metric) for _, r in results]
    stats = run_stats(values)
    median, lower, upper = band_bounds(values, margin)
    band_name = name or f"{first.workload}-{division}-{system}-{first.profile}".lower()
    return ReferenceBand(
        name=band_name,
        workload=first.workload,
        system=system,
        division=division,  # type: ignore[arg-type]
        metric=metric,  # type: ignore[arg-type]
        value=median,
        lower=lower,
        upper=upper,
        floor=None,
        unit=METRIC_UNITS[metric],
        runs=len(results),
        conditions={} if division == "closed" else open_conditions(first),  # type: ignore[arg-type]
        source=MeasuredRuns(
            runs=digests,
            result_system=first.system,
            stats=stats,
            method=(
                f"value = median of {len(values)} runs; lower/upper = observed min/max relative to the "
                f"median, widened by a margin of {margin:g} of the value on each side"
                + (f"; command: {shlex.join(argv)}" if argv else "")
            ),
            margin=margin,
            derived_at=datetime.now(UTC).isoformat(timespec="seconds"),
            suite_version=__version__,
            note=note,
        ),
    )


def add_band(bands: BandsFile, band: ReferenceBand, replace: bool) -> BandsFile:
    """``bands`` with ``band`` added (or replacing the band of the same name or key when ``replace``).

    Raises:
        DeriveError: a band of the same name or key exists and ``replace`` is False.
    """
    clash = [b for b in bands.bands if b.name == band.name or b.key() == band.key()]
    if clash and not replace:
        raise DeriveError(f"band {clash[0].name!r} already covers this; pass --replace to overwrite it")
    kept = [b for b in bands.bands if b not in clash]
    return BandsFile(bands_version=bands.bands_version, bands=[*kept, band])
