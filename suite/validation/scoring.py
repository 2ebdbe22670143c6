"""Scoring the runs of a tree: duplicates, groups of runs by configuration, each group's score
against its reference band, and measured bands against the runs they cite.

Runs of one workload on one system are scored per configuration: a group of runs with
the same division and resolved config needs the rules' number of valid runs, and its
score (median or olympic mean of samples/s) is checked against the reference band.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Sequence
from typing import Any

from suite import labels
from suite.cost import samples_per_dollar_or_none
from suite.results import Result
from suite.rules import flatten_config
from suite.validation.band_provenance import check_provenance
from suite.validation.bands import BandsFile, ReferenceBand, score
from suite.validation.duplicates import find_twins
from suite.validation.findings import Findings, Severity
from suite.validation.outcomes import GroupOutcome, RunEntry, TreeRuns


def score_runs(found: TreeRuns) -> list[GroupOutcome]:
    """Flag duplicate runs, score every group of runs, check measured bands against their runs.

    Adds its findings to ``found.findings`` and returns the groups (their ``errors`` not yet
    counted: :func:`attribute`, after ``--strict`` promotes warnings).
    """
    _duplicates(found)
    groups = _groups(found)
    check_provenance(found)
    return groups


def _config_id(result: Result) -> str:
    body = json.dumps(flatten_config(result.config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def _duplicates(walk: TreeRuns) -> None:
    """Runs that duplicate an earlier valid run (by identity or by measurement) lose their validity."""
    valid = [e for e in walk.entries if e.valid]
    for twin in find_twins([e.result for e in valid]):
        entry, original = valid[twin.index], valid[twin.original]
        walk.findings.error(
            twin.code,
            entry.where,
            f"the same run as {original.where} ({twin.reason}): one measurement counts once",
            "submit each measured run once",
        )
        entry.valid = False


def _band_check(walk: TreeRuns, g: GroupOutcome, names: list[str], flat: dict[str, Any], ran: str | None) -> None:
    if g.score is None:
        return
    band = find_band(walk.bands, g.workload, g.division, names, "throughput", flat, ran)
    g.band = band
    if band is not None:
        walk.used_bands.append(band)
    if band is None:
        add = walk.findings.error if g.division == "closed" else walk.findings.warning
        add(
            "no-band",
            g.where,
            f"no reference band for {g.workload} ({g.division}) on {' / '.join(names)} with "
            "this config; the score was not checked against one",
            "derive one from at least 5 runs: trainbench bands derive RESULTS... --system ... "
            f"--division {g.division} --write",
        )
        return
    g.verdict = band.verdict(g.score)
    text = f"score {g.score:.4g} samples/s vs band {band.name!r}: {band.describe()}"
    if g.verdict == "below":
        walk.findings.error(
            "below-band",
            g.where,
            f"{text}: below the band",
            "find what slowed the runs (see each result's diagnosis and steady state) and re-run",
        )
    elif g.verdict == "above" and g.division == "closed":
        walk.findings.error(
            "above-band",
            g.where,
            f"{text}: faster than the band: check the measurement",
            "check the runs really used the official config and timing; if the system is faster, "
            "derive a new band from at least 5 runs with its provenance",
        )
    elif g.verdict == "above":
        walk.findings.warning(
            "above-band",
            g.where,
            f"{text}: faster than the band",
            "check the measurement; open-division changes may explain it",
        )
    else:
        walk.findings.info("in-band", g.where, f"{text}: inside")
    if g.samples_per_dollar is not None:
        spd_band = find_band(walk.bands, g.workload, g.division, names, "samples_per_dollar", flat, ran)
        if spd_band is not None:
            walk.used_bands.append(spd_band)
        if spd_band is not None and spd_band.verdict(g.samples_per_dollar) == "below":
            walk.findings.error(
                "below-band",
                g.where,
                f"samples per dollar {g.samples_per_dollar:.4g} is below band {spd_band.name!r}: {spd_band.describe()}",
                "check the price and the runs",
            )


def _groups(walk: TreeRuns) -> list[GroupOutcome]:
    rules = walk.ctx.rules
    by_key: dict[tuple[str, str, str, str, str], list[RunEntry]] = {}
    for e in walk.entries:
        if e.result.status == "complete":
            emulated = "bf16-emulated" if labels.bf16_emulated(e.result) else ""
            key: tuple[str, str, str, str, str] = (
                e.submitter,
                e.system,
                e.workload,
                e.result.division,
                _config_id(e.result) + _auto_ran(e.result) + emulated,
            )
            by_key.setdefault(key, []).append(e)
    dirs: dict[tuple[str, str, str], int] = {}
    for k in by_key:
        dirs[k[:3]] = dirs.get(k[:3], 0) + 1
    out = []
    for (submitter, system, workload, division, config_id), members in sorted(by_key.items()):
        first = members[0].result
        base = members[0].where.rsplit("/", 1)[0]
        where = f"{base} [{division}, profile {first.profile}, config {config_id}]"
        if dirs[(submitter, system, workload)] > 1:
            walk.findings.info(
                "mixed-config",
                where,
                f"{len(members)} of the runs in {base} share this division "
                "and config; each configuration is scored on its own",
            )
        valid = [m for m in members if m.valid]
        values = [m.result.summary.throughput for m in valid if m.result.summary is not None]
        required = rules.min_runs_for(workload)
        method = rules.score_for(workload)
        if len(values) < required:
            bad = len(members) - len(valid)
            walk.findings.error(
                "too-few-runs",
                where,
                f"{len(values)} valid run(s) of the {required} a score needs"
                + (f" ({bad} run(s) with errors, listed above)" if bad else ""),
                f"submit at least {required} complete, valid runs of this configuration",
            )
        desc = walk.systems.get((submitter, system))
        price = desc.price.usd_per_hour if desc is not None else None
        value: float | None = None
        if values and not (method == "olympic_mean" and len(values) < 3):
            value = score(values, method)
            walk.findings.info(
                "score",
                where,
                f"score {value:.4g} samples/s ({method.replace('_', ' ')} of "
                f"{len(values)} runs: {', '.join(f'{v:.4g}' for v in values)})",
            )
        g = GroupOutcome(
            submitter,
            system,
            workload,
            division,
            first.profile,
            config_id,
            where,
            runs=[m.where for m in members],
            valid_runs=len(values),
            required_runs=required,
            throughputs=values,
            score=value,
            score_method=method,
            usd_per_hour=price,
            samples_per_dollar=samples_per_dollar_or_none(value, price),
            band=None,
            verdict=None,
        )
        g.config_summary = config_summary(first)
        g.samples_per_joule = _samples_per_joule([m.result for m in valid])
        g.computed = computed_params(first)
        names = desc.band_names() if desc is not None else [system]
        _band_check(walk, g, names, flatten_config(first.config), labels.precision(first))
        out.append(g)
    return out


def _samples_per_joule(results: list[Result]) -> float | None:
    """The median samples per joule of ``results`` (GPU energy, NVML), or None unless every one has it."""
    gpus = [r.utilization_summary.gpu if r.utilization_summary is not None else None for r in results]
    values = [g.samples_per_joule if g is not None else None for g in gpus]
    known = [v for v in values if v is not None]
    return float(statistics.median(known)) if known and len(known) == len(values) else None


COMPUTED_PARAMS = ("batch_size", "precision", "channels_last", "image_size", "data")
"""Settings that change what a ResNet-style step computes (not how fast it is executed); an
open-division figure is comparable only with one that has the same values."""


def _auto_ran(result: Result) -> str:
    """``+<precision>`` for a run configured ``precision=auto`` (what it ran: runs of one config
    that ran different precisions are scored apart), else ""."""
    if result.config.params.get("precision") != "auto":
        return ""
    return f"+{labels.precision(result) or 'unknown'}"


def computed_params(result: Result) -> dict[str, Any]:
    """The run's :data:`COMPUTED_PARAMS`, with the precision it ran in (``auto`` resolved:
    :func:`suite.labels.precision`; left out when unknown)."""
    out = {k: result.config.params[k] for k in COMPUTED_PARAMS if k in result.config.params}
    if out.get("precision") == "auto":
        ran = labels.precision(result)
        out.pop("precision")
        if ran is not None:
            out["precision"] = ran
    return out


def config_summary(result: Result) -> str:
    """A short description of a run's config: profile, batch size, precision, memory format, overrides."""
    p = result.config.params
    parts = [f"{result.profile} profile"]
    if "batch_size" in p:
        parts.append(f"batch {p['batch_size']}")
    if "precision" in p:
        prec = str(p["precision"])
        if prec == "auto":
            prec = f"{labels.precision(result) or 'unknown'} (auto)"
        parts.append(prec + (" + channels_last" if p.get("channels_last") else ""))
    if labels.bf16_emulated(result):
        parts.append("bf16 emulated (not comparable with native bf16)")
    if result.config.overrides:
        parts.append("--set " + " ".join(result.config.overrides))
    return ", ".join(parts)


def attribute(groups: list[GroupOutcome], findings: Findings, system_files: dict[tuple[str, str], str]) -> None:
    for g in groups:
        prefixes = (g.where, *g.runs, system_files.get((g.submitter, g.system), ""))
        g.errors = sum(1 for f in findings if f.severity is Severity.ERROR and f.where.split("#")[0] in prefixes)


def find_band(
    bands: BandsFile,
    workload: str,
    division: str,
    systems: Sequence[str],
    metric: str,
    flat_config: dict[str, Any],
    ran_precision: str | None = None,
) -> ReferenceBand | None:
    """The band for a set of runs, or None.

    Args:
        systems: the names the runs' system goes by, most specific first (system name,
            system class, instance type); a band for an earlier name wins.
        flat_config: the runs' config from :func:`suite.rules.flatten_config`.
        ran_precision: the precision the runs computed in (:func:`suite.labels.precision`);
            a band applies when its conditions match the config as written or as it ran
            (so a cited bf16 figure applies to runs whose ``precision=auto`` chose bf16, and
            a band derived from ``auto`` runs to ``auto`` runs).

    Among the bands that apply, the one for the most specific system name wins, then
    the one with the most conditions.
    """
    as_ran = {**flat_config, "params.precision": ran_precision} if ran_precision else flat_config
    best: tuple[int, int, ReferenceBand] | None = None
    for band in bands.bands:
        if band.workload != workload or band.division != division or band.metric != metric:
            continue
        if band.system not in systems or not (band.applies_to(flat_config) or band.applies_to(as_ran)):
            continue
        rank = (systems.index(band.system), -len(band.conditions))
        if best is None or rank < best[:2]:
            best = (*rank, band)
    return best[2] if best else None
