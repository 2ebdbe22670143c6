"""TensorFlow's bf16 on a CPU whose bf16 a oneDNN cap hides is refused before the first step, with the fix.

The CPUs are the /proc/cpuinfo fixtures of tests/harness (Zen 1 AVX2-only, Zen 4 avx512_bf16,
Sapphire Rapids AMX, Graviton 3 with bf16), so every class is covered on any machine.
"""

from __future__ import annotations

import pytest

from harness.isa import detect_isa
from tests.harness.test_harness_isa import GRAVITON3, SPR, ZEN1, ZEN4, cpuinfo
from workloads.resnet50_tf.precision import bf16_refusal, onednn_only


def _refusal(name: str, env: dict[str, str]) -> str | None:
    machine = "aarch64" if name == GRAVITON3 else "x86_64"
    return bf16_refusal(detect_isa(cpuinfo(name), machine, onednn_only(env)))


@pytest.mark.parametrize("cpu", [ZEN4, SPR])
def test_a_onednn_cap_below_the_cpus_bf16_is_refused_with_the_cap_named_and_the_fix(cpu: str) -> None:
    text = _refusal(cpu, {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert text is not None
    assert "ONEDNN_MAX_CPU_ISA=AVX2 hides" in text and "avx512_bf16" in text
    assert "--set precision=fp32" in text and "TensorFlow" in text
    assert _refusal(cpu, {"DNNL_MAX_CPU_ISA": "AVX2"}) is not None, "oneDNN's older name caps it too"


@pytest.mark.parametrize("cpu", [ZEN1, ZEN4, SPR, GRAVITON3])
def test_bf16_is_not_refused_without_a_cap(cpu: str) -> None:
    assert _refusal(cpu, {}) is None


def test_an_avx2_only_cpu_is_not_refused_tensorflow_falls_back_to_its_own_kernels() -> None:
    assert _refusal(ZEN1, {"ONEDNN_MAX_CPU_ISA": "AVX2"}) is None


def test_torchs_cap_does_not_concern_tensorflow() -> None:
    env = {"ATEN_CPU_CAPABILITY": "avx2"}
    assert onednn_only(env) == {}
    assert _refusal(ZEN4, env) is None


def test_a_cap_that_keeps_bf16_is_not_refused() -> None:
    assert _refusal(SPR, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}) is None
    assert _refusal(ZEN4, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}) is None
