"""A comparison of two sides: the ratio B/A with its interval, what differs, and whether the two may be compared.

Two sides are **incomparable** (labelled, never silently compared) when they measure
different workloads, run on different device classes (CPU vs GPU), or one computes
bf16 natively and the other emulates it. Different systems, world sizes or windows
are comparable (comparing machines and configs is the point) and are listed as notes.

``--fail-above PCT`` (the CI gate) follows asv's ``continuous``: B is a regression
when it is slower than A by more than PCT percent (point estimate, ``(1 - B/A) × 100
> PCT``) AND the slowdown is significant (the interval's upper bound is below 1).
A difference without an interval is undetermined and never a regression; the
output says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suite import labels
from suite.compare.load import Side
from suite.compare.stats import RatioEstimate, ratio_interval, windows
from suite.results import Result


@dataclass(frozen=True)
class KnobDiff:
    """One setting that differs: ``key`` and each side's value (None where a side lacks it)."""

    key: str
    a: str | None
    b: str | None


@dataclass(frozen=True)
class SideSummary:
    """What one side measured, for the table.

    Attributes:
        label: ``A`` or ``B``; spec: what the user passed; name: the config label.
        throughput: samples/s over all its measurement windows (total samples / total seconds).
        ci_low, ci_high: the run's own 95% CI (one result only), else None.
        results, windows: how many result files and measurement windows it holds.
        hardware: CPU model, cores and GPU in words.
        sources: result paths or ``mlflow:<run id>``.
    """

    label: str
    spec: str
    name: str
    throughput: float
    ci_low: float | None
    ci_high: float | None
    results: int
    windows: int
    hardware: str
    sources: list[str]


@dataclass
class Comparison:
    """The outcome of ``trainbench compare A B``.

    Attributes:
        a, b: the two sides.
        estimate: B/A with its interval and method.
        reasons: why the two are incomparable (empty when comparable).
        notes: comparable differences and what loading skipped.
        knobs: settings that differ, one row each.
        fail_above_pct: the gate's threshold, or None.
        regression: True/False under the gate, None without a gate or without an interval.
    """

    a: SideSummary
    b: SideSummary
    estimate: RatioEstimate
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    knobs: list[KnobDiff] = field(default_factory=list)
    fail_above_pct: float | None = None
    regression: bool | None = None

    @property
    def comparable(self) -> bool:
        """True when nothing makes the ratio meaningless."""
        return not self.reasons

    @property
    def slowdown_pct(self) -> float:
        """How much slower B is than A, in percent (negative when B is faster)."""
        return (1.0 - self.estimate.ratio) * 100.0


def _summary(side: Side) -> SideSummary:
    first = side.results[0]
    units = windows(side.results)
    ci = first.summary.throughput_ci95 if first.summary is not None and len(side.results) == 1 else None
    env = first.environment
    hardware = f"{(env.get('cpu') or {}).get('model') or 'unknown CPU'}, {labels.cores_text(env) or '?'} cores"
    return SideSummary(
        label=side.label,
        spec=side.spec,
        name=labels.name(first),
        throughput=sum(u.samples for u in units) / sum(u.seconds for u in units),
        ci_low=ci.low if ci else None,
        ci_high=ci.high if ci else None,
        results=len(side.results),
        windows=len(units),
        hardware=f"{hardware}, GPU {labels.gpu_text(env)}",
        sources=side.sources,
    )


def knob_diff(a: Result, b: Result) -> list[KnobDiff]:
    """Every setting (params, windows, launch), the system, runtime and world size that differ between two results."""

    def flat(r: Result) -> dict[str, str | None]:
        out = {k: labels.value_text(v) for k, v in labels.flat_settings(r.config).items()}
        out.update(
            system=r.system,
            profile=r.profile,
            division=r.division,
            world_size=str(r.world_size),
            runtime=r.runtime.kind,
            image=r.runtime.image,
            precision_used=labels.precision(r),
        )
        return out

    fa, fb = flat(a), flat(b)
    keys = list(dict.fromkeys([*fa, *fb]))
    return [KnobDiff(k, fa.get(k), fb.get(k)) for k in keys if fa.get(k) != fb.get(k)]


def _emulated(result: Result) -> bool | None:
    """True when the recorded hardware (:func:`suite.labels.bf16_emulated`) or the result's own flag says
    bf16 was emulated; None when neither says anything."""
    said = [v for v in (labels.bf16_emulated(result), labels.bf16_emulated_stated(result)) if v is not None]
    return any(said) if said else None


def incomparable(a: Result, b: Result) -> list[str]:
    """Why ``a`` and ``b`` must not be compared as like for like (empty when they may)."""
    reasons = []
    if a.workload != b.workload:
        reasons.append(f"different workloads (A: {a.workload}, B: {b.workload})")
    da, db = labels.device_class(a), labels.device_class(b)
    if da != db:
        reasons.append(f"different device classes (A: {da}, B: {db})")
    # emulated when the recorded hardware says so, or the result itself does (a result whose flag
    # contradicts its hardware is not like for like either; the validator reports the contradiction)
    ea, eb = (_emulated(r) for r in (a, b))
    if ea is not None and eb is not None and ea != eb:
        where = "A" if ea else "B"
        reasons.append(f"bf16 is emulated on {where}'s CPU and native on the other's")
    return reasons


def _notes(a: Result, b: Result) -> list[str]:
    notes = []
    if a.system != b.system:
        notes.append(f"different systems (A: {a.system}, B: {b.system}): the ratio compares machines as well")
    if a.world_size != b.world_size:
        notes.append(f"different world sizes (A: {a.world_size}, B: {b.world_size})")
    if a.provenance.suite_version != b.provenance.suite_version:
        notes.append(
            f"different trainbench versions (A: {a.provenance.suite_version}, B: {b.provenance.suite_version})"
        )
    return notes


def compare(a: Side, b: Side, fail_above_pct: float | None = None, level: float = 0.95) -> Comparison:
    """Compare side B with side A (B/A > 1: B is faster).

    Args:
        a, b: loaded sides (:func:`suite.compare.load.load_side`), each of one config.
        fail_above_pct: the CI gate's threshold in percent (see the module docstring), or None.
        level: confidence level of the interval.

    Raises:
        ValueError: a side holds no measurement window (a result that passed
            ``read_result`` always has one).
    """
    ra, rb = a.results[0], b.results[0]
    out = Comparison(
        a=_summary(a),
        b=_summary(b),
        estimate=ratio_interval(a.results, b.results, level),
        reasons=incomparable(ra, rb),
        notes=[*a.notes, *b.notes, *_notes(ra, rb)],
        knobs=knob_diff(ra, rb),
        fail_above_pct=fail_above_pct,
    )
    if fail_above_pct is not None and out.comparable and out.estimate.significant is not None:
        slower = out.estimate.high is not None and out.estimate.high < 1.0
        out.regression = slower and out.slowdown_pct > fail_above_pct
    return out


def to_dict(c: Comparison) -> dict[str, Any]:
    """JSON-ready form of a comparison (the ``--json`` file)."""
    from dataclasses import asdict

    return {
        "kind": "trainbench.compare",
        "version": 1,
        "a": asdict(c.a),
        "b": asdict(c.b),
        "ratio": c.estimate.to_dict(),
        "slowdown_pct": c.slowdown_pct,
        "comparable": c.comparable,
        "incomparable_reasons": c.reasons,
        "notes": c.notes,
        "knobs": [asdict(k) for k in c.knobs],
        "fail_above_pct": c.fail_above_pct,
        "regression": c.regression,
    }
