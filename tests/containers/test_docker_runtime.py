"""The CPU image and ``trainbench run --runtime docker`` against a real engine and the real image."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from suite.containers.images import LABEL_INPUTS, LABEL_LOCK, get_image, lock_digest, oci_metadata
from suite.results import read_result
from tests.conftest import REPO, TINY_RUN, trainbench


def _leftover_containers(engine: Any, run_root: Path) -> list[Any]:
    found = engine.containers.list(all=True, filters={"label": "org.trainbench.workload"})
    return [c for c in found if c.labels.get("org.trainbench.run-dir", "").startswith(str(run_root))]


def test_cpu_image_is_labelled_non_root_and_runs_trainbench(engine: Any, cpu_image: Any) -> None:
    labels = cpu_image.labels
    meta = oci_metadata(REPO)
    assert labels["org.opencontainers.image.version"] == meta["VERSION"]
    # An image is reused by its inputs digest, so its SOURCE/REVISION labels are those of the
    # checkout that first built it (another clone of the same inputs reuses it unchanged).
    revision = labels["org.opencontainers.image.revision"]
    assert revision not in ("", "unknown")
    assert labels["org.opencontainers.image.source"].strip()
    assert labels[LABEL_LOCK] == lock_digest(get_image("trainbench-cpu"), REPO)
    assert len(labels[LABEL_INPUTS]) == 64
    config = cpu_image.attrs["Config"]
    uid = config["User"].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, config["User"]
    assert config["Entrypoint"] == ["trainbench"]
    # the entrypoint is the CLI; the extra CA bundle never reached the final image; the locked set is consistent
    out = engine.containers.run(cpu_image.id, ["--version"], remove=True).decode()
    assert f"trainbench, version {meta['VERSION']}" in out
    script = "test ! -e /tmp/ca && id -u && python -m pip check && python -c 'import torch; print(torch.__version__)'"
    out = engine.containers.run(cpu_image.id, ["-c", script], entrypoint="sh", remove=True).decode()
    assert out.split()[0] == uid and "No broken requirements" in out and "2.14.1" in out


def test_second_build_reuses_the_image(cpu_image: Any) -> None:
    t0 = time.monotonic()
    proc = trainbench("images", "build", "trainbench-cpu", cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"reusing image {cpu_image.id}" in proc.stdout
    assert time.monotonic() - t0 < 60


def test_docker_run_writes_the_result_and_mlflow_run_on_the_host(engine: Any, cpu_image: Any, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    out = tmp_path / "out"
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--runtime",
        "docker",
        "--cpuset-cpus",
        "0",
        "--memory",
        "3g",
        "--shm-size",
        "256m",
        "--output-dir",
        str(out),
        "--tracking-uri",
        uri,
        "--system",
        "docker-box",
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [path] = sorted(out.rglob("result.json"))
    result = read_result(path)
    assert result.status == "complete" and result.runtime.kind == "docker"
    assert result.runtime.image == "trainbench-cpu:latest" and result.runtime.image_id == cpu_image.id
    assert result.runtime.command[:4] == [result.runtime.command[0], "run", "--rm", "--init"]
    container = result.environment["container"]
    assert container["in_container"] is True and container["image"] == "trainbench-cpu:latest"
    assert container["cgroup_cpus"] == "0" and int(container["cgroup_memory_limit"]) == 3 * 2**30
    assert result.environment["binding"]["cpus_allowed"] == [0]
    assert result.summary is not None and result.summary.measured_steps >= 3
    assert result.workload_info["parameters"] > 20_000_000
    run = MlflowClient(tracking_uri=uri).search_runs(
        [MlflowClient(tracking_uri=uri).get_experiment_by_name("resnet50-cpu").experiment_id]  # type: ignore[union-attr]
    )[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["trainbench.runtime"] == "docker"
    assert run.data.tags["trainbench.image"] == "trainbench-cpu:latest"
    assert run.data.metrics["throughput_samples_per_s"] == pytest.approx(result.summary.throughput)
    assert not _leftover_containers(engine, out), "the container must be removed after the run"


def _tiny_docker_run(cwd: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``trainbench run resnet50-cpu`` (tiny settings plus ``extra``) in the container, untracked."""
    args = ["run", "resnet50-cpu", *TINY_RUN, *extra, "--runtime", "docker", "--output-dir", str(out), "--no-tracking"]
    return trainbench(*args, cwd=cwd, timeout=600)


def test_a_failure_inside_the_container_propagates_its_exit_code(engine: Any, cpu_image: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "o"
    proc = _tiny_docker_run(tmp_path, out, "--set", "data=imagefolder", "--set", f"data_dir={empty}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "not a usable ImageFolder" in proc.stderr
    [kept] = sorted(out.rglob("result-incomplete.json"))
    result = read_result(kept)
    assert result.status == "incomplete" and result.runtime.kind == "docker"
    assert f"{empty}:{empty}:ro" in " ".join(result.runtime.command), "data_dir is mounted read-only"
    assert not _leftover_containers(engine, out)


def test_out_of_memory_inside_the_container_is_named(engine: Any, cpu_image: Any, tmp_path: Path) -> None:
    """A real OOM kill under ``--memory``: docker reports 137 (128 + SIGKILL), the runner says why."""
    out = tmp_path / "o"
    proc = _tiny_docker_run(tmp_path, out, "--set", "batch_size=32", "--set", "image_size=224", "--memory", "700m")
    assert proc.returncode == 137, proc.stdout + proc.stderr  # the container's exit status propagates
    text = " ".join(proc.stderr.split())
    assert "exited with code 137 (128 + SIGKILL" in text and "out-of-memory killer" in text, text
    assert not list(out.rglob("result.json")), "an OOM-killed run never produces a valid result"
    assert not _leftover_containers(engine, out)


def test_missing_image_says_how_to_build_it(engine: Any, tmp_path: Path) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        "--runtime",
        "docker",
        "--image",
        "trainbench-cpu:no-such-tag",
        "--no-tracking",
        "--output-dir",
        str(tmp_path / "o"),
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2
    text = " ".join(proc.stderr.split())
    assert "image trainbench-cpu:no-such-tag is not in the Docker engine" in text and "make images" in text
    assert not (tmp_path / "o").exists()


def test_ctrl_c_reaches_the_rank_in_the_container(engine: Any, cpu_image: Any, tmp_path: Path) -> None:
    out = tmp_path / "o"
    exe = Path(sys.executable).parent / "trainbench"
    args = [
        str(exe),
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "measure_seconds=600",
        "--runtime",
        "docker",
        "--output-dir",
        str(out),
        "--no-tracking",
    ]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        progress = list(out.rglob("progress.jsonl"))
        if progress and '"measurement"' in progress[0].read_text():
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"the run never reached its measurement window: {proc.communicate()}")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 130, stderr
    [kept] = sorted(out.rglob("result-incomplete.json"))
    result = read_result(kept)
    assert result.runtime.kind == "docker" and len(result.steps) >= 2
    assert "interrupted" in (result.error or "")
    deadline = time.monotonic() + 30
    while _leftover_containers(engine, out) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _leftover_containers(engine, out)
    assert json.loads(kept.read_text())["runtime"]["image_id"] == cpu_image.id
