"""``trainbench report``: rank systems per workload by samples/s and by samples per dollar.

The rows, the recommendations and their JSON and MLflow forms; :mod:`.ranking_render`
draws them as tables, Markdown and a chart.

The seed study's instance-selection question (C. Rand, "Instance Selection for Deep
Learning", Jun 2023): which machine gives the most throughput, and which the most
samples per dollar (samples/s x 3600 / USD per hour)? Rows come from the validated
submissions (their score: median or olympic mean over the runs) and, unless left out,
from the published reference bands (each a cited figure, priced from the price
table when the band's system is an instance type listed there).

Only like-for-like figures share a ranking (:attr:`RankRow.comparable`): the same
workload, device class (CPU or GPU), precision (bf16 that ran emulated apart from
native bf16) and, in the open division, the same computed config
(:mod:`suite.validation.ranking_facts`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from suite.cost import samples_per_dollar_or_none
from suite.cost.prices import PriceTableError, load_price_table, lookup
from suite.specs import SPECS_DIR
from suite.validation.bands import BandsFile, Citation
from suite.validation.outcomes import CheckedTree
from suite.validation.ranking_facts import (
    Facts,
    class_slug,
    metric_keys,
    published_facts,
    runs_interval,
    submission_facts,
)


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
        samples_per_joule: a submission's median samples per joule (GPU energy, NVML), or None.
        band_status: ``inside``/``below``/``above`` the band, ``no band``, or ``published``.
        compliant: a submission without error findings (published rows count as compliant).
        runs: runs behind the figure.
        source: the band or submission directory the figure comes from.
        comparable: the class of configs this figure may be compared with (:func:`comparable_class`):
            the same device class and precision it ran in (bf16 emulated apart from native); every
            closed-division figure of a workload is the official config, whose ``precision: auto``
            the hardware decides, so closed figures are ranked per precision; an open-division one is
            compared only with figures that compute the same thing (batch size, precision, memory
            format, image size, data), so a batch-16 run is never ranked against a batch-128 one.
        device: ``cpu`` or ``gpu``.
        precision: the precision the figure ran in (``fp32``, ``bf16``, ...; ``precision=auto``
            resolved, never ``auto``; "" unknown).
        emulated: bf16 ran emulated (a CPU without native bf16).
        ci95_low, ci95_high: 95% CI of the throughput, samples/s; None for a published figure
            (a single cited value with no spread) or where no interval exists.
        ci_method: how the CI was computed, or why there is none.
        slug: the class in a few key-safe words (``cpu open bs128 fp32 224px synthetic``).
        ref: the band name or config id (tells two figures of one system and class apart).
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
    device: str = "cpu"
    precision: str = ""
    emulated: bool = False
    ci95_low: float | None = None
    ci95_high: float | None = None
    ci_method: str = ""
    slug: str = ""
    ref: str = ""
    samples_per_joule: float | None = None


@dataclass(frozen=True)
class Recommendation:
    """The answer for one workload and one class of comparable configs (see :attr:`RankRow.comparable`):
    the best compliant row by throughput and by samples per dollar."""

    workload: str
    for_throughput: RankRow
    for_cost: RankRow | None
    comparable: str = ""


def comparable_class(division: str, computed: dict[str, Any], device: str = "cpu", emulated: bool = False) -> str:
    """The :attr:`RankRow.comparable` key of a figure, e.g. ``CPU, closed division (the official config,
    bf16)`` or ``GPU, open: batch 128, fp32, 224 px, synthetic data``.

    The official config leaves the precision to the hardware (``precision: auto``: bf16 where
    the CPU computes it natively, fp32 elsewhere), so closed figures are ranked per precision
    they ran in, as open ones are.

    Args:
        division: ``closed`` or ``open``.
        computed: the settings in :data:`suite.validation.scoring.COMPUTED_PARAMS` that are known,
            with the precision the figure ran in (a published band lists them as ``params.<name>``
            conditions); missing ones print as ``?``.
        device: ``cpu`` or ``gpu``.
        emulated: the figure's bf16 ran emulated; it is then ranked apart from native bf16.
    """
    dev = device.upper()
    if division == "closed":
        prec = str(computed.get("precision") or "precision unknown")
        return f"{dev}, closed division (the official config, {prec}{' emulated' if emulated else ''})"
    parts = [
        f"batch {computed.get('batch_size', '?')}",
        str(computed.get("precision", "?"))
        + (" emulated" if emulated else "")
        + (" + channels_last" if computed.get("channels_last") else ""),
        f"{computed.get('image_size', '?')} px",
        f"{computed.get('data', '?')} data",
    ]
    return f"{dev}, open: " + ", ".join(parts)


def _facts_fields(facts: Facts, division: str, computed: dict[str, Any]) -> dict[str, Any]:
    if facts.precision:  # what the figure ran in (precision=auto resolved), never the word auto
        computed = {**computed, "precision": facts.precision}
    return {
        "comparable": comparable_class(division, computed, facts.device, facts.emulated),
        "device": facts.device,
        "precision": facts.precision,
        "emulated": facts.emulated,
        "slug": class_slug(facts, division, computed),
    }


def _short(setup: str, limit: int = 70) -> str:
    """The distinguishing part of a published setup: its last ';' clause, at most ``limit`` characters."""
    text = setup.rsplit(";", 1)[-1].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _price_of(instance_type: str) -> float | None:
    try:
        return lookup(load_price_table(), instance_type, "on-demand").usd_per_hour
    except PriceTableError:
        return None


def build_rows(
    report: CheckedTree, bands: BandsFile, include_published: bool = True, specs_dir: Path = SPECS_DIR
) -> list[RankRow]:
    """Rows from the validated groups (those with a score) and the cited throughput bands.

    A group's device class, precision and emulation are read from its first readable
    result file; its CI is over its valid runs (:func:`.ranking_facts.runs_interval`).
    """
    rows: list[RankRow] = []
    for g in report.groups:
        if g.score is None:
            continue
        facts, first = submission_facts(report.root, g)
        ci = runs_interval(g.throughputs, first)
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
                ci95_low=ci.low if ci else None,
                ci95_high=ci.high if ci else None,
                ci_method=ci.method if ci else "none: the runs vary too much for their number",
                ref=f"config {g.config_id}",
                samples_per_joule=g.samples_per_joule,
                **_facts_fields(facts, g.division, g.computed),
            )
        )
    if include_published:
        for b in bands.bands:
            if not isinstance(b.source, Citation) or b.metric != "throughput":
                continue
            price = _price_of(b.system)
            computed = {k.removeprefix("params."): v for k, v in b.conditions.items()}
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
                    ci_method="none: a single published figure, no spread reported",
                    ref=b.name.removeprefix(f"{b.workload}-{b.division}-{b.system}-"),
                    **_facts_fields(published_facts(b, specs_dir), b.division, computed),
                )
            )
    return rows


def rankings(rows: list[RankRow]) -> dict[tuple[str, str], list[RankRow]]:
    """The rankings: (workload, comparable class) -> its rows, highest samples/s first; CPU classes
    before GPU ones, then by class name."""
    out: dict[tuple[str, str], list[RankRow]] = {}
    for r in sorted(rows, key=lambda r: (r.workload, r.device, r.comparable, -r.throughput)):
        out.setdefault((r.workload, r.comparable), []).append(r)
    return out


def recommend(rows: list[RankRow]) -> list[Recommendation]:
    """Per workload and class of comparable configs, the compliant row with the highest samples/s and
    the one with the most samples per dollar (figures of different classes are never compared)."""
    out = []
    for (workload, comparable), members in rankings(rows).items():
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
    """The figures as MLflow metrics: ``samples_per_s/<workload>/<class>/<system> <kind>`` and
    ``samples_per_dollar/...``, e.g. ``samples_per_s/resnet50-cpu/cpu open bs128 fp32 224px
    synthetic/c7i.2xlarge published`` (:func:`.ranking_facts.metric_keys`: readable, unique, and
    only characters MLflow accepts)."""
    stems = metric_keys(
        [(r.workload, r.slug, r.system, "submitted" if r.kind == "submission" else "published", r.ref) for r in rows]
    )
    out: dict[str, float] = {}
    for stem, r in zip(stems, rows, strict=True):
        out[f"samples_per_s/{stem}"] = r.throughput
        if r.samples_per_dollar is not None:
            out[f"samples_per_dollar/{stem}"] = r.samples_per_dollar
        if r.samples_per_joule is not None:
            out[f"samples_per_joule/{stem}"] = r.samples_per_joule
    return out
