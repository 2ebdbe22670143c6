"""Real 2-rank DistributedDataParallel runs (gloo) on two pseudo-nodes of one core each, through the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from mlflow.tracking import MlflowClient

from harness.records import Phase
from suite.results import read_result
from tests.conftest import trainbench
from tests.faults.helpers import EXE, wait_for_measurement

pytestmark = pytest.mark.numactl

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


def test_ddp_run_combines_ranks_and_compares_with_one_process(tmp_path: Path, store_uri: str) -> None:
    proc = trainbench(
        "run", "numa-ddp", *TINY_DDP, "--output-dir", str(tmp_path / "o"), "--tracking-uri", store_uri,
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
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
    # ... beside the plan it was meant to follow
    assert [(p["local_rank"], p["cpus"]) for p in r.environment["placement_plan"]] == [(0, "0"), (1, "1")]
    assert all(e["omp_num_threads"] == "1" and e["torch_threads"] == 1 for e in r.environment["ranks"])
    # the built-in comparison: one process, both CPUs, global batch 4
    sc = r.scaling
    assert sc is not None and sc.efficiency == pytest.approx(sc.ddp_throughput / sc.single_throughput)
    single = read_result(Path(sc.single_result))
    assert single.digest == sc.single_digest and single.config.params["batch_size"] == 4
    assert single.environment["binding"]["cpus_allowed"] == [0, 1] and single.world_size == 1
    assert "scaling efficiency" in proc.stdout
    exp = MlflowClient(tracking_uri=store_uri).get_experiment_by_name("numa-ddp")
    assert exp is not None
    [run] = MlflowClient(tracking_uri=store_uri).search_runs([exp.experiment_id])
    assert run.data.metrics["scaling_efficiency"] == pytest.approx(sc.efficiency)
    assert run.data.metrics["single_process_throughput_samples_per_s"] == pytest.approx(sc.single_throughput)


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


def _start_with_comparison(tmp_path: Path, uri: str) -> subprocess.Popen[str]:
    """A DDP run whose single-process comparison lasts at least 2 x 4 s (it is stopped in the tests)."""
    args = [EXE, "run", "numa-ddp", *TINY_DDP, "--set", "measure_seconds=4", "--output-dir", str(tmp_path / "o")]
    return subprocess.Popen(
        [*args, "--tracking-uri", uri], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_single_process(tmp_path: Path, run: subprocess.Popen[str]) -> psutil.Process:
    """Block until the single-process comparison has recorded a step; return its rank process."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        logs = list((tmp_path / "o").rglob("single-process/progress.jsonl"))
        if logs and logs[0].read_text().strip():
            for p in psutil.Process(run.pid).children(recursive=True):
                if "workloads.rank" in " ".join(p.cmdline()):
                    return p
        time.sleep(0.2)
    run.kill()
    raise AssertionError(f"the single-process comparison never started: {run.communicate()}")


def _comparison_outcome(tmp_path: Path, uri: str) -> tuple[Any, str]:
    assert not list((tmp_path / "o").rglob("result.json")), "an unfinished comparison must not leave a valid result"
    [kept] = [p for p in (tmp_path / "o").rglob("result-incomplete.json") if "single-process" not in str(p)]
    result = read_result(kept)
    assert result.status == "incomplete" and result.summary is None and result.scaling is None
    assert {s.rank for s in result.steps} == {0, 1}, "the ranks' measured steps are kept"
    exp = MlflowClient(tracking_uri=uri).get_experiment_by_name("numa-ddp")
    assert exp is not None
    [run] = MlflowClient(tracking_uri=uri).search_runs([exp.experiment_id])
    return result, str(run.info.status)


def test_interrupting_the_single_process_comparison_kills_the_whole_run(tmp_path: Path, store_uri: str) -> None:
    run = _start_with_comparison(tmp_path, store_uri)
    _wait_for_single_process(tmp_path, run)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=90)
    assert run.returncode == 130, stderr
    result, status = _comparison_outcome(tmp_path, store_uri)
    assert result.error is not None and result.error.startswith("interrupted")
    assert status == "KILLED"
    _no_orphans(tmp_path)


def test_a_crashed_single_process_comparison_fails_the_run(tmp_path: Path, store_uri: str) -> None:
    run = _start_with_comparison(tmp_path, store_uri)
    _wait_for_single_process(tmp_path, run).kill()
    _, stderr = run.communicate(timeout=90)
    assert run.returncode == 1, stderr
    assert "the single-process comparison failed" in stderr and "killed by SIGKILL" in stderr
    _, status = _comparison_outcome(tmp_path, store_uri)
    assert status == "FAILED"
    _no_orphans(tmp_path)
