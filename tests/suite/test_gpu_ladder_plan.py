"""The GPU ladder's rungs on every kind of host (no run is started): what runs, with which settings, what is
skipped and why, and the batch-size search with the loss trajectory's batch that divides all its sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.isa import detect_isa
from suite.ladder.gpu_rungs import GPU
from suite.ladder.host import Gpu
from suite.ladder.rungs import Host, RungPlan, ladder_for, parse_rungs, plan_ladder
from suite.specs import ConfigError

CPUINFO = Path(__file__).resolve().parent.parent / "harness" / "cpuinfo"
ZEN4 = detect_isa((CPUINFO / "zen4-epyc-2vcpu.txt").read_text(), "x86_64", {})
ZEN1 = detect_isa((CPUINFO / "zen1-epyc-7551-2vcpu.txt").read_text(), "x86_64", {})
H100 = Host(ZEN4, "g++", None, 16, (Gpu("NVIDIA H100 80GB HBM3", "9.0"),), "cc")
DDP = ["engine=ddp"]


def _plans(host: Host, overrides: list[str], rungs: str | None = None, **kw: object) -> dict[str, RungPlan]:
    names = parse_rungs(rungs, GPU)
    return {p.name: p for p in plan_ladder("resnet50-gpu-horovod", None, overrides, names, host, **kw)}  # type: ignore[arg-type]


def test_on_an_h100_every_rung_runs_cumulatively_then_the_batch_search() -> None:
    assert ladder_for("resnet50-gpu-horovod") is GPU
    plans = _plans(H100, DDP)
    assert all(p.skip is None and p.config is not None for p in plans.values())
    assert list(plans) == [
        "fp32", "bf16", "channels_last", "compile", "max_autotune", "cudagraphs", "fused",
        "batch-128", "batch-512", "batch-1024", "batch-2048", "batch-4096",
    ]  # fmt: skip
    params = {name: p.config.params for name, p in plans.items() if p.config is not None}
    assert params["fp32"]["precision"] == "fp32" and not params["fp32"]["channels_last"]
    assert params["fp32"]["compile"] == "off" and params["fp32"]["batch_size"] == 256  # the quick profile's
    assert params["compile"]["compile"] == "inductor" and "compile_mode" not in params["compile"]  # default mode
    assert params["max_autotune"]["compile_mode"] == "max-autotune-no-cudagraphs"
    assert params["cudagraphs"]["compile_mode"] == "max-autotune"  # CUDA graphs on top of the autotuned kernels
    assert params["fused"]["optimizer_impl"] == "fused" and params["fused"]["precision"] == "bf16"
    top = params["batch-4096"]
    assert top["batch_size"] == 4096 and top["optimizer_impl"] == "fused" and top["compile_mode"] == "max-autotune"
    assert params["batch-128"]["batch_size"] == 128 and params["batch-128"]["channels_last"]
    # one trajectory batch for every rung: 128 distinct samples divide 128 ... 4096 and the base 256
    assert {(p["trajectory_steps"], p["trajectory_batch"]) for p in params.values()} == {(8, 128)}
    assert plans["batch-512"].family == "batch" and plans["batch-512"].label == "+ batch 512"


def test_cuda_graphs_without_autotuning_is_reduce_overhead() -> None:
    plans = _plans(H100, DDP, "fp32,bf16,channels_last,compile,cudagraphs")
    cfg = plans["cudagraphs"].config
    assert cfg is not None and cfg.params["compile_mode"] == "reduce-overhead"
    assert "trajectory_batch" not in cfg.params  # no batch search: the trajectory uses the run's batch


def test_on_the_cpu_cuda_graphs_are_skipped_and_the_search_is_tiny() -> None:
    plans = _plans(Host(ZEN4, "g++", None, 2), [*DDP, "device=cpu", "batch_size=16", "image_size=32"])
    assert plans["cudagraphs"].skip == "CUDA graphs need a GPU (device=cpu here)"
    assert [n for n in plans if n.startswith("batch-")] == ["batch-32"]
    assert all(p.skip is None for n, p in plans.items() if n != "cudagraphs")
    cfg = plans["batch-32"].config
    assert cfg is not None and cfg.params["batch_size"] == 32 and cfg.params["trajectory_batch"] == 16
    fused = plans["fused"].config
    assert (
        fused is not None and fused.params["compile_mode"] == "max-autotune-no-cudagraphs"
    )  # the cudagraphs rung added nothing


def test_rungs_that_cannot_run_here_say_why() -> None:
    cpu = _plans(Host(ZEN1, None, None, 2), [*DDP, "device=cpu", "batch_size=16"])
    assert "would be emulated" in str(cpu["bf16"].skip)
    for name in ("compile", "max_autotune"):
        assert "no C++ compiler was found" in str(cpu[name].skip)
    v100 = _plans(Host(ZEN4, "g++", None, 8, (Gpu("Tesla V100-SXM2-16GB", "7.0"),), None), DDP)
    assert "Tesla V100-SXM2-16GB (compute capability 7.0) has no bf16 tensor cores" in str(v100["bf16"].skip)
    for name in ("compile", "max_autotune", "cudagraphs"):
        assert "Triton, which needs a C compiler" in str(v100[name].skip)
    fused = v100["fused"].config
    assert fused is not None and fused.params["precision"] == "fp32" and fused.params["compile"] == "off"


def test_batch_sizes_and_settings_are_checked_before_anything_runs() -> None:
    plans = _plans(H100, DDP, "fp32,batch", batch_sizes=[512, 1024])
    assert [n for n in plans if n.startswith("batch-")] == ["batch-512", "batch-1024"]
    with pytest.raises(ConfigError, match="common divisor of at least 2"):
        _plans(H100, DDP, "fp32,batch", batch_sizes=[255])
    # the trajectory needs 16 distinct samples on this ladder (8 let its fp32 trajectory oscillate)
    with pytest.raises(ConfigError, match=r"train on 8 distinct samples .* needs at least 16.* --set batch_size=16"):
        _plans(H100, [*DDP, "batch_size=8"], "fp32,bf16")
    with pytest.raises(ConfigError, match=r"train on 8 distinct samples \(batch_size=256 and the search's 200"):
        _plans(H100, DDP, "fp32,batch", batch_sizes=[200])
    assert _plans(H100, [*DDP, "batch_size=8"], "fp32,bf16", trajectory_steps=0)["bf16"].config is not None
    with pytest.raises(ConfigError, match="needs the batch rung"):
        _plans(H100, DDP, "fp32,bf16", batch_sizes=[512])
    with pytest.raises(ConfigError, match=r"the ladder sets .*compile_mode"):
        _plans(H100, [*DDP, "compile_mode=max-autotune"])
    with pytest.raises(ConfigError, match="unknown rung"):
        parse_rungs("fp32,allocator", GPU)
    with pytest.raises(ConfigError, match="compile_mode=reduce-overhead captures CUDA graphs and needs device=cuda"):
        from suite.specs import resolve

        resolve("resnet50-gpu-horovod", None, ["device=cpu", "compile=inductor", "compile_mode=reduce-overhead"])
