"""``trainbench report``: rank systems per workload by samples/s and by samples per dollar.

The rows, the recommendations and their JSON and MLflow forms; :mod:`.ranking_render`
draws them as tables, Markdown and a chart.

The seed study's instance-selection question (C. Rand, "Instance Selection for Deep
Learning", Jun 2023): which machine gives the most throughput, and which the most
samples per dollar (samples/s x 3600 / USD per hour)? Rows come from the validated
submissions (their score: median or olympic mean over the runs) and, unless left out,
from the published reference bands (each a cited figure, priced from the price
table when the band's system is an instance type listed there).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from suite.cost import samples_per_dollar_or_none
from suite.prices import PriceTableError, load_price_table, lookup
from suite.validation.bands import BandsFile, Citation
from suite.validation.outcomes import ValidationReport


@dataclass(frozen=True)
class RankRow:
    """One candidate system for one workload.

    Attributes:
        workload: the workload spec name.
        system: the system name (or instance type for a published figure).
        kind: ``submission`` (measured, validated) or ``published`` (a cited band value).
        config: division and profile, or the published setup.
        throughput: samples/s (a submission's score, or the published value).
        usd_per_hour: price in USD per hour, or None when unknown.
        samples_per_dollar: throughput x 3600 / usd_per_hour, or None.
        band_status: ``inside``/``below``/``above`` the band, ``no band``, or ``published``.
        compliant: a submission without error findings (published rows count as compliant).
        runs: runs behind the figure.
        source: the band or submission directory the figure comes from.
        comparable: the class of configs this figure may be compared with: every closed-division
            figure of a workload is the official config; an open-division one is compared only
            with figures that compute the same thing (batch size, precision, memory format, image
            size, data), so a batch-16 run is never ranked against a batch-128 one.
    """

    workload: str
    system: str
    kind: str
    config: str
    throughput: float
    usd_per_hour: float | None
    samples_per_dollar: float | None
    band_status: str
    compliant: bool
    runs: int
    source: str
    comparable: str = ""


@dataclass(frozen=True)
class Recommendation:
    """The answer for one workload and one class of comparable configs (see :attr:`RankRow.comparable`):
    the best compliant row by throughput and by samples per dollar."""

    workload: str
    for_throughput: RankRow
    for_cost: RankRow | None
    comparable: str = ""


CLOSED_CLASS = "closed division (the official config)"


def comparable_class(division: str, computed: dict[str, Any]) -> str:
    """The :attr:`RankRow.comparable` key of a figure.

    Args:
        division: ``closed`` or ``open``.
        computed: the settings in :data:`suite.validation.scoring.COMPUTED_PARAMS` that are known
            (a published band lists them as ``params.<name>`` conditions); missing ones print as ``?``.
    """
    if division == "closed":
        return CLOSED_CLASS
    parts = [
        f"batch {computed.get('batch_size', '?')}",
        str(computed.get("precision", "?")) + (" + channels_last" if computed.get("channels_last") else ""),
        f"{computed.get('image_size', '?')} px",
        f"{computed.get('data', '?')} data",
    ]
    return "open: " + ", ".join(parts)


def _short(setup: str, limit: int = 70) -> str:
    """The distinguishing part of a published setup: its last ';' clause, at most ``limit`` characters."""
    text = setup.rsplit(";", 1)[-1].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _price_of(instance_type: str) -> float | None:
    try:
        return lookup(load_price_table(), instance_type, "on-demand").usd_per_hour
    except PriceTableError:
        return None


def build_rows(report: ValidationReport, bands: BandsFile, include_published: bool = True) -> list[RankRow]:
    """Rows from the validated groups (those with a score) and the cited throughput bands."""
    rows: list[RankRow] = []
    for g in report.groups:
        if g.score is None:
            continue
        rows.append(
            RankRow(
                workload=g.workload,
                system=g.system,
                kind="submission",
                config=f"{g.division}: {g.config_summary}",
                throughput=g.score,
                usd_per_hour=g.usd_per_hour,
                samples_per_dollar=g.samples_per_dollar,
                band_status=g.verdict or "no band",
                compliant=g.errors == 0,
                runs=g.valid_runs,
                source=g.where,
                comparable=comparable_class(g.division, g.computed),
            )
        )
    if include_published:
        for b in bands.bands:
            if not isinstance(b.source, Citation) or b.metric != "throughput":
                continue
            price = _price_of(b.system)
            rows.append(
                RankRow(
                    workload=b.workload,
                    system=b.system,
                    kind="published",
                    config=f"{b.division}: {_short(b.source.setup)}",
                    throughput=b.value,
                    usd_per_hour=price,
                    samples_per_dollar=samples_per_dollar_or_none(b.value, price),
                    band_status="published",
                    compliant=True,
                    runs=b.runs,
                    source=f"band {b.name}: {b.source.reference}",
                    comparable=comparable_class(
                        b.division, {k.removeprefix("params."): v for k, v in b.conditions.items()}
                    ),
                )
            )
    return rows


def by_workload(rows: list[RankRow]) -> dict[str, list[RankRow]]:
    """Rows grouped by workload, each list sorted by throughput, highest first."""
    out: dict[str, list[RankRow]] = {}
    for r in sorted(rows, key=lambda r: (r.workload, -r.throughput)):
        out.setdefault(r.workload, []).append(r)
    return out


def recommend(rows: list[RankRow]) -> list[Recommendation]:
    """Per workload and class of comparable configs, the compliant row with the highest samples/s and
    the one with the most samples per dollar (figures of different configs are never compared)."""
    out = []
    for workload, group in by_workload(rows).items():
        classes: dict[str, list[RankRow]] = {}
        for r in group:
            classes.setdefault(r.comparable, []).append(r)
        for comparable, members in sorted(classes.items()):
            ok = [r for r in members if r.compliant]
            if not ok:
                continue
            priced = [r for r in ok if r.samples_per_dollar is not None]
            best_cost = max(priced, key=lambda r: r.samples_per_dollar or 0.0) if priced else None
            out.append(Recommendation(workload, max(ok, key=lambda r: r.throughput), best_cost, comparable))
    return out


def _label(r: RankRow) -> str:
    return f"{r.system} ({'published' if r.kind == 'published' else 'submitted'})"


def recommendation_text(rec: Recommendation) -> str:
    """The answer in words."""
    t = rec.for_throughput
    scope = f"{rec.workload}, {rec.comparable}" if rec.comparable else rec.workload
    text = f"{scope}: for throughput choose {_label(t)}, {t.throughput:.4g} samples/s"
    if rec.for_cost is not None:
        c = rec.for_cost
        text += f"; for cost choose {_label(c)}, {c.samples_per_dollar:,.0f} samples per dollar at ${c.usd_per_hour}/h"
    else:
        text += "; no priced system to rank by cost"
    return text + "."


def to_json(rows: list[RankRow]) -> dict[str, Any]:
    """Rows and recommendations as a JSON-ready dict."""
    return {
        "kind": "trainbench.report",
        "rows": [asdict(r) for r in rows],
        "recommendations": [
            {
                "workload": rec.workload,
                "comparable": rec.comparable,
                "throughput": asdict(rec.for_throughput),
                "cost": asdict(rec.for_cost) if rec.for_cost else None,
                "text": recommendation_text(rec),
            }
            for rec in recommend(rows)
        ],
    }


def mlflow_metrics(rows: list[RankRow]) -> dict[str, float]:
    """``samples_per_s/<workload>/<system>[...]`` and ``samples_per_dollar/...`` for MLflow (names sanitized)."""
    out: dict[str, float] = {}
    for r in rows:
        key = re.sub(r"[^A-Za-z0-9_./ -]", "_", f"{r.workload}/{r.system}/{r.kind}/{r.config}")[:200]
        out[f"samples_per_s/{key}"] = r.throughput
        if r.samples_per_dollar is not None:
            out[f"samples_per_dollar/{key}"] = r.samples_per_dollar
    return out
