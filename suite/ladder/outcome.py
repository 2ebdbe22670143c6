"""A climbed ladder: each rung's outcome, the comparisons between rungs, and which rung is best.

- every complete rung is compared with fp32 and with the rung below it that completed
  (:func:`suite.compare.stats.ratio_interval`: the delta method on the log scale with each
  run's own batch means; significant when the 95% interval excludes 1);
- every complete rung's loss trajectory is checked against the fp32 rung's
  (:mod:`suite.ladder.numerics`); a rung outside the tolerance is invalid;
- the best rung is the simplest valid one (lowest on the ladder) that is not significantly
  slower than the fastest valid one: a step up that does not measurably pay is not kept, and a
  rung that does not train the same model is never kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from suite.compare.stats import RatioEstimate, ratio_interval
from suite.ladder.numerics import NumericsCheck, check
from suite.ladder.rungs import RungPlan
from suite.results import Result


@dataclass
class RungOutcome:
    """One rung: its plan, and, when it ran, its result or error and its comparisons.

    Attributes:
        vs_fp32: throughput / fp32's, with its interval (None when either is missing).
        vs_below: throughput / the throughput of the rung below that completed.
        numerics: its loss trajectory against fp32's (None until checked, or when it gave no result).
        over_limit: a size of the batch-size search that did not fit in memory (not a failure).
    """

    plan: RungPlan
    result: Result | None = None
    result_path: Path | None = None
    error: str | None = None
    vs_fp32: RatioEstimate | None = None
    vs_below: RatioEstimate | None = None
    numerics: NumericsCheck | None = None
    over_limit: bool = False

    @property
    def complete(self) -> bool:
        """The rung ran and gave a throughput."""
        return self.result is not None and self.result.summary is not None


@dataclass
class LadderOutcome:
    """What the ladder produced (paths are None until written)."""

    workload: str
    profile: str | None
    overrides: list[str]
    rungs: list[RungOutcome] = field(default_factory=list)
    best: int | None = None
    directory: Path | None = None
    json_path: Path | None = None
    plot_path: Path | None = None
    config_path: Path | None = None
    parent_run_id: str | None = None
    tracking_error: str | None = None
    interrupted: bool = False
    title: str = "optimization ladder"

    @property
    def failed(self) -> list[RungOutcome]:
        """Rungs that ran but gave no throughput (a batch size that did not fit is not a failure)."""
        return [r for r in self.rungs if r.plan.skip is None and not r.complete and not r.over_limit]


def compare_rungs(rungs: list[RungOutcome]) -> None:
    """Fill ``vs_fp32`` and ``vs_below`` of every complete rung (ratios of throughputs, B/A)."""
    done = [r for r in rungs if r.complete]
    base = next((r for r in done if r.plan.name == "fp32"), None)
    for below, rung in zip([None, *done[:-1]], done, strict=True):
        assert rung.result is not None
        if base is not None and base.result is not None and rung is not base:
            rung.vs_fp32 = ratio_interval([base.result], [rung.result])
        if below is not None and below.result is not None:
            rung.vs_below = ratio_interval([below.result], [rung.result])


def check_numerics(rungs: list[RungOutcome]) -> None:
    """Fill ``numerics`` of every complete rung: its loss trajectory against the fp32 rung's."""
    base = next((r for r in rungs if r.plan.name == "fp32" and r.complete), None)
    reference = base.result if base is not None else None
    for r in rungs:
        if r.complete:
            r.numerics = check(reference, r.result, r is base)


def best_rung(rungs: list[RungOutcome]) -> int | None:
    """Index of the simplest valid rung not significantly slower than the fastest valid one (None: no valid rung).

    A rung is valid when its loss trajectory was checked and is within the tolerance
    (:func:`check_numerics`). Without an interval between a rung and the fastest, only the
    fastest itself is taken.
    """
    done = [i for i, r in enumerate(rungs) if r.complete and r.numerics is not None and r.numerics.valid]
    if not done:
        return None

    def tput(i: int) -> float:
        result = rungs[i].result
        summary = result.summary if result is not None else None
        return summary.throughput if summary is not None else 0.0

    fastest = max(done, key=tput)
    for i in done:
        if i == fastest:
            return i
        a, b = rungs[i].result, rungs[fastest].result
        assert a is not None and b is not None
        if ratio_interval([a], [b]).significant is False:  # the fastest is not measurably faster
            return i
    return fastest
