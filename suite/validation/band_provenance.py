"""Measured bands follow from their runs: the runs a band cites are in the tree, valid, and give
its value, bounds and statistics by the documented method (:mod:`suite.validation.derive`).

Checked for every measured band some group of runs in the tree was scored against: a band
that decides a verdict must be reproducible from the runs it cites. A band whose cited runs
are missing (resealing every run of a group changes their digests) is an error, never
skipped, and so is a hand-edited value, bound, floor or statistic.
"""

from __future__ import annotations

import math

from suite.validation.bands import MeasuredRuns, ReferenceBand, run_stats
from suite.validation.derive import band_bounds, metric_value
from suite.validation.outcomes import RunEntry, TreeRuns

BOUND_TOL = 1.5e-6
"""Tolerance of a recomputed bound (bounds are written rounded to 6 decimals)."""
REL_TOL = 1e-9
"""Relative tolerance of a recomputed value or statistic."""


def _mismatches(band: ReferenceBand, src: MeasuredRuns, values: list[float]) -> list[str]:
    value, lower, upper = band_bounds(values, src.margin)
    stats = run_stats(values)
    out = []
    if not math.isclose(band.value, value, rel_tol=REL_TOL):
        out.append(f"value {band.value} (the median of its runs is {value})")
    for name, stored, again in (("lower", band.lower, lower), ("upper", band.upper, upper)):
        if stored is None or abs(stored - again) > BOUND_TOL:
            out.append(f"{name} {stored} (its runs and margin {src.margin} give {again})")
    if band.floor is not None:
        out.append(f"floor {band.floor} (a measured band has none)")
    for name in ("median", "min", "max", "cv"):
        stored_stat, again_stat = getattr(src.stats, name), getattr(stats, name)
        if not math.isclose(stored_stat, again_stat, rel_tol=1e-6, abs_tol=1e-12):
            out.append(f"stats.{name} {stored_stat} (its runs give {again_stat})")
    if any(not math.isclose(a, b, rel_tol=REL_TOL) for a, b in zip(src.stats.values, values, strict=True)):
        out.append("stats.values differ from its runs' values")
    return out


def _cited_files(walk: TreeRuns) -> dict[str, RunEntry]:
    """The file each stored digest stands for: a valid one where any holds it.

    A stored digest is only a claim. An edited copy of a cited run that keeps the old
    digest (digest-mismatch), or a byte copy of it (duplicate-run), claims the digest of a
    run the band cites; the file that really is that run is the valid one. The band is
    faulted only when no valid file holds a digest it cites: the forgery is reported
    where it was made, in its own file.
    """
    out: dict[str, RunEntry] = {}
    for e in walk.entries:
        held = out.get(e.result.digest)
        if held is None or (e.valid and not held.valid):
            out[e.result.digest] = e
    return out


def check_provenance(walk: TreeRuns) -> None:
    """Every measured band in ``walk.used_bands`` against the runs it cites (findings on ``bands.yaml#name``)."""
    by_digest = _cited_files(walk)
    checked: set[str] = set()
    for band in walk.used_bands:
        src = band.source
        if band.name in checked or not isinstance(src, MeasuredRuns):
            continue
        checked.add(band.name)
        where = f"bands.yaml#{band.name}"
        missing = [d for d in src.runs if d not in by_digest]
        if missing:
            walk.findings.error(
                "band-provenance",
                where,
                f"{len(missing)} of the {len(src.runs)} runs the band was derived from are not in this tree "
                f"(e.g. {missing[0][:19]}...): the band does not follow from runs anyone can check",
                "commit every run a measured band cites, or re-derive it: trainbench bands derive RESULTS... --write",
            )
            continue
        entries = [by_digest[d] for d in src.runs]
        invalid = [e.where for e in entries if not e.valid]
        if invalid:
            walk.findings.error(
                "band-provenance",
                where,
                f"the band cites runs with errors ({', '.join(invalid[:3])})",
                "re-derive the band from valid runs",
            )
            continue
        values = [metric_value(e.result, band.metric) for e in entries]
        if any(v is None or v <= 0 for v in values):
            walk.findings.error(
                "band-provenance", where, f"a run the band cites has no {band.metric}", "re-derive the band"
            )
            continue
        wrong = _mismatches(band, src, [v for v in values if v is not None])
        if wrong:
            walk.findings.error(
                "band-provenance",
                where,
                "the band does not follow from its runs: " + "; ".join(wrong),
                "never edit a measured band by hand; re-derive it: trainbench bands derive ... --replace --write",
            )
