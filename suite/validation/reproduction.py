"""Reproducing a claim: is this machine of the claim's hardware class, and does a re-measurement confirm it?

**Hardware class** (:func:`class_differences`): the CPU model, the CPU's own matrix ISA features
(rebuilt from the record, :func:`harness.precision.isa_from_record`), the logical cores, the GPUs
of a GPU run, the versions of the libraries that do the training (for a run on the host; in a
container the image decides them, and it is run again by its id), and the environment variables a
user set that change performance (``ONEDNN_MAX_CPU_ISA``, ``OMP_*``...: those the launcher did not
set itself). Any difference is a different class: ``trainbench reproduce`` refuses it unless
``--anyway``, and then says so in its output and in the new result.

**Verdict** (:func:`judge`), stated in every output:

1. The claim is what the result publishes: its throughput ``C``. The re-measurement ``M`` carries its
   own 95% interval ``[M_lo, M_hi]`` (:func:`harness.stats.summarize`: batch means, or a t-interval
   over 5+ repeats), so claimed/measured lies in ``[C/M_hi, C/M_lo]`` at 95%. The claim's own interval
   is shown but does not widen this: a submitter cannot make a claim harder to refute by making its
   records noisier (a forged claim keeps whatever interval its records give).
2. Two honest runs of one machine class differ by more than their within-run intervals say:
   seven consecutive runs of one bare loop on one 2-vCPU Zen 5 ranged 17.97-20.72 samples/s, ±7%
   around their mean (shared/ENVIRONMENT.md). So the ratio is held against a tolerance band
   ``[1/(1+t), 1+t]``, ``t`` = :data:`TOLERANCE` (10%), an equivalence margin as in bioequivalence
   testing (FDA, "Statistical Approaches to Establishing Bioequivalence", 2001, uses 0.80-1.25 for
   a ratio of geometric means).
3. **Reproduced** when the ratio's interval meets the band: the claimed value lies within the
   re-measurement's 95% interval widened by the tolerance, ``[M_lo/(1+t), M_hi·(1+t)]``. **Not
   reproduced** when the whole interval lies outside it: at 95% confidence the claim is off by more
   than the tolerance (a claim 1.25x too high, as from durations scaled by 0.8, is once the
   re-measurement's interval is within about ±12%).
4. Other processes only ever slow a run down. So when the interval lies above the band (the claim
   faster) but the re-measurement's windows were disturbed, or below it (the claim slower) but the
   claim's were, the slower run may be slow for that reason alone: the verdict is **undetermined**
   (exit 1, "not reproduced (undetermined)"), with the fix: measure again on a quiet machine. So is
   a re-measurement whose records bound no interval (too few or too noisy steps).
"""

from __future__ import annotations

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
    "the claimed throughput C against the re-measurement's own 95% CI [M_lo, M_hi]: claimed/measured lies in "
    "[C/M_hi, C/M_lo]; reproduced when that meets the tolerance band [1/(1+t), 1+t], t = {t:.0%} (run-to-run "
    "variation within a hardware class, shared/ENVIRONMENT.md; an equivalence margin as in FDA bioequivalence "
    "testing, 2001); undetermined when the slower run was disturbed or the re-measurement has no interval"
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
    ci = again.summary.throughput_ci95
    band = (1 / (1 + TOLERANCE), 1 + TOLERANCE)
    verdict: Literal["reproduced", "not reproduced", "undetermined"]
    if ci is None or ci.high is None or not 0 < ci.low <= measured <= ci.high:
        interval, verdict = None, "undetermined"
    else:
        interval = [claimed / ci.high, claimed / ci.low]
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
    """``reproduced: claimed X, measured Y (95% CI a-b); ...`` or ``not reproduced: ...``.

    Args:
        claim_rel: the claim's own interval as a fraction (its ``throughput_ci95_rel``), shown beside it.
    """
    ci = r.measured_ci95
    measured_ci = f" (95% CI {ci[0]:.4g}–{ci[1]:.4g})" if ci else " (no interval)"
    own = f" (its own 95% CI ±{claim_rel:.1%})" if claim_rel is not None else ""
    said = "not reproduced (undetermined)" if r.verdict == "undetermined" else r.verdict
    head = f"{said}: claimed {r.claimed:.4g} samples/s{own}, measured {r.measured:.4g} samples/s{measured_ci}"
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
    anyway = f" [ran anyway on a different hardware class: {'; '.join(r.differences)}]" if r.anyway else ""
    return head + tail + anyway
