"""Samples per dollar: the one place that turns a throughput and a price into the cost metric.

Units used throughout this module:

* prices are US dollars per instance-hour (``usd_per_hour``, USD/hour);
* throughput is training samples per second (``samples/s``);
* samples per dollar is samples processed per US dollar spent
  (``samples/s * 3600 s/hour / (USD/hour)``).

The metric comes from C. Rand, "Instance Selection for Deep Learning" (Jun 2023): samples per
dollar = samples per second * 3600 / instance price per hour.

Prices come either from the user (``--price-per-hour``) or from the versioned price table
(:mod:`suite.cost.prices`), where every entry carries its source and the month of that source.
"""

from __future__ import annotations

import dataclasses
import math

from suite.cost.prices import (
    DEFAULT_PRICE_TABLE_PATH,
    PRICINGS,
    SUPPORTED_TABLE_VERSIONS,
    PriceEntry,
    PriceTable,
    PriceTableError,
    Pricing,
    load_price_table,
    lookup,
)

__all__ = [
    "DEFAULT_PRICE_TABLE_PATH",
    "PRICINGS",
    "SECONDS_PER_HOUR",
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
    "samples_per_dollar_or_none",
]

#: ``Cost.price_source`` when the price was given on the command line.
USER_PRICE_SOURCE = "user (--price-per-hour)"

SECONDS_PER_HOUR = 3600.0


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


def samples_per_dollar_or_none(throughput_samples_per_s: float | None, usd_per_hour: float | None) -> float | None:
    """:func:`samples_per_dollar`, or None where it is undefined: no throughput, no price, or
    values it refuses (for figures read from untrusted files, which must not raise)."""
    if throughput_samples_per_s is None or usd_per_hour is None:
        return None
    try:
        return samples_per_dollar(throughput_samples_per_s, usd_per_hour)
    except ValueError:
        return None


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
        PriceTableError: both ``price_per_hour`` and ``instance_type`` are given, a given price is not
            positive and finite, or the lookup fails.
        ValueError: the price is not positive or the throughput is negative or not finite.
    """
    if price_per_hour is not None and instance_type is not None:
        raise PriceTableError(
            f"got both a price per hour ({price_per_hour}) and an instance type ({instance_type!r}); "
            "pass only one: --price-per-hour to use your own price, or --instance-type to look it up "
            "in the price table."
        )
    if price_per_hour is not None:
        if not math.isfinite(price_per_hour) or price_per_hour <= 0:
            raise PriceTableError(
                f"--price-per-hour {price_per_hour!r}: give the machine's price as a positive number of USD per hour"
            )
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
