"""Checks of the conditions a run was measured under: the suite that measured it, its steady state,
interference from other processes, and bf16 computed by emulation.

A score is only comparable with another measured under the same conditions, so each of
these is reported on the result (and, for bf16 emulation, carried to its scored group).
"""

from __future__ import annotations

import math

from harness.sampler import summarize_utilization
from suite import __version__
from suite.labels import bf16_emulated
from suite.results import Result
from suite.validation.findings import Findings

KNOWN_SUITE_VERSIONS = frozenset({"0.1.0"})
"""Released trainbench versions whose results this validator knows how to check (besides its own).

A version this validator does not know may have recorded fields or statistics differently,
so a result claiming it is refused rather than checked by today's rules; add a release here
when it ships (its results then validate with this code)."""


def known_suite_version(version: str) -> bool:
    """True when ``version`` is a released trainbench this validator knows, or the validator itself."""
    return version in KNOWN_SUITE_VERSIONS or version == __version__


def check_suite(result: Result, where: str, findings: Findings, accepted: bool) -> None:
    """The suite version is one the rules accept (``accepted``) and one this validator knows; a complete
    result carries no error."""
    version = result.provenance.suite_version
    if accepted and not known_suite_version(version):
        findings.error(
            "suite-version",
            f"{where}#provenance/suite_version",
            f"suite version {version} is not a trainbench release this validator knows "
            f"({', '.join(sorted(KNOWN_SUITE_VERSIONS | {__version__}))})",
            "re-run the workload with a released trainbench, or validate with the trainbench that wrote it",
        )
    if result.status == "complete" and result.error:
        findings.error(
            "error-in-complete",
            f"{where}#error",
            f"a complete result carries an error ({result.error[:200]!r}): a run that failed has no score",
            "submit the result as trainbench wrote it (a failed run is written as incomplete)",
        )


def check_steady_state(result: Result, where: str, findings: Findings) -> None:
    """A measurement window still trending is an error; an unchecked one a warning."""
    if result.summary is None:
        return
    ss = result.summary.steady_state
    if ss.status == "trending":
        drift = f" (drift {ss.worst_drift:+.1%} across a window)" if ss.worst_drift is not None else ""
        findings.error(
            "steady-state-trending",
            f"{where}#summary/steady_state",
            f"the measurement window's step times were still trending{drift}",
            "lengthen the warm-up (warmup_steps / warmup_seconds) and re-run on a quiet machine",
        )
    elif ss.status == "insufficient":
        findings.warning(
            "steady-state-unchecked",
            f"{where}#summary/steady_state",
            "too few measured steps per window to check the steady state",
            "measure at least 8 steps per window (the official profiles do)",
        )


def check_interference(result: Result, where: str, findings: Findings) -> None:
    """Measurement windows the sampler found disturbed by other processes (or hypervisor steal).

    The verdict is recomputed from the utilization readings and the windows
    (:func:`harness.sampler.summarize_utilization`); a stored verdict that the readings do
    not support is an error. A disturbed window is an error in the closed division (a
    closed score is ranked and checked against bands: it must measure the system, not its
    neighbours) and a warning in the open division (``--strict`` makes it an error).
    """
    stored = result.utilization_summary
    if stored is None:
        return
    again = summarize_utilization(result.utilization, result.windows)
    if again.disturbed != stored.disturbed or again.disturbed_windows != stored.disturbed_windows:
        findings.error(
            "summary-mismatch",
            f"{where}#utilization_summary/disturbed",
            f"disturbed is stored as {stored.disturbed} ({stored.disturbed_windows} windows) but the utilization "
            f"readings give {again.disturbed} ({again.disturbed_windows} windows)",
            "submit the result as trainbench wrote it",
        )
    if not again.disturbed:
        return
    add = findings.error if result.division == "closed" else findings.warning
    add(
        "disturbed",
        f"{where}#utilization_summary",
        again.interference or f"{again.disturbed_windows} measurement window(s) were disturbed by other processes",
        "re-run when nothing else runs on the machine, or on dedicated CPUs",
    )


def check_energy(result: Result, where: str, findings: Findings) -> None:
    """The stored GPU energy and samples per joule follow from the NVML readings and the windows.

    Recomputed with :func:`harness.sampler.summarize_utilization` (the energy of each measurement
    window from the readings that bracket it, :mod:`harness.gpu_telemetry`); a stored figure
    that the readings do not give is an error.
    """
    stored = result.utilization_summary.gpu if result.utilization_summary is not None else None
    again = summarize_utilization(result.utilization, result.windows).gpu
    for name in ("energy_j", "samples_per_joule"):
        a = None if stored is None else getattr(stored, name)
        b = None if again is None else getattr(again, name)
        if (a is None) != (b is None) or (a is not None and b is not None and not math.isclose(a, b, rel_tol=1e-9)):
            findings.error(
                "summary-mismatch",
                f"{where}#utilization_summary/gpu/{name}",
                f"{name} is stored as {a!r} but the GPU readings give {b!r}",
                "submit the result as trainbench wrote it",
            )


def check_bf16(result: Result, where: str, findings: Findings) -> None:
    """bf16 computed by emulation is labelled: its throughput is not comparable with native bf16."""
    if bf16_emulated(result):
        findings.info(
            "bf16-emulated",
            f"{where}#workload_info",
            "bf16 was emulated on this CPU (no native bf16 instructions): the run is scored apart from "
            "native-bf16 runs and labelled 'bf16 emulated' wherever it is shown",
            "compare it only with other emulated-bf16 runs, or run fp32 on this CPU",
        )
