"""Cost side of trainbench: instance prices and the samples-per-dollar metric.

Units used throughout this module:

* prices are US dollars per instance-hour (``usd_per_hour``, USD/hour);
* throughput is training samples per second (``samples/s``);
* samples per dollar is samples processed per US dollar spent
  (``samples/s * 3600 s/hour / (USD/hour)``).

The metric comes from C. Rand, "Instance Selection for Deep Learning" (Jun 2023): samples per
dollar = samples per second * 3600 / instance price per hour.

Prices come either from the user (``--price-per-hour``) or from the versioned price table packaged
at ``suite/data/prices.yaml``, where every entry carries its source and the month of that source.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = [
    "DEFAULT_PRICE_TABLE_PATH",
    "PRICINGS",
    "SUPPORTED_TABLE_VERSIONS",
    "USER_PRICE_SOURCE",
    "Cost",
    "PriceEntry",
    "PriceTable",
    "PriceTableError",
    "Pricing",
    "compute_cost",
    "load_price_table",
    "lookup",
    "samples_per_dollar",
]

#: The price table shipped with trainbench.
DEFAULT_PRICE_TABLE_PATH: Path = Path(__file__).resolve().parent / "data" / "prices.yaml"

#: Price-table format versions this module can read.
SUPPORTED_TABLE_VERSIONS: tuple[int, ...] = (1,)

#: Pricing models a price-table entry may have.
Pricing = Literal["on-demand", "spot"]
PRICINGS: tuple[str, ...] = ("on-demand", "spot")

#: ``Cost.price_source`` when the price was given on the command line.
USER_PRICE_SOURCE = "user (--price-per-hour)"

SECONDS_PER_HOUR = 3600.0


class PriceTableError(ValueError):
    """A price table is malformed, or a price cannot be chosen from it unambiguously."""


def _check_table_version(version: object) -> int:
    """Return ``version`` if this module can read tables of that version; raise ``ValueError`` otherwise."""
    supported = ", ".join(str(v) for v in SUPPORTED_TABLE_VERSIONS)
    if isinstance(version, bool) or not isinstance(version, int):
        # ValueError, not TypeError: pydantic turns only ValueError/AssertionError from validators into
        # ValidationError, and PriceTableError (the load-time wrapper) is a ValueError too.
        raise ValueError(f"table_version must be an integer (supported: {supported}), got {version!r}")
    if version not in SUPPORTED_TABLE_VERSIONS:
        raise ValueError(
            f"unsupported table_version {version}; this version of trainbench reads table_version {supported}"
        )
    return version


class PriceEntry(BaseModel):
    """One instance price, with where it came from.

    ``usd_per_hour`` is US dollars per instance-hour. ``region`` is ``None`` where the source does
    not state one. ``date`` is the month of the source, ``YYYY-MM``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1, description="Cloud provider, e.g. 'aws'.")
    service: str = Field(min_length=1, description="Service the price is for, e.g. 'ec2' or 'sagemaker'.")
    instance_type: str = Field(min_length=1, description="Instance type as the provider names it.")
    region: str | None = Field(description="Region of the price; null where the source does not state one.")
    pricing: Pricing = Field(description="Pricing model: 'on-demand' or 'spot'.")
    usd_per_hour: float = Field(gt=0, allow_inf_nan=False, strict=True, description="Price in USD per hour.")
    date: str = Field(pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="Month of the source, YYYY-MM.")
    source: str = Field(min_length=1, description="Citation of the source of the price.")
    note: str | None = Field(default=None, description="Caveats: derived figures, unstated region, ...")


class PriceTable(BaseModel):
    """A versioned table of instance prices (all in ``currency`` per hour)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table_version: int = Field(description="Format version of the table.")
    currency: Literal["USD"] = Field(description="Currency of every price in the table.")
    entries: list[PriceEntry] = Field(min_length=1, description="The prices.")

    @field_validator("table_version", mode="before")
    @classmethod
    def _supported_version(cls, value: object) -> int:
        return _check_table_version(value)

    @model_validator(mode="after")
    def _no_duplicates(self) -> PriceTable:
        seen: set[tuple[str, str, str, str | None, str]] = set()
        for entry in self.entries:
            key = (entry.provider, entry.service, entry.instance_type, entry.region, entry.pricing)
            if key in seen:
                region = entry.region if entry.region is not None else "region not stated"
                raise ValueError(
                    f"duplicate entry for {entry.provider} {entry.service} {entry.instance_type} "
                    f"({entry.pricing}, {region})"
                )
            seen.add(key)
        return self

    def instance_types(self) -> list[str]:
        """Return the instance types in the table, sorted, without repeats."""
        return sorted({e.instance_type for e in self.entries})


def _describe_loc(loc: tuple[int | str, ...], data: Mapping[str, Any]) -> str:
    """Render a pydantic error location as ``entries[3] (c7i.2xlarge).usd_per_hour``."""
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int):
            label = f"[{item}]"
            if i == 1 and loc[0] == "entries":
                entries = data.get("entries")
                if isinstance(entries, list) and item < len(entries) and isinstance(entries[item], Mapping):
                    name = entries[item].get("instance_type")
                    if isinstance(name, str):
                        label += f" ({name})"
            parts.append(label)
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts) or "(top level)"


def _format_validation_error(exc: ValidationError, data: Mapping[str, Any]) -> str:
    """Turn a pydantic ``ValidationError`` into one line per problem."""
    lines = []
    for err in exc.errors():
        where = _describe_loc(tuple(err["loc"]), data)
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        if "input" in err and err["type"] != "missing":
            got = err["input"]
            if not isinstance(got, (dict, list)):
                msg += f" (got {got!r})"
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def load_price_table(path: Path | None = None) -> PriceTable:
    """Load and validate a price table.

    Args:
        path: YAML file to read; ``None`` reads the packaged ``suite/data/prices.yaml``.

    Returns:
        The validated table. Prices are USD per hour.

    Raises:
        PriceTableError: the file cannot be read, is not YAML, is not a mapping, has an unsupported
            ``table_version`` or an invalid entry. The message names the file and the problem.
    """
    path = DEFAULT_PRICE_TABLE_PATH if path is None else Path(path)
    from suite.validation.files import FileProblem, read_config_text

    try:
        text = read_config_text(path)
    except FileProblem as exc:
        raise PriceTableError(f"cannot read price table {path}: {exc.message}; {exc.fix}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PriceTableError(f"price table {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise PriceTableError(
            f"price table {path} must be a YAML mapping with keys table_version, currency and entries; "
            f"got {type(data).__name__}"
        )
    # Check the version first: a table of another version may differ in every other field, and its
    # per-field errors would only hide the real problem.
    if "table_version" not in data:
        raise PriceTableError(f"price table {path}: table_version is missing (supported: {SUPPORTED_TABLE_VERSIONS})")
    try:
        _check_table_version(data["table_version"])
    except ValueError as exc:
        raise PriceTableError(f"price table {path}: {exc}") from exc
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        raise PriceTableError(
            f"price table {path} is invalid ({exc.error_count()} problem(s)):\n{_format_validation_error(exc, data)}"
        ) from exc


def _known_prices(table: PriceTable) -> str:
    """Describe the table as ``c7i.2xlarge (on-demand, spot), g5.2xlarge (on-demand), ...``."""
    by_type: dict[str, list[str]] = {}
    for entry in table.entries:
        pricings = by_type.setdefault(entry.instance_type, [])
        if entry.pricing not in pricings:
            pricings.append(entry.pricing)
    return ", ".join(f"{name} ({', '.join(sorted(p))})" for name, p in sorted(by_type.items()))


def lookup(table: PriceTable, instance_type: str, pricing: str = "on-demand", region: str | None = None) -> PriceEntry:
    """Find the price of ``instance_type`` under ``pricing`` (and ``region``, if given).

    With ``region=None`` entries of any region match; with a region only entries for exactly that
    region match (an entry whose source states no region does not match a named region).

    Raises:
        PriceTableError: nothing matches (the message lists the known instance types and pricings),
            or more than one entry matches (the message asks for ``--region``).
    """
    name = instance_type.strip()
    matches = [
        e
        for e in table.entries
        if e.instance_type == name and e.pricing == pricing and (region is None or e.region == region)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        where = f" in region {region}" if region is not None else ""
        msg = f"no {pricing} price for instance type {name!r}{where} in the price table."
        same = [e for e in table.entries if e.instance_type == name and e.pricing == pricing]
        if region is not None and same:
            regions = ", ".join(sorted(e.region if e.region is not None else "not stated" for e in same))
            msg += f" Regions known for it: {regions}"
            if any(e.region is None for e in same):
                msg += " (omit --region to use the entry whose region is not stated)"
            msg += "."
        msg += (
            f" Known instance types (pricings): {_known_prices(table)}. Known pricings: {', '.join(PRICINGS)}."
            " Or give the price yourself with --price-per-hour."
        )
        raise PriceTableError(msg)
    regions = ", ".join(sorted(e.region if e.region is not None else "not stated" for e in matches))
    raise PriceTableError(
        f"{len(matches)} {pricing} prices match instance type {name!r} (regions: {regions}); "
        "pass --region to choose one."
    )


def samples_per_dollar(throughput_samples_per_s: float, usd_per_hour: float) -> float:
    """Samples processed per US dollar: ``throughput * 3600 / usd_per_hour``.

    Source: C. Rand, "Instance Selection for Deep Learning", Jun 2023.

    Args:
        throughput_samples_per_s: training throughput in samples/s; finite and >= 0.
        usd_per_hour: instance price in USD/hour; finite and > 0.

    Raises:
        ValueError: the price is not positive and finite, or the throughput is negative or not finite.
    """
    if not math.isfinite(usd_per_hour) or usd_per_hour <= 0:
        raise ValueError(f"price must be a positive, finite number of USD per hour, got {usd_per_hour!r}")
    if not math.isfinite(throughput_samples_per_s) or throughput_samples_per_s < 0:
        raise ValueError(
            f"throughput must be a finite, non-negative number of samples/s, got {throughput_samples_per_s!r}"
        )
    return throughput_samples_per_s * SECONDS_PER_HOUR / usd_per_hour


@dataclasses.dataclass(frozen=True)
class Cost:
    """The cost of a run.

    Attributes:
        usd_per_hour: price used, USD/hour.
        samples_per_dollar: samples processed per USD at that price.
        instance_type: instance type priced, or ``None`` for a user-given price.
        pricing: ``"on-demand"`` or ``"spot"``, or ``None`` for a user-given price.
        region: region of the price, or ``None`` where not stated or user-given.
        price_source: citation of the price, or ``"user (--price-per-hour)"``.
        price_date: month of the price's source (``YYYY-MM``), or ``None`` for a user-given price.
    """

    usd_per_hour: float
    samples_per_dollar: float
    instance_type: str | None
    pricing: str | None
    region: str | None
    price_source: str
    price_date: str | None

    def to_dict(self) -> dict[str, float | str | None]:
        """Return the fields as a JSON-ready dict."""
        return dataclasses.asdict(self)


def compute_cost(
    throughput: float,
    *,
    price_per_hour: float | None = None,
    instance_type: str | None = None,
    pricing: str = "on-demand",
    region: str | None = None,
    table: PriceTable | None = None,
) -> Cost | None:
    """Price a run whose throughput is ``throughput`` samples/s.

    Give either ``price_per_hour`` (USD/hour, from the user) or ``instance_type`` (looked up in
    ``table`` with ``pricing`` and ``region``; ``table=None`` loads the packaged table).
    ``pricing`` and ``region`` are used only for the table lookup.

    Returns:
        The cost, or ``None`` when neither a price nor an instance type is given.

    Raises:
        PriceTableError: both ``price_per_hour`` and ``instance_type`` are given, or the lookup fails.
        ValueError: the price is not positive or the throughput is negative or not finite.
    """
    if price_per_hour is not None and instance_type is not None:
        raise PriceTableError(
            f"got both a price per hour ({price_per_hour}) and an instance type ({instance_type!r}); "
            "pass only one: --price-per-hour to use your own price, or --instance-type to look it up "
            "in the price table."
        )
    if price_per_hour is not None:
        return Cost(
            usd_per_hour=price_per_hour,
            samples_per_dollar=samples_per_dollar(throughput, price_per_hour),
            instance_type=None,
            pricing=None,
            region=None,
            price_source=USER_PRICE_SOURCE,
            price_date=None,
        )
    if instance_type is None:
        return None
    entry = lookup(load_price_table() if table is None else table, instance_type, pricing, region)
    return Cost(
        usd_per_hour=entry.usd_per_hour,
        samples_per_dollar=samples_per_dollar(throughput, entry.usd_per_hour),
        instance_type=entry.instance_type,
        pricing=entry.pricing,
        region=entry.region,
        price_source=entry.source,
        price_date=entry.date,
    )
