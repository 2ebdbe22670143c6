"""Real 2-rank DistributedDataParallel runs (gloo) on two pseudo-nodes of one core each, through the CLI."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from harness.records import Phase
from suite.results import read_result
from tests.conftest import trainbench
from tests.faults.helpers import EXE, wait_for_measurement

if len(os.sched_getaffinity(0)) < 2:
    pytest.skip("two CPUs are needed for two pseudo-nodes", allow_module_level=True)

TINY_DDP = [
    "--set",
    "topology=0;1",
    "--set",
    "batch_size=2",
    "--set",
    "image_size=64",
    "--set",
    "warmup_steps=1",
    "--set",
    "measure_steps=4",
    "--set",
    "measure_seconds=0",
    "--set",
    "repeats=2",
    "--set",
    "sampler_interval_s=0.1",
]


def test_ddp_run_combines_ranks_and_compares_with_one_process(tmp_path: Path) -> None:
    proc = trainbench(
        "run", "numa-ddp", *TINY_DDP, "--output-dir", str(tmp_path / "o"), "--no-tracking", cwd=tmp_path, timeout=600
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = [p for p in (tmp_path / "o").rglob("result.json") if "single-process" not in str(p)]
    r = read_result(path)
    assert r.world_size == 2 and r.workload_info["global_batch_size"] == 4
    assert r.workload_info["per_rank_batch_size"] == 2
    # per-rank records are kept, and both ranks ended every window at the same step
    assert {s.rank for s in r.steps} == {0, 1}
    for repeat in range(2):
        ws = [w for w in r.windows if w.repeat == repeat and w.phase is Phase.MEASUREMENT]
        assert len(ws) == 2 and ws[0].steps == ws[1].steps
    # global throughput = total samples of all ranks / the slowest rank's window, per repeat
    measured = [w for w in r.windows if w.phase is Phase.MEASUREMENT]
    slowest = sum(max(w.seconds for w in measured if w.repeat == k) for k in range(2))
    assert r.summary is not None
    assert r.summary.throughput == pytest.approx(sum(w.samples for w in measured) / slowest)
    # each rank's binding was read back from the process itself
    bindings = {e["rank"]: e["binding"] for e in r.environment["ranks"]}
    assert bindings[0]["cpus_allowed"] == [0] and bindings[1]["cpus_allowed"] == [1]
    assert all(e["omp_num_threads"] == "1" and e["torch_threads"] == 1 for e in r.environment["ranks"])
    # the built-in comparison: one process, both CPUs, global batch 4
    sc = r.scaling
    assert sc is not None and sc.efficiency == pytest.approx(sc.ddp_throughput / sc.single_throughput)
    single = read_result(Path(sc.single_result))
    assert single.digest == sc.single_digest and single.config.params["batch_size"] == 4
    assert single.environment["binding"]["cpus_allowed"] == [0, 1] and single.world_size == 1
    assert "scaling efficiency" in proc.stdout


def _ranks(run: subprocess.Popen[str]) -> dict[int, psutil.Process]:
    out = {}
    for p in psutil.Process(run.pid).children(recursive=True):
        try:
            env = p.environ()
        except psutil.Error:
            continue
        if "workloads.rank" in " ".join(p.cmdline()) and env.get("TRAINBENCH_BOUND") == "1":
            out[int(env["RANK"])] = p
    return out


def _start(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    args = [
        EXE,
        "run",
        "numa-ddp",
        *TINY_DDP,
        "--set",
        "measure_seconds=600",
        "--set",
        "compare_single=false",
        *extra,
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
    ]
    return subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _no_orphans(tmp_path: Path) -> None:
    time.sleep(1)
    for p in psutil.process_iter(["cmdline"]):
        assert str(tmp_path) not in " ".join(p.info["cmdline"] or []), f"orphan left behind: {p.info['cmdline']}"


def test_a_crashed_rank_fails_the_whole_run_with_its_error(tmp_path: Path) -> None:
    run = _start(tmp_path)
    wait_for_measurement(tmp_path)
    _ranks(run)[1].kill()
    _, stderr = run.communicate(timeout=180)
    assert run.returncode == 1, stderr
    assert "rank 1: stopped without finishing" in stderr
    assert not list((tmp_path / "o").rglob("result.json"))
    [kept] = list((tmp_path / "o").rglob("result-incomplete.json"))
    result = read_result(kept)
    assert result.status == "incomplete" and {s.rank for s in result.steps} == {0, 1}
    _no_orphans(tmp_path)


def test_a_hung_rank_fails_the_run_within_the_stall_timeout(tmp_path: Path) -> None:
    run = _start(tmp_path, "--set", "stall_timeout_s=5")
    wait_for_measurement(tmp_path)
    _ranks(run)[1].suspend()
    t0 = time.monotonic()
    _, stderr = run.communicate(timeout=180)
    assert time.monotonic() - t0 < 60
    assert run.returncode == 1, stderr
    assert "killed as hung" in stderr
    _no_orphans(tmp_path)
