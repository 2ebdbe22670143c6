"""Real tiny runs with the ISA capped to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2).

On an avx512_bf16 machine this is the AVX2 imitation of shared/ENVIRONMENT.md; on an AVX2-only
machine it changes nothing. Either way bf16 is not native, so ``auto`` must pick fp32, and an
explicit ``bf16`` must run, warn before the first step and say ``bf16_emulated: true``.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from suite.results import read_result
from tests.conftest import TINY_RUN, trainbench

AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the AVX2 cap is an x86 setting")


def test_auto_picks_fp32_when_the_isa_is_capped_to_avx2(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = trainbench(
        "run", "resnet50-cpu", *TINY_RUN, "--no-tracking", "--output-dir", str(out), cwd=tmp_path, env=AVX2
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    head = proc.stdout.split("repeat 1/1")[0]  # what came before the progress line and the table
    assert "matrix ISA: AVX2" in head and "bf16 emulated" in head
    assert "precision: fp32 (requested auto): fp32: " in head and "so bf16 would be emulated" in head
    assert "rank 0 decided precision fp32 on its host, as planned" in head
    [path] = out.rglob("result.json")
    result = read_result(path)
    choice = result.workload_info["precision"]
    assert (choice["requested"], choice["chosen"], choice["bf16_emulated"]) == ("auto", "fp32", False)
    assert result.config.params["precision"] == "auto" and result.bf16_emulated is None
    isa = result.environment["isa"]
    assert isa["effective"]["avx2"] and not isa["effective"]["avx512f"] and not isa["bf16_native"]
    assert isa["onednn_max_cpu_isa"] == "AVX2" and isa["torch_cpu_capability"] == "AVX2"
    shown = trainbench("show", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "matrix ISA │ AVX2" in text and "precision │ fp32 (requested auto)" in text


def test_explicit_bf16_without_native_support_runs_warns_and_is_marked_emulated(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = [*TINY_RUN, "--set", "precision=bf16", "--set", "budget_s=1", "--set", "budget_floor_steps=4"]
    proc = trainbench("run", "resnet50-cpu", *args, "--no-tracking", "--output-dir", str(out), cwd=tmp_path, env=AVX2)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    text = " ".join(proc.stdout.split())
    head = text.split("repeat 1/1")[0]
    assert "warning: precision=bf16 without native bf16 matrix instructions" in head
    assert "Fix: --set precision=auto" in head
    # the 1 s budget is long gone by the first step: the projection says so, with cause and fix
    assert "time budget: projected" in head and "even at the floor of measured steps" in head
    assert "cause: bf16 is emulated on this CPU" in head and "fix: --set precision=auto (fp32 here)" in head
    [path] = out.rglob("result.json")
    result = read_result(path)
    assert result.bf16_emulated is True and result.division == "open"
    assert result.workload_info["precision"]["chosen"] == "bf16"
    assert result.plan is not None and result.plan["projection"]["floor_overshoots"] is True
    assert "[EMULATED: this run measures the emulation" in text  # the summary table's precision row
