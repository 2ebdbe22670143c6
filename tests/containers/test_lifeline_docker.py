"""A rank inside a container stops within 10 s of losing its supervisor on the host, and keeps its steps.

Across the container boundary no signal reaches the rank and its parent is the
container's init, so only the heartbeat in the shared run directory tells it. The rank
runs this checkout's code (mounted read-only and first on PYTHONPATH) in the
trainbench-cpu image's environment, so the test needs no rebuild of the image.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from suite.specs import resolve
from tests.conftest import REPO
from tests.containers.conftest import _skip_or_fail
from tests.workloads.test_lifeline import LONG_TINY
from workloads.heartbeat import Heartbeat
from workloads.lifeline import EXIT_CODE


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def test_rank_in_a_container_stops_when_the_hosts_supervisor_heartbeat_stops(engine: Any, tmp_path: Path) -> None:
    if not engine.images.list(name="trainbench-cpu"):
        _skip_or_fail("image trainbench-cpu is not built here; run `make images` to run the container tests")
    tmp_path.chmod(0o777)  # the image's non-root user writes the measurement here
    heartbeat = Heartbeat(tmp_path / "heartbeat").start()
    job = resolve("resnet50-cpu", overrides=LONG_TINY).job()
    job.model_copy(update={"lifeline": heartbeat.job_entry()}).write(tmp_path / "job.json")
    name = f"tb-lifeline-{uuid.uuid4().hex[:8]}"
    rank = ["-m", "workloads.rank", "--job", f"{tmp_path}/job.json", "--out", f"{tmp_path}/measurement.json"]
    started = _docker(
        "run", "-d", "--init", "--name", name, "--shm-size", "512m",
        "-v", f"{tmp_path}:{tmp_path}", "-v", f"{REPO}:/src:ro", "-e", "PYTHONPATH=/src",
        "--entrypoint", "python", "trainbench-cpu:latest", *rank, "--progress", f"{tmp_path}/progress.jsonl",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + 300
        progress = tmp_path / "progress.jsonl"
        while time.monotonic() < deadline:
            if progress.exists() and progress.read_text().count('"measurement"') >= 2:
                break
            assert _docker("inspect", "-f", "{{.State.Running}}", name).stdout.strip() == "true", _docker("logs", name)
            time.sleep(0.2)
        heartbeat.stop()  # the supervisor is gone: no more beats
        stopped = time.monotonic()
        code = int(_docker("wait", name, timeout=60).stdout.strip())
        took = time.monotonic() - stopped
        print(f"containerized rank exited {took:.1f} s after the heartbeat stopped")
        assert code == EXIT_CODE, _docker("logs", name).stderr
        assert took < 10
    finally:
        heartbeat.stop()
        _docker("rm", "-f", name)
    m = json.loads((tmp_path / "measurement.json").read_text())
    assert m["complete"] is False and "lost its supervisor" in m["error"]
    assert len([s for s in m["steps"] if s["phase"] == "measurement"]) >= 2


def test_trainbench_run_in_docker_killed_with_sigkill_leaves_no_rank_running(engine: Any, tmp_path: Path) -> None:
    """The whole path a user takes: ``trainbench run --runtime docker`` dies by SIGKILL; its container's rank stops."""
    from tests.faults.helpers import start_run
    from tests.run.test_orphans import rank_processes

    if not engine.images.list(name="trainbench-cpu"):
        _skip_or_fail("image trainbench-cpu is not built here; run `make images` to run the container tests")
    out = tmp_path / "o"
    run = start_run(tmp_path, "--set", "measure_steps=100000", "--set", "precision=fp32", "--runtime", "docker")

    def containers() -> list[Any]:
        found = engine.containers.list(filters={"label": "org.trainbench.workload"})
        return [c for c in found if c.labels.get("org.trainbench.run-dir", "").startswith(str(out))]

    try:
        deadline = time.monotonic() + 300
        while sum(p.read_text().count('"measurement"') for p in out.rglob("progress.jsonl")) < 2:
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.2)
        assert containers(), "the rank runs in its container before the supervisor is killed"
        run.kill()  # SIGKILL: no clean-up runs in trainbench
        killed = time.monotonic()
        run.communicate()
        while containers() or rank_processes(str(out)):
            assert time.monotonic() - killed < 60, "the containerized rank outlived its supervisor by a minute"
            time.sleep(0.1)
        took = time.monotonic() - killed
    finally:
        if run.poll() is None:
            run.kill()
        for c in containers():
            c.remove(force=True)
    print(f"containerized rank (trainbench run --runtime docker) gone {took:.1f} s after the supervisor's SIGKILL")
    assert took < 10
    [measurement] = list(out.rglob("measurement.json"))
    m = json.loads(measurement.read_text())
    assert m["complete"] is False and "lost its supervisor" in m["error"]
