"""The docker/local benchmark's block workers: the real worker process on the host (its
protocol, its failures, bounded waits). The session in the real image is in
tests/containers/test_bench_docker_local.py; the figures come from ``make bench``, not tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from suite.bench.container import _config
from suite.bench.container_result import ContainerSettings
from suite.bench.sessions import WorkerError, start_worker, worker_plan
from suite.launchers import LaunchPlan

TINY = ContainerSettings(sessions=1, pairs=2, block_steps=1, batch_size=2, image_size=64, warmup_steps=1)


def test_the_worker_replaces_only_the_rank_module() -> None:
    plan = LaunchPlan(["numactl", "--physcpubind=0", "/py", "-m", "workloads.rank", "--job", "j"], {"OMP": "1"})
    got = worker_plan(plan, Path("/r/job.json"), Path("/r/system.json"), Path("/r/progress.jsonl"))
    assert got.command == [
        "numactl", "--physcpubind=0", "/py", "-m", "suite.bench.worker",
        "--job", "/r/job.json", "--system", "/r/system.json", "--progress", "/r/progress.jsonl",
    ]  # fmt: skip
    assert got.env_set == {"OMP": "1"}
    with pytest.raises(ValueError, match=r"does not run workloads\.rank"):
        worker_plan(LaunchPlan(["torchrun", "x.py"]), Path("j"), Path("s"), Path("p"))


@pytest.mark.slow
def test_a_local_worker_warms_up_answers_blocks_and_stops(tmp_path: Path) -> None:
    """The real worker on a tiny ResNet-50: ready after its warm-up with its system description
    written, one JSON answer per block from the harness's measurement window, a progress log
    line per step (warm-up included), its own CPU time per block, exit 0 on stop; a bad command
    is an error, not a hang."""
    w = start_worker("local", _config(TINY), tmp_path / "w", None)
    try:
        ready = w.receive(300)
        assert ready["ready"] is True and ready["precision"]["chosen"] in ("fp32", "bf16")
        assert ready["python_loop_s"] > 0  # its interpreter's pure-Python speed, for bench docker
        system = json.loads((tmp_path / "w" / "system.json").read_text())
        assert system["torch"]["version"] and "env" in system
        for steps in (1, 2):
            w.send(f"block {steps}")
            got = w.receive(120)
            assert got["throughput"] > 0 and got["step_s"] > 0 and got["others_cores"] >= 0
            # its own CPU over the block's wall time: a busy rank, never more cores than exist
            assert 0 < got["own_cores"] <= (os.cpu_count() or 1) + 0.1
        lines = (tmp_path / "w" / "progress.jsonl").read_text().splitlines()
        assert len(lines) == (1 + 1) + (1 + 2)  # each block: one warm-up step, then its measured steps
        w.send("block zero")
        with pytest.raises(WorkerError, match="expected 'block N'"):
            w.receive(60)
    finally:
        w.stop()
    assert w.proc.returncode == 1


def test_a_worker_that_cannot_start_fails_with_its_log(tmp_path: Path) -> None:
    """A job the worker cannot read: the coordinator gets a WorkerError naming the cause and the
    log, well before any timeout."""
    config = _config(TINY).model_copy(update={"workload": "no-such-workload"})
    w = start_worker("local", config, tmp_path / "w", None)
    try:
        with pytest.raises(WorkerError, match="no-such-workload") as err:
            w.receive(120)
    finally:
        w.stop()
    assert "worker.log" in str(err.value)
