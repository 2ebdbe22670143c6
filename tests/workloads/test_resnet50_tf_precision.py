"""TensorFlow's bf16 on a CPU whose bf16 a oneDNN cap hides is refused before the first step, with the fix.

The CPUs are the /proc/cpuinfo fixtures of tests/harness (Zen 1 AVX2-only, Zen 4 avx512_bf16,
Sapphire Rapids AMX, Graviton 3 with bf16), so every class is covered on any machine. The rank turns
the refusal into the run's error and exit 2, without a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.isa import detect_isa
from suite.specs import resolve
from tests.conftest import REPO
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


REFUSING_RANK = """
import dataclasses, sys
import workloads.rank
from workloads import registry
from workloads.checks import WorkloadRefused

real = registry.get("resnet50-cpu")

def refuse(params):
    raise WorkloadRefused("precision=bf16 cannot train here. Fix: --set precision=fp32")

registry.get = lambda name: dataclasses.replace(real, factory=refuse)
sys.exit(workloads.rank.main(sys.argv[1:]))
"""


def test_a_refusing_workload_exits_2_with_its_message_and_no_traceback(tmp_path: Path) -> None:
    """The rank records a WorkloadRefused as the run's error and exits 2 without a traceback."""
    job = resolve("resnet50-cpu", overrides=["batch_size=2", "image_size=64", "precision=fp32"]).job()
    job.write(tmp_path / "job.json")
    out = tmp_path / "rank.json"
    argv = ["--job", str(tmp_path / "job.json"), "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", REFUSING_RANK, *argv], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert "rank 0: precision=bf16 cannot train here. Fix: --set precision=fp32" in proc.stderr
    assert "Traceback" not in proc.stderr
    record = json.loads(out.read_text())
    assert record["complete"] is False and record["error"].startswith("precision=bf16 cannot train here")
