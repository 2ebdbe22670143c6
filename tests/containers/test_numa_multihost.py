"""numa-ddp across two "hosts": two containers on a Docker network, one core each, torchrun c10d over TCP.

Each container runs the same command a user runs on each real host
(`trainbench run numa-ddp --set nnodes=2 --set rdzv_endpoint=HOST0:29400`); the
rendezvous assigns global ranks, and the host that gets global rank 0 writes the
result with every rank's records, gathered over the process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from suite.results import read_result

if len(os.sched_getaffinity(0)) < 2:
    pytest.skip("two CPUs are needed for two one-core hosts", allow_module_level=True)

RUN = [
    "run",
    "numa-ddp",
    "--set",
    "nnodes=2",
    "--set",
    "rdzv_endpoint=h0:29400",
    "--set",
    "compare_single=false",
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
    "repeats=1",
    "--set",
    "startup_timeout_s=300",
    "--no-tracking",
    "--output-dir",
    "/out",
]


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def test_two_containers_train_as_two_hosts(cpu_image: Any, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    net = f"tb-mh-{tag}"
    assert _docker("network", "create", net).returncode == 0
    names = [f"tb-mh-{tag}-h{i}" for i in range(2)]
    outs = [tmp_path / f"h{i}" for i in range(2)]
    try:
        for i, (name, out) in enumerate(zip(names, outs, strict=True)):
            out.mkdir()
            out.chmod(0o777)  # the image's non-root user writes here
            started = _docker(
                "run",
                "-d",
                "--name",
                name,
                "--hostname",
                f"h{i}",
                "--network",
                net,
                "--network-alias",
                f"h{i}",
                "--cpuset-cpus",
                str(i),
                "--shm-size",
                "1g",
                "-v",
                f"{out}:/out",
                cpu_image.id,
                *RUN,
            )
            assert started.returncode == 0, started.stderr
        codes = [int(_docker("wait", n, timeout=600).stdout.strip()) for n in names]
        logs = [_docker("logs", n).stdout + _docker("logs", n).stderr for n in names]
        assert codes == [0, 0], "\n\n".join(logs)
    finally:
        for n in names:
            _docker("rm", "-f", n)
        _docker("network", "rm", net)
    results = [p for out in outs for p in out.rglob("result.json")]
    assert len(results) == 1, "exactly one host (the one with global rank 0) writes the result"
    result = read_result(results[0])
    assert result.world_size == 2 and {s.rank for s in result.steps} == {0, 1}
    hosts = {e["rank"]: e for e in result.environment["ranks"]}
    assert {hosts[0]["hostname"], hosts[1]["hostname"]} == {"h0", "h1"}
    # each "host" is one core: the rank's binding, read back inside its container, is that core
    for e in hosts.values():
        assert len(e["binding"]["cpus_allowed"]) == 1 and e["torch_threads"] == 1
    assert result.summary is not None and result.summary.throughput > 0
    other = next(out for out in outs if not list(out.rglob("result.json")))
    assert not list(other.rglob("result-incomplete.json"))
    assert json.loads(results[0].read_text())["config"]["launch"]["nnodes"] == 2
