"""The verdict of ``trainbench reproduce`` (:func:`suite.validation.reproduction.judge`) at the precision of a
quiet machine, and the hardware-class comparison, without running anything.

The runs are built by the runner's own ``build_result`` from steady step times (0.1 s, log-normal spread 5%,
40 measured steps: a ±2-3% interval, as the quick profile gives on a quiet 2-vCPU machine); the end-to-end
runs through the CLI are in ``tests/suite/test_reproduce.py``.
"""

from __future__ import annotations

import copy

import pytest

from harness.system import capture_system
from suite.results import Result
from suite.validation.reproduction import TOLERANCE, class_differences, judge, verdict_line
from tests.validation import forgery
from tests.validation.synthetic import result


def _verdict(claim: Result, again: Result) -> tuple[str, str]:
    r = judge(claim, again, "claim.json", differences=[], anyway=False)
    return r.verdict, verdict_line(r)


def test_an_honest_claim_is_reproduced_and_durations_x_0_8_are_not() -> None:
    claim, again = result(seed=1), result(seed=2)
    assert claim.summary is not None and claim.summary.throughput_ci95_rel is not None
    assert claim.summary.throughput_ci95_rel < 0.05
    verdict, line = _verdict(claim, again)
    assert verdict == "reproduced" and line.startswith("reproduced: claimed") and "meets the tolerance band" in line
    forged = forgery.resealed(forgery.scale_windows(claim.model_dump(mode="json"), 0.8))
    verdict, line = _verdict(forged, again)
    assert verdict == "not reproduced" and line.startswith("not reproduced: claimed"), line
    assert "lies above the tolerance band 0.909–1.100" in line
    slower = forgery.resealed(forgery.scale_windows(claim.model_dump(mode="json"), 1.25))  # a claim 20% too low
    assert _verdict(slower, again)[0] == "not reproduced"


@pytest.mark.parametrize("factor", [0.93, 1.07])
def test_differences_within_the_tolerance_are_reproduced(factor: float) -> None:
    claim = forgery.resealed(forgery.scale_windows(result(seed=1).model_dump(mode="json"), factor))
    assert _verdict(claim, result(seed=2))[0] == "reproduced"


def test_a_disturbed_slower_run_leaves_the_verdict_undetermined() -> None:
    claim, again = result(seed=1), result(seed=2)
    forged = forgery.resealed(forgery.scale_windows(claim.model_dump(mode="json"), 0.8))
    doc = again.model_dump(mode="json")
    doc["utilization"] = [forgery.disturb(u, 0.3) for u in doc["utilization"]]
    disturbed = forgery.resealed(doc)
    assert disturbed.utilization_summary is not None and disturbed.utilization_summary.disturbed
    verdict, line = _verdict(forged, disturbed)
    assert verdict == "undetermined" and line.startswith("not reproduced (undetermined): claimed")
    assert "the re-measurement was disturbed by other processes" in line
    slower = forgery.resealed(forgery.scale_windows(doc, 1.25))  # the claim faster than a disturbed claim's run
    assert _verdict(slower, again)[0] == "undetermined"  # the disturbed one is the slower: the claim here


def test_a_re_measurement_without_an_interval_decides_nothing() -> None:
    claim = result(seed=1)
    short = result(steps=3, seed=2)
    assert short.summary is not None and short.summary.throughput_ci95 is None
    verdict, line = _verdict(claim, short)
    assert verdict == "undetermined" and "has no interval" in line and "--repeats 3" in line


def test_the_hardware_class_compares_cpu_isa_cores_libraries_and_user_variables() -> None:
    claim = result(seed=1)
    # the re-measurement runs with the variables the claim recorded, as one started from the same shell does
    # (not this process's environment: CI sets OMP_WAIT_POLICY, and libraries loaded by other tests set more)
    here, here_env = capture_system(), dict(claim.environment["env"])
    assert class_differences(claim, here, here_env) == []
    other = copy.deepcopy(claim.model_dump(mode="json"))
    other["environment"]["cpu"]["model"] = "AMD EPYC 7551 32-Core Processor"
    other["environment"]["cpu"]["logical_cores"] = 64
    other["environment"]["libraries"]["torch"] = "2.0.0"
    other["environment"]["env"]["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    found = [d.field for d in class_differences(Result.model_validate(other), here, here_env)]
    assert found == ["CPU model", "logical cores", "torch version", "$ONEDNN_MAX_CPU_ISA"]
    assert class_differences(claim, here, {**here_env, "ONEDNN_MAX_CPU_ISA": "AVX2"})[0].text() == (
        "$ONEDNN_MAX_CPU_ISA: claim unset, here AVX2"
    )
    assert [d.text() for d in class_differences(claim, here, {**here_env, "KMP_BLOCKTIME": "7"})] == [
        f"$KMP_BLOCKTIME: claim {here_env.get('KMP_BLOCKTIME', 'unset')}, here 7"
    ]
    assert 0 < TOLERANCE < 0.25  # x 0.8 (a claim 25% too fast) lies outside the band
