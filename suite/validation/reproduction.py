"""Reproducing a claim: is this machine of the claim's hardware class, and does a re-measurement confirm it?

**Hardware class** (:func:`class_differences`): the CPU model, the CPU's own matrix ISA features
(rebuilt from the record, :func:`harness.precision.isa_from_record`), the logical cores, the GPUs
of a GPU run, the versions of the libraries that do the training (for a run on the host; in a
container the image decides them, and it is run again by its id), and the environment variables a
user set that change performance (``ONEDNN_MAX_CPU_ISA``, ``OMP_*``...: those the launcher did not
set itself). Any difference is a different class: ``trainbench reproduce`` refuses it unless
``--anyway``, and then says so in its output and in the new result.

**Verdict** (:func:`judge`), stated in every output:

1. Both throughputs carry their own 95% interval (:func:`harness.stats.summarize`: batch means, or
   a t-interval over 5+ repeats). On the log scale their half-widths ``h_c`` and ``h_m`` combine in
   quadrature, the standard error of the difference of two independent estimates (Altman & Bland,
   "Interaction revisited: the difference between two estimates", BMJ 326:219, 2003), so
   claimed/measured has the interval ``exp(ln(C/M) ± sqrt(h_c² + h_m²))``. A claim without an
   interval is taken at its word (``h_c = 0``); a re-measurement without one decides nothing.
2. Two honest runs of one machine class differ by more than their within-run intervals say:
   seven consecutive runs of one bare loop on one 2-vCPU Zen 5 ranged 17.97-20.72 samples/s, ±7%
   around their mean (shared/ENVIRONMENT.md). The claim is therefore compared against a
   tolerance band ``[1/(1+t), 1+t]`` with ``t`` = :data:`TOLERANCE` (10%), as an equivalence margin
   is (FDA, "Statistical Approaches to Establishing Bioequivalence", 2001, uses 0.80-1.25).
3. **Reproduced** when the ratio's interval meets the band: the re-measurement does not
   contradict the claim. **Not reproduced** when the whole interval lies outside it: at 95%
   confidence the claim is off by more than the tolerance (a claim 1.25x too high, as from
   durations scaled by 0.8, is). A claim whose own interval is wider than the tolerance is
   reproduced only in that weak sense, and the output says so.
4. Other processes only ever slow a run down. So when the interval lies above the band (the claim
   faster) but the re-measurement's windows were disturbed, or below it (the claim slower) but the
   claim's were, the slower run may be slow for that reason alone: the verdict is **undetermined**
   (exit 1, "not reproduced (undetermined)"), with the fix: measure again on a quiet machine. So is
   a re-measurement whose records bound no interval (too few or too noisy steps).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.precision import isa_from_record
from harness.system import PERF_ENV_PATTERN
from suite import labels
from suite.results import Reproduction, Result

TOLERANCE = 0.10
"""Run-to-run variation within one hardware class that a reproduction allows (see the module docstring)."""
WHERE_ENV = frozenset({"TORCHINDUCTOR_CACHE_DIR"})
"""Recorded variables that name where a run kept its files, not how fast it ran (torch sets this one itself)."""
LIBRARIES = ("torch", "torchvision", "tensorflow", "tensorflow-cpu", "keras", "horovod")
"""Libraries whose version is part of the hardware class of a run on the host."""
METHOD = (
    "claimed/measured with a 95% interval exp(ln(C/M) ± sqrt(h_c² + h_m²)), h the log half-widths of each run's "
    "own 95% CI (Altman & Bland, BMJ 2003); reproduced when it meets the tolerance band [1/(1+t), 1+t], "
    "t = {t:.0%} (run-to-run variation within a class, shared/ENVIRONMENT.md)"
)


@dataclass(frozen=True)
class Difference:
    """One way this machine differs from the claim's: ``field``, the claim's value, this machine's."""

    field: str
    claim: str
    here: str

    def text(self) -> str:
        """``field: claim X, here Y``."""
        return f"{self.field}: claim {self.claim}, here {self.here}"


def _features(environment: Mapping[str, Any]) -> str:
    isa = isa_from_record(environment)
    return "unknown" if isa is None else " ".join(sorted(k for k, v in isa.features.items() if v)) or "none"


def _user_env(environment: Mapping[str, Any], launcher_set: Mapping[str, str]) -> dict[str, str]:
    """Performance variables set by whoever started the run, not by trainbench or its launcher."""
    env = environment.get("env")
    if not isinstance(env, Mapping):
        return {}
    return {
        str(k): str(v)
        for k, v in env.items()
        if PERF_ENV_PATTERN.match(str(k))
        and not str(k).startswith("TRAINBENCH_")
        and k not in launcher_set
        and k not in WHERE_ENV
    }


def class_differences(claim: Result, here: Mapping[str, Any], here_env: Mapping[str, str]) -> list[Difference]:
    """How this machine (``here``: :func:`harness.system.capture_system` of it; ``here_env``: the environment
    the re-measurement will run with) differs from the machine of ``claim``; empty for the same class."""
    env = claim.environment
    out: list[Difference] = []

    def compare(name: str, a: Any, b: Any) -> None:
        if str(a) != str(b):
            out.append(Difference(name, str(a), str(b)))

    cpu, cpu_here = env.get("cpu") or {}, here.get("cpu") or {}
    compare("CPU model", str(cpu.get("model") or "unknown").strip(), str(cpu_here.get("model") or "unknown").strip())
    compare("CPU matrix features", _features(env), _features(here))
    compare("logical cores", cpu.get("logical_cores"), cpu_here.get("logical_cores"))
    if labels.device_class(claim) == "gpu":
        compare(
            "GPUs", labels.gpu_text(dict(env)).split(" (driver")[0], labels.gpu_text(dict(here)).split(" (driver")[0]
        )
    if claim.runtime.kind == "local":
        mine, theirs = here.get("libraries") or {}, env.get("libraries") or {}
        for lib in LIBRARIES:
            if lib in theirs or lib in mine:
                compare(f"{lib} version", theirs.get(lib, "not installed"), mine.get(lib, "not installed"))
    claimed_env = _user_env(env, claim.runtime.env_set)
    local_env = _user_env({"env": dict(here_env)}, claim.runtime.env_set)
    for key in sorted(set(claimed_env) | set(local_env)):
        compare(f"${key}", claimed_env.get(key, "unset"), local_env.get(key, "unset"))
    return out


def _disturbed(result: Result) -> bool:
    """Other processes or steal disturbed a measurement window of ``result`` (as its readings show)."""
    return bool(result.utilization_summary is not None and result.utilization_summary.disturbed)


def _half_width(result: Result) -> float | None:
    """The log half-width of ``result``'s own 95% CI, or None when it has none."""
    s = result.summary
    ci = s.throughput_ci95 if s is not None else None
    if ci is None or ci.high is None or ci.low <= 0 or ci.high <= ci.low:
        return None
    return (math.log(ci.high) - math.log(ci.low)) / 2


def judge(
    claim: Result, again: Result, claim_path: str, *, differences: list[Difference], anyway: bool
) -> Reproduction:
    """The verdict on ``claim`` from its re-measurement ``again`` (see the module docstring).

    Raises:
        ValueError: either result has no summary (nothing was claimed, or nothing measured).
    """
    if claim.summary is None or again.summary is None:
        raise ValueError("both the claim and the re-measurement need a summary")
    claimed, measured = claim.summary.throughput, again.summary.throughput
    ratio = claimed / measured
    h_m = _half_width(again)
    h_c = _half_width(claim) or 0.0
    ci = again.summary.throughput_ci95
    band = (1 / (1 + TOLERANCE), 1 + TOLERANCE)
    verdict: Literal["reproduced", "not reproduced", "undetermined"]
    if h_m is None:
        interval, verdict = None, "undetermined"
    else:
        h = math.hypot(h_c, h_m)
        interval = [ratio * math.exp(-h), ratio * math.exp(h)]
        verdict = "reproduced" if interval[0] <= band[1] and interval[1] >= band[0] else "not reproduced"
        slower = again if interval[0] > band[1] else claim  # the run that came out slower
        if verdict == "not reproduced" and _disturbed(slower):
            verdict = "undetermined"
    return Reproduction(
        claim_run_id=claim.run_id,
        claim_digest=claim.digest,
        claim_path=claim_path,
        claimed=claimed,
        measured=measured,
        measured_ci95=[ci.low, ci.high] if ci is not None and ci.high is not None else None,
        ratio=ratio,
        ratio_ci95=interval,
        tolerance=TOLERANCE,
        verdict=verdict,
        method=METHOD.format(t=TOLERANCE),
        differences=[d.text() for d in differences],
        anyway=anyway,
    )


def verdict_line(r: Reproduction, claim_rel: float | None = None) -> str:
    """``reproduced: claimed X, measured Y (95% CI a-b); ...`` or ``not reproduced: ...``."""
    measured_ci = (
        f" (95% CI {r.measured_ci95[0]:.4g}–{r.measured_ci95[1]:.4g})" if r.measured_ci95 else " (no interval)"
    )
    said = "not reproduced (undetermined)" if r.verdict == "undetermined" else r.verdict
    head = f"{said}: claimed {r.claimed:.4g} samples/s, measured {r.measured:.4g} samples/s{measured_ci}"
    if r.ratio_ci95 is None:
        tail = (
            "; the re-measurement has no interval, so it cannot confirm the claim. "
            "Fix: re-run with more repeats (--repeats 3) or measured steps"
        )
    else:
        lo, hi = r.ratio_ci95
        where = "meets" if r.verdict == "reproduced" else ("lies above" if lo > 1 + r.tolerance else "lies below")
        tail = (
            f"; claimed/measured {r.ratio:.3f} (95% CI {lo:.3f}–{hi:.3f}) {where} the tolerance band "
            f"{1 / (1 + r.tolerance):.3f}–{1 + r.tolerance:.3f}"
        )
        if r.verdict == "undetermined":
            run = "the re-measurement" if lo > 1 + r.tolerance else "the claim"
            tail += (
                f", but {run} was disturbed by other processes, which only slow a run down. "
                "Fix: measure again on a quiet machine"
            )
        if claim_rel is not None and claim_rel > r.tolerance and r.verdict == "reproduced":
            tail += (
                f" (the claim's own interval, ±{claim_rel:.0%}, is wider than the tolerance: "
                "it is only not contradicted)"
            )
    anyway = f" [ran anyway on a different hardware class: {'; '.join(r.differences)}]" if r.anyway else ""
    return head + tail + anyway
