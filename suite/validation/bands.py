"""Reference throughput bands: what a score should be on a given system, and where that figure came from.

A band follows ReFrame's reference semantics: ``value`` with ``lower`` and ``upper``
as fractions of it (``lower`` in [-1, 0], ``upper`` >= 0, None = unbounded), plus an
optional absolute ``floor`` in the band's unit. A band is keyed by (workload,
division, system or system class, metric, conditions); ``conditions`` pins the config
settings a band applies to (an open-division band for fp32 is not one for bf16). Every
band carries its source: a citation of a published figure, or the digests of the runs
it was measured from.

The bands live in a versioned YAML file, ``submissions/bands.yaml`` (JSON Schema:
``suite/schemas/bands-v1.schema.json``), read and written by :mod:`suite.validation.bands_file`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from suite.errors import BadInput
from suite.provenance import PROJECT_ROOT

BANDS_VERSION = 1
BANDS_PATH = PROJECT_ROOT / "submissions" / "bands.yaml"
"""The committed reference bands (in a source checkout)."""
BANDS_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / f"bands-v{BANDS_VERSION}.schema.json"

METRIC_UNITS: dict[str, str] = {"throughput": "samples/s", "samples_per_dollar": "samples/USD"}
"""The unit of each metric a band can be about: throughput in samples per second, and
samples per US dollar (samples/s x 3600 / USD per hour)."""

Metric = Literal["throughput", "samples_per_dollar"]
Verdict = Literal["below", "inside", "above"]
Scalar = str | int | float | bool | None


class BandsError(BadInput, ValueError):
    """The bands file is unreadable or invalid; the message says what to change."""


class Citation(BaseModel):
    """A published figure.

    Attributes:
        reference: author, title and date of the publication.
        locator: where in it (section, table, sentence), or the file of the copy kept here.
        setup: the configuration the figure was measured with, in words.
        bounds_policy: why the band's bounds are what they are (a published figure
            usually reports no spread).
        note: caveats (software versions, what differs from trainbench's config).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["citation"] = "citation"
    reference: str = Field(min_length=1)
    locator: str = Field(min_length=1)
    setup: str = Field(min_length=1)
    bounds_policy: str = Field(min_length=1)
    note: str | None = None


MIN_MEASURED_RUNS = 5
"""Runs a measured band must come from (``trainbench bands derive`` refuses fewer)."""


class RunStats(BaseModel):
    """Statistics of the measured runs' metric values (in the band's unit)."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=1)
    median: float = Field(gt=0, allow_inf_nan=False)
    min: float = Field(gt=0, allow_inf_nan=False)
    max: float = Field(gt=0, allow_inf_nan=False)
    cv: float = Field(ge=0, allow_inf_nan=False, description="sample standard deviation / mean")
    values: list[float] = Field(min_length=1)


class MeasuredRuns(BaseModel):
    """Runs measured with trainbench, by digest (``trainbench bands derive``).

    Attributes:
        runs: the content digests of the result files the band was derived from.
        result_system: the ``system`` recorded in those results.
        stats: their metric values and statistics.
        method: how value and bounds were derived from them.
        margin: the fraction added beyond the observed spread on each side.
        derived_at: UTC date and time of the derivation (ISO 8601).
        suite_version: trainbench version that derived the band.
        note: conditions of the measurement (e.g. a shared machine).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["measured"] = "measured"
    runs: list[str] = Field(
        min_length=MIN_MEASURED_RUNS, description="result digests; a measured band needs at least 5 runs (issue 4)"
    )
    result_system: str
    stats: RunStats
    method: str = Field(min_length=1)
    margin: float = Field(ge=0, le=1, allow_inf_nan=False)
    derived_at: str
    suite_version: str
    note: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> MeasuredRuns:
        if len(set(self.runs)) != len(self.runs):
            raise ValueError("the same run digest is listed twice")
        if self.stats.n != len(self.runs) or len(self.stats.values) != len(self.runs):
            raise ValueError(f"stats.n / stats.values must count the {len(self.runs)} runs listed")
        return self


Source = Annotated[Citation | MeasuredRuns, Field(discriminator="kind")]


class ReferenceBand(BaseModel):
    """One reference band.

    Attributes:
        name: unique name of the band.
        workload: the workload spec name.
        system: the system name, system class or instance type it applies to.
        division: ``closed`` or ``open``.
        metric: ``throughput`` (samples/s) or ``samples_per_dollar`` (samples/USD).
        value: the reference value, in ``unit``.
        lower: lowest accepted score as a fraction of value, in [-1, 0]; None = unbounded.
        upper: highest accepted score as a fraction of value, >= 0; None = unbounded.
        floor: an absolute lowest accepted score in ``unit``, or None.
        unit: must be the metric's unit (:data:`METRIC_UNITS`).
        runs: the number of runs behind ``value`` (1 for a single published figure).
        conditions: ``section.setting -> value`` that a run's config must match for the
            band to apply (empty: any config of the division).
        source: the citation or the measured runs.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.+_-]*$")
    workload: str
    system: str = Field(min_length=1)
    division: Literal["closed", "open"]
    metric: Metric
    value: float = Field(gt=0, allow_inf_nan=False)
    lower: float | None = Field(ge=-1, le=0, allow_inf_nan=False)
    upper: float | None = Field(ge=0, allow_inf_nan=False)
    floor: float | None = Field(None, ge=0, allow_inf_nan=False)
    unit: str
    runs: int = Field(ge=1)
    conditions: dict[str, Scalar] = Field(default_factory=dict)
    source: Source

    @model_validator(mode="after")
    def _consistent(self) -> ReferenceBand:
        expected = METRIC_UNITS[self.metric]
        if self.unit != expected:
            raise ValueError(f"band {self.name!r}: unit {self.unit!r} is wrong for {self.metric}; use {expected!r}")
        if self.floor is not None and self.floor > self.value:
            raise ValueError(f"band {self.name!r}: floor {self.floor} is above the value {self.value}")
        if isinstance(self.source, MeasuredRuns) and self.runs != len(self.source.runs):
            raise ValueError(f"band {self.name!r}: runs is {self.runs} but the source lists {len(self.source.runs)}")
        return self

    @property
    def low(self) -> float | None:
        """Lowest accepted score in ``unit`` (None = unbounded below)."""
        low = self.value * (1 + self.lower) if self.lower is not None else None
        if self.floor is not None:
            low = self.floor if low is None else max(low, self.floor)
        return low

    @property
    def high(self) -> float | None:
        """Highest accepted score in ``unit`` (None = unbounded above)."""
        return self.value * (1 + self.upper) if self.upper is not None else None

    def verdict(self, score: float) -> Verdict:
        """Where ``score`` (in ``unit``) lies relative to the band."""
        if self.low is not None and score < self.low:
            return "below"
        if self.high is not None and score > self.high:
            return "above"
        return "inside"

    def key(self) -> tuple[str, str, str, str, tuple[tuple[str, Scalar], ...]]:
        """(workload, division, system, metric, sorted conditions): unique within a file."""
        return (self.workload, self.division, self.system, self.metric, tuple(sorted(self.conditions.items())))

    def applies_to(self, flat_config: dict[str, Any]) -> bool:
        """True when every condition equals the run's setting."""
        return all(k in flat_config and flat_config[k] == v for k, v in self.conditions.items())

    def describe(self) -> str:
        """Short text: value and range."""
        lo = f"{self.low:.4g}" if self.low is not None else "-inf"
        hi = f"{self.high:.4g}" if self.high is not None else "+inf"
        return f"{self.value:.4g} {self.unit} [{lo}, {hi}] ({self.runs} run{'s' if self.runs != 1 else ''})"


class BandsFile(BaseModel):
    """The bands file."""

    model_config = ConfigDict(extra="forbid")

    bands_version: Literal[1]
    bands: list[ReferenceBand]

    @model_validator(mode="after")
    def _unique(self) -> BandsFile:
        names: set[str] = set()
        keys: dict[Any, str] = {}
        for band in self.bands:
            if band.name in names:
                raise ValueError(f"band name {band.name!r} is used twice")
            names.add(band.name)
            if band.key() in keys:
                raise ValueError(
                    f"bands {keys[band.key()]!r} and {band.name!r} have the same key (workload, "
                    "division, system, metric, conditions); keep one"
                )
            keys[band.key()] = band.name
        return self


def score(values: Sequence[float], method: str) -> float:
    """The score of a set of runs.

    Args:
        values: one metric value per run (at least 1; ``olympic_mean`` needs 3).
        method: ``median``, or ``olympic_mean`` (drop one fastest and one slowest run,
            average the rest; MLPerf Training's scoring rule).

    Raises:
        ValueError: no values, too few for an olympic mean, or an unknown method.
    """
    if not values:
        raise ValueError("no runs to score")
    if method == "median":
        return float(statistics.median(values))
    if method == "olympic_mean":
        if len(values) < 3:
            raise ValueError("an olympic mean needs at least 3 runs")
        return float(statistics.fmean(sorted(values)[1:-1]))
    raise ValueError(f"unknown score method {method!r}; use median or olympic_mean")


def run_stats(values: Sequence[float]) -> RunStats:
    """:class:`RunStats` of positive finite values.

    Raises:
        ValueError: no values, or a value that is not positive and finite.
    """
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError("run statistics need positive finite values")
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) > 1 else 0.0
    return RunStats(
        n=len(values),
        median=float(statistics.median(values)),
        min=min(values),
        max=max(values),
        cv=cv,
        values=list(values),
    )


def json_schema() -> dict[str, Any]:
    """JSON Schema of the bands file (generated from the model; committed as BANDS_SCHEMA_PATH)."""
    schema = BandsFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainbench.dev/schemas/bands-v{BANDS_VERSION}.schema.json"
    return schema
