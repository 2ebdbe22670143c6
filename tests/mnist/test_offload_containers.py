"""Offloaded preprocessing across containers: a dispatcher and workers in their own containers on a docker
network, pinned with cpusets to CPUs the trainer's container does not get ("extra CPU machines", simulated).

Uses the trainbench-cpu image of this checkout (tests/containers' fixtures: skipped without an engine or
image, failed in CI). ``TRAINBENCH_OFFLOAD_IMAGE`` names another image to use instead. The image must carry
TensorFlow (trainbench's ``offload`` extra).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from suite.containers.errors import ImageMissingError
from suite.containers.service import ContainerService
from suite.datasets.service import READY
from suite.results import read_result
from tests.conftest import trainbench
from tests.containers.conftest import _skip_or_fail, cpu_image, engine
from tests.mnist.test_runs import TINY

__all__ = ["cpu_image", "engine"]  # fixtures used below


@pytest.fixture
def offload_image(engine: Any, request: pytest.FixtureRequest) -> Any:
    """The image to run (this checkout's trainbench-cpu, or TRAINBENCH_OFFLOAD_IMAGE), with TensorFlow in it."""
    name = os.environ.get("TRAINBENCH_OFFLOAD_IMAGE")
    image = engine.images.get(name) if name else request.getfixturevalue("cpu_image")
    probe = engine.containers.run(
        image, ["-c", "import tensorflow"], entrypoint="python", network_mode="none", detach=True
    )
    code = probe.wait(timeout=300)["StatusCode"]
    probe.remove(force=True)
    if code != 0:
        _skip_or_fail(
            f"image {image.tags} has no TensorFlow; the container offload test needs trainbench's offload extra "
            "in the image (lock trainbench[offload] into containers/requirements.lock)"
        )
    return image


def _wait_ready(container: Any, timeout_s: float = 240) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in container.logs(stdout=True, stderr=False).decode(errors="replace").splitlines():
            if line.startswith(READY):
                return str(line)
        container.reload()
        assert container.status in ("created", "running"), container.logs().decode(errors="replace")[-3000:]
        time.sleep(1)
    raise AssertionError(f"{container.name} not ready: {container.logs().decode(errors='replace')[-3000:]}")


@pytest.fixture
def network(engine: Any) -> Iterator[tuple[Any, list[Any]]]:
    """A bridge network and a list that collects the containers to remove afterwards."""
    net = engine.networks.create(f"tb-offload-{uuid.uuid4().hex[:8]}", driver="bridge")
    started: list[Any] = []
    try:
        yield net, started
    finally:
        for c in started:
            c.remove(force=True)
        net.remove()


@pytest.mark.slow
def test_trainer_container_reads_from_pinned_worker_containers(
    offload_image: Any, network: tuple[Any, list[Any]], engine: Any, tmp_path: Path
) -> None:
    net, started = network
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs: one for the trainer, the others for the data service")
    trainer_cpu, service_cpus = cpus[0], cpus[1:]
    tag = net.name
    dispatcher = engine.containers.run(
        offload_image, ["data-service", "dispatcher", "--port", "5050"], name=f"{tag}-dispatcher",
        network=net.name, cpuset_cpus=str(service_cpus[0]), detach=True,
    )  # fmt: skip
    started.append(dispatcher)
    _wait_ready(dispatcher)
    workers = []
    for i, cpu in enumerate(service_cpus):
        name = f"{tag}-worker{i}"
        workers.append(
            engine.containers.run(
                offload_image,
                [
                    "data-service",
                    "worker",
                    "--dispatcher",
                    f"{dispatcher.name}:5050",
                    "--port",
                    "5051",
                    "--advertise",
                    name,
                ],
                name=name,
                hostname=name,
                network=net.name,
                cpuset_cpus=str(cpu),
                detach=True,
            )
        )
        started.append(workers[-1])
    ready = [_wait_ready(w) for w in workers]
    assert [line.split()[-1] for line in ready] == [str(c) for c in service_cpus]  # each worker sees its cpuset

    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)  # the image runs as an unprivileged user
    trainer = engine.containers.run(
        offload_image,
        ["run", "mnist-dataheavy", *TINY, "--set", "input_pipeline=tfdata-service",
         "--set", f"data_service={dispatcher.name}:5050", "--set", "preprocess_repeats=2",
         "--no-tracking", "--output-dir", "/out"],
        name=f"{tag}-trainer", hostname=f"{tag}-trainer", network=net.name, cpuset_cpus=str(trainer_cpu),
        volumes={str(out): {"bind": "/out", "mode": "rw"}}, detach=True,
    )  # fmt: skip
    started.append(trainer)
    code = trainer.wait(timeout=900)["StatusCode"]
    assert code == 0, trainer.logs().decode(errors="replace")[-4000:]
    [path] = sorted(out.rglob("result.json"))
    result = read_result(path)
    prep = result.workload_info["preprocessing"]
    assert prep["placement"] == "remote" and prep["dispatcher"] == f"{dispatcher.name}:5050"
    assert prep["trainer_host"] == f"{tag}-trainer" and prep["trainer_cpus"] == [trainer_cpu]
    assert sorted(p["host"] for p in prep["producers"]) == sorted(w.name for w in workers)
    assert sorted(tuple(p["cpus"]) for p in prep["producers"]) == [(c,) for c in service_cpus]
    assert prep["workers"] == len(workers) and prep["cores"] == len(service_cpus)
    assert result.environment["binding"]["cpus_allowed"] == [trainer_cpu]


@pytest.mark.slow
@pytest.mark.numactl
def test_host_trainer_reads_from_a_container_service_pinned_to_another_cpu(
    offload_image: Any, engine: Any, tmp_path: Path
) -> None:
    """``bench-mnist --service-image``'s point (d): the service in pinned containers, the trainer on the host."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs: one for the trainer, one for the data service")
    image = offload_image.tags[0] if offload_image.tags else offload_image.id
    with ContainerService(image, [str(cpus[-1])], dispatcher_cpus=str(cpus[-1])) as service:
        names = [c.name for c in service._started]
        assert service.address.startswith("127.0.0.1:")
        assert [c for _, c in service.workers] == [[cpus[-1]]]  # the worker saw its cpuset from inside
        proc = trainbench(
            "run", "mnist-dataheavy", *TINY, "--set", "input_pipeline=tfdata-service",
            "--set", f"data_service={service.address}", "--set", "preprocess_repeats=2", "--set", f"cpus={cpus[0]}",
            "--no-tracking", "--output-dir", str(tmp_path / "out"), cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = sorted((tmp_path / "out").rglob("result.json"))
    prep = read_result(path).workload_info["preprocessing"]
    assert prep["dispatcher"] == service.address and prep["workers"] == 1
    assert [p["host"] for p in prep["producers"]] == [n for n in names if "worker" in n]
    assert [p["cpus"] for p in prep["producers"]] == [[cpus[-1]]] and prep["trainer_cpus"] == [cpus[0]]
    left = engine.containers.list(all=True, filters={"label": "org.trainbench.role=data-service"})
    assert not [c for c in left if c.name in names], "the service containers are removed on exit"


def test_container_service_names_a_missing_image(engine: Any) -> None:
    service = ContainerService("trainbench-cpu:no-such-tag", ["0"], "0")
    with pytest.raises(ImageMissingError, match="make images"), service:
        pass


def test_bench_mnist_checks_the_service_image_before_measuring(engine: Any, tmp_path: Path) -> None:
    proc = trainbench(
        "bench-mnist", "--service-image", "trainbench-cpu:no-such-tag", "--output-dir", str(tmp_path / "b"),
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--service-image" in proc.stderr and "make images" in proc.stderr
    assert not (tmp_path / "b").exists(), "nothing is measured when the service image is missing"
