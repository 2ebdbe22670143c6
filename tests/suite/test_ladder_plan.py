"""The ladder's rungs on every kind of host: what runs, what is skipped and why (no run is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.isa import detect_isa
from suite.ladder.numerics import TRAJECTORY_STEPS
from suite.ladder.rungs import RUNGS, Host, find_allocator, find_cxx, parse_rungs, plan_ladder, this_host
from suite.run.config_file import ConfigFileError, RunConfigFile, read_config_file, write_config_file
from suite.specs import ConfigError

CPUINFO = Path(__file__).resolve().parent.parent / "harness" / "cpuinfo"
ZEN4 = detect_isa((CPUINFO / "zen4-epyc-2vcpu.txt").read_text(), "x86_64", {})
ZEN1 = detect_isa((CPUINFO / "zen1-epyc-7551-2vcpu.txt").read_text(), "x86_64", {})
TINY = ["batch_size=8", "image_size=64"]  # 8 distinct samples: the least a CPU ladder's trajectory takes


def test_every_rung_runs_on_a_host_that_has_everything() -> None:
    plans = plan_ladder("resnet50-cpu", "quick", TINY, list(RUNGS), Host(ZEN4, "g++", "jemalloc", 2))
    assert [p.name for p in plans] == list(RUNGS) and all(p.skip is None for p in plans)
    top = plans[-1].config
    assert top is not None
    assert top.params["precision"] == "bf16" and top.params["channels_last"] and top.params["compile"] == "inductor"
    assert top.launch.allocator == "jemalloc"
    assert (top.launch.omp_num_threads, top.launch.omp_proc_bind, top.launch.omp_places) == (2, "close", "cores")
    base = plans[0].config
    assert base is not None and base.params["precision"] == "fp32" and base.params["channels_last"] is False
    trajectory = f"trajectory_steps={TRAJECTORY_STEPS}"  # every rung trains the same short loss trajectory
    assert plans[2].overrides == [
        *TINY, trajectory, "precision=bf16", "channels_last=true", "compile=off", "allocator=default"
    ]  # fmt: skip
    assert all(p.config is not None and p.config.params["trajectory_steps"] == TRAJECTORY_STEPS for p in plans)


def test_rungs_that_cannot_help_are_skipped_with_the_reason_and_the_rest_build_on_fp32() -> None:
    plans = {p.name: p for p in plan_ladder("resnet50-cpu", None, TINY, list(RUNGS), Host(ZEN1, None, None, 1))}
    assert plans["bf16"].skip is not None and "would be emulated, about 14x slower" in plans["bf16"].skip
    assert "no C++ compiler was found" in str(plans["compile"].skip)
    assert "apt-get install libjemalloc2" in str(plans["allocator"].skip)
    assert "single CPU" in str(plans["omp"].skip)
    cl = plans["channels_last"].config
    assert cl is not None and cl.params["precision"] == "fp32" and cl.params["channels_last"] is True
    assert all(plans[n].config is None and plans[n].adds == [] for n in ("bf16", "compile", "allocator", "omp"))


def test_rung_lists_and_overrides_are_checked_before_anything_runs() -> None:
    assert parse_rungs(None) == list(RUNGS)
    assert parse_rungs("fp32,channels_last,bf16") == ["fp32", "bf16", "channels_last"]
    for bad, words in (
        ("bf16,channels_last", "starts at fp32"),
        ("fp32,turbo", "unknown rung"),
        ("fp32,fp32", "twice"),
    ):
        with pytest.raises(ConfigError, match=words):
            parse_rungs(bad)
    host = Host(ZEN4, "g++", "jemalloc", 2)
    with pytest.raises(ConfigError, match=r"the ladder sets .* itself"):
        plan_ladder("resnet50-cpu", None, ["precision=bf16"], ["fp32"], host)
    with pytest.raises(ConfigError, match=r"ladder rung fp32: .*batch_size"):
        plan_ladder("resnet50-cpu", None, ["batch_size=0"], ["fp32"], host)
    with pytest.raises(ConfigError, match="no precision, channels_last, compile setting"):
        plan_ladder("mnist-dataheavy", None, [], ["fp32"], host)
    with pytest.raises(ConfigError, match=r"the ladder sets .*trajectory_steps.* itself"):
        plan_ladder("resnet50-cpu", None, ["trajectory_steps=2"], ["fp32"], host)


def test_this_host_reads_the_machine() -> None:
    host = this_host()
    assert host.cpus >= 1 and host.isa.source.startswith("/proc/cpuinfo")
    assert find_cxx({"CXX": "/nonexistent/c++", "PATH": ""}) in (None, "g++", "c++", "clang++")
    assert find_allocator() in (None, "jemalloc", "tcmalloc")


def test_run_config_files_round_trip_and_refuse_what_they_are_not(tmp_path: Path) -> None:
    path = write_config_file(
        tmp_path / "c.json", RunConfigFile(workload="resnet50-cpu", profile="quick", overrides=TINY)
    )
    assert read_config_file(path) == RunConfigFile(workload="resnet50-cpu", profile="quick", overrides=TINY)
    (tmp_path / "bad.json").write_text('{"workload": "resnet50-cpu", "overides": []}')
    with pytest.raises(ConfigFileError, match="overides: Extra inputs are not permitted"):
        read_config_file(tmp_path / "bad.json")
    (tmp_path / "dup.json").write_text('{"workload": "a", "workload": "b"}')
    with pytest.raises(ConfigFileError, match="cannot read the run config"):
        read_config_file(tmp_path / "dup.json")
