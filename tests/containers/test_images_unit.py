"""Build contexts, the reuse key and the ``docker run`` command, checked without an engine."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from suite.containers.errors import ContainerError
from suite.containers.images import (
    IMAGES,
    UnknownImageError,
    context_files,
    get_image,
    inputs_digest,
    oci_metadata,
    with_parents,
)
from suite.launchers import plan_launch
from suite.runtimes.docker_args import (
    DockerRunOptions,
    container_command,
    docker_run_command,
    image_reference,
    run_as,
)
from suite.specs import load_specs, resolve
from tests.conftest import REPO


def test_every_workload_spec_names_a_registered_image() -> None:
    for name, spec in load_specs().items():
        assert spec.image in IMAGES, f"{name} names image {spec.image!r}; images: {sorted(IMAGES)}"


def test_image_order_puts_parents_first_and_unknown_names_list_the_valid_ones() -> None:
    assert [i.name for i in with_parents(["trainbench-gpu"])] == ["trainbench-cpu", "trainbench-gpu"]
    assert [i.name for i in with_parents(["trainbench-cpu", "trainbench-cpu"])] == ["trainbench-cpu"]
    assert [i.name for i in with_parents([])] == ["trainbench-cpu", "trainbench-gpu", "trainbench-tf"]
    with pytest.raises(UnknownImageError, match="trainbench-cpu, trainbench-gpu"):
        get_image("trainbench-tpu")


def test_cpu_context_holds_the_sources_and_no_caches() -> None:
    names = [n for n, _ in context_files(get_image("trainbench-cpu"), REPO)]
    assert {
        "containers/cpu/Dockerfile",
        "containers/tools.lock",
        "containers/requirements.lock",
        "pyproject.toml",
        "suite/commands/__init__.py",
    } <= set(names)
    assert "workloads/rank.py" in names and "harness/loop.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or n.startswith(("tests/", ".venv"))]
    gpu = [n for n, _ in context_files(get_image("trainbench-gpu"), REPO)]
    assert {"containers/tools.lock", "containers/gpu/requirements.lock"} <= set(gpu)
    assert not [n for n in gpu if n.startswith("suite/")]


def _copy_sources(dst: Path) -> Path:
    for entry in get_image("trainbench-cpu").context:
        src = REPO / entry
        if src.is_dir():
            shutil.copytree(src, dst / entry, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (dst / entry).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst / entry)
    return dst


def test_inputs_digest_follows_sources_base_and_build_args(tmp_path: Path) -> None:
    root = _copy_sources(tmp_path / "repo")
    image = get_image("trainbench-cpu")
    base1 = {"BASE_IMAGE": "sha256:base1"}
    digest = inputs_digest(image, base1, root)
    assert inputs_digest(image, dict(base1), root) == digest  # deterministic
    (root / "tests").mkdir()
    (root / "tests" / "test_new.py").write_text("x = 1\n")  # not in the context: no rebuild
    assert inputs_digest(image, base1, root) == digest
    assert inputs_digest(image, {"BASE_IMAGE": "sha256:base2"}, root) != digest
    assert inputs_digest(image, {**base1, "PIP_INDEX_URL": "https://mirror/simple"}, root) != digest
    cli = root / "suite" / "commands" / "__init__.py"
    cli.write_text(cli.read_text() + "\n# changed\n")
    assert inputs_digest(image, base1, root) != digest


def test_oci_metadata_names_version_revision_and_source() -> None:
    meta = oci_metadata(REPO)
    assert meta["VERSION"] != "unknown" and meta["SOURCE"]
    assert meta["REVISION"] == "unknown" or len(meta["REVISION"].removesuffix("-dirty")) == 40


def test_rank_command_runs_through_the_image_entrypoint(tmp_path: Path) -> None:
    config = resolve("resnet50-cpu", None, ["allocator=default"])
    plan = plan_launch(config.launch, tmp_path / "job.json", tmp_path / "m.json", tmp_path / "p.jsonl")
    entrypoint, args = container_command(plan, sys.executable)
    assert entrypoint is None
    assert args == [
        "rank",
        "--job",
        str(tmp_path / "job.json"),
        "--out",
        str(tmp_path / "m.json"),
        "--progress",
        str(tmp_path / "p.jsonl"),
    ]
    run_cpu = resolve("resnet50-cpu", None, ["launcher=run_cpu"])
    plan = plan_launch(run_cpu.launch, tmp_path / "job.json", tmp_path / "m.json")
    entrypoint, args = container_command(plan, sys.executable)
    assert entrypoint == "python" and args[:2] == ["-m", "torch.backends.xeon.run_cpu"]
    assert sys.executable not in args and args[args.index("--no-python") + 1] == "python"


def test_docker_run_command_shares_the_run_dir_and_applies_the_options(tmp_path: Path) -> None:
    config = resolve("resnet50-cpu", None, ["omp_num_threads=2"])
    run_dir = tmp_path / "run"
    plan = plan_launch(config.launch, run_dir / "job.json", run_dir / "m.json", run_dir / "p.jsonl")
    options = DockerRunOptions(cpuset_cpus="0-1", memory="3g", shm_size="256m", gpus="device=0")
    cmd = docker_run_command(
        docker_exe="/usr/bin/docker",
        plan=plan,
        run_dir=run_dir,
        image_id="sha256:abc",
        image_ref="trainbench-cpu:latest",
        options=options,
        name="trainbench-x",
        user="1000:1000",
        read_only=[tmp_path / "data"],
        labels={"k": "v"},
        host_env={
            "OMP_PROC_BIND": "close",
            "THP_MEM_ALLOC_ENABLE": "1",
            "LD_PRELOAD": "/host/lib.so",
            "HOME": "/root",
            "TRAINBENCH_CACHE": "/c",
        },
    )
    joined = " ".join(cmd)
    assert cmd[:5] == ["/usr/bin/docker", "run", "--rm", "--init", "--name"]
    assert (
        f"--volume {run_dir}:{run_dir}:rw" in joined
        and f"--volume {tmp_path / 'data'}:{tmp_path / 'data'}:ro" in joined
    )
    for flag in ("--cpuset-cpus 0-1", "--memory 3g", "--memory-swap 3g", "--shm-size 256m", "--gpus device=0"):
        assert flag in joined
    assert "--user 1000:1000 --env HOME=/tmp" in joined and "--label k=v" in joined
    assert "--env OMP_NUM_THREADS=2" in joined and "--env OMP_PROC_BIND=close" in joined
    assert "--env THP_MEM_ALLOC_ENABLE=1" in joined  # torch's huge pages: ~7% of a CPU step's time
    assert "--env TRAINBENCH_IMAGE=trainbench-cpu:latest" in joined
    assert "LD_PRELOAD" not in joined and "HOME=/root" not in joined and "TRAINBENCH_CACHE" not in joined
    rank_args = ["--job", str(run_dir / "job.json"), "--out", str(run_dir / "m.json"), "--progress"]
    assert cmd[cmd.index("sha256:abc") + 1 :] == ["rank", *rank_args, str(run_dir / "p.jsonl")]


def test_user_mapping_and_image_references() -> None:
    assert run_as("10001:10001", 1000, 1000).user == "1000:1000"
    root = run_as("10001:10001", 0, 0)
    assert root.user is None and root.chown == (10001, 10001)
    assert run_as("", 0, 0).chown is None
    with pytest.raises(ContainerError, match="numeric USER"):
        run_as("trainbench", 0, 0)
    assert image_reference("trainbench-cpu") == "trainbench-cpu:latest"
    assert image_reference("registry:5000/trainbench-cpu") == "registry:5000/trainbench-cpu:latest"
    assert image_reference("trainbench-cpu:abc123") == "trainbench-cpu:abc123"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (DockerRunOptions(cpuset_cpus="0-a"), "--cpuset-cpus"),
        (DockerRunOptions(memory="lots"), "--memory"),
        (DockerRunOptions(shm_size="1 g"), "--shm-size"),
        (DockerRunOptions(gpus="some"), "--gpus"),
        (DockerRunOptions(mounts=(Path("/nonexistent/dataset"),)), "--mount"),
    ],
)
def test_bad_docker_options_are_refused_with_the_syntax(options: DockerRunOptions, message: str) -> None:
    with pytest.raises(ContainerError, match=message):
        options.validate()


def test_mounting_the_engine_socket_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Docker socket goes into a workload's container, directly or through a parent directory."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(run_dir / "docker.sock"))
        monkeypatch.setenv("DOCKER_HOST", f"unix://{run_dir / 'docker.sock'}")
        for mount in (run_dir / "docker.sock", run_dir, tmp_path):
            with pytest.raises(ContainerError, match="Docker engine's socket"):
                DockerRunOptions(mounts=(mount,)).validate()
        DockerRunOptions(mounts=(data,)).validate()  # a dataset directory is fine


def test_gpu_dockerfile_shares_the_cpu_deps_stage() -> None:
    """The engine's layer cache shares the torch venv between the images only if the stages match."""

    def deps_stage(path: str) -> str:
        text = (REPO / path).read_text()
        start = text.index("FROM ${BASE_IMAGE} AS deps")
        return text[start : text.index("\nFROM ", start + 1)].split("\n\n")[0]

    cpu = deps_stage("containers/cpu/Dockerfile")
    assert "--require-hashes" in cpu and "requirements.lock" in cpu
    assert deps_stage("containers/gpu/Dockerfile") == cpu


def test_the_build_log_says_how_long_each_dockerfile_step_took() -> None:
    """The engine's (legacy builder's) stream, as docker-py decodes it: each step's time is logged after it."""
    from suite.containers.build import _stream

    chunks: list[dict[str, Any]] = [
        {"stream": "Step 1/3 : FROM python:3.11-slim AS deps"},
        {"stream": "\n"},
        {"stream": " ---> 1a2b3c\n"},
        {"stream": "Step 2/3 : RUN pip install --require-hashes -r /tmp/requirements.lock\n"},
        {"stream": " ---> Running in 4d5e6f\n"},
        {"status": "Downloading", "progressDetail": {"current": 1}},
        {"stream": "Step 3/3 : LABEL org.opencontainers.image.title=trainbench-cpu\n"},
        {"aux": {"ID": "sha256:feed"}},
        {"stream": "Successfully built feed\n"},
    ]
    times = iter([0.0, 0.5, 0.5, 125.3, 125.3, 125.4])  # step 1 starts, ends; step 2 starts, ...
    lines: list[str] = []
    image_id, error, tail = _stream(iter(chunks), lines.append, clock=lambda: next(times))
    assert (image_id, error) == ("sha256:feed", None)
    steps = [line for line in lines if line.startswith("step ")]
    assert steps == [
        "step 1/3: 0.5 s (FROM python:3.11-slim AS deps)\n",
        "step 2/3: 124.8 s (RUN pip install --require-hashes -r /tmp/requirements.lock)\n",
        "step 3/3: 0.1 s (LABEL org.opencontainers.image.title=trainbench-cpu)\n",
    ]
    assert tail[-1] == "Successfully built feed"
