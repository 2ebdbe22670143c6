"""Clear errors and exit status 2 before anything runs: no engine, bad options, bad names (no engine needed)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TINY_RUN, trainbench


def _no_engine(tmp_path: Path) -> dict[str, str]:
    return {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}


def test_images_build_without_an_engine_says_where_it_looked(tmp_path: Path) -> None:
    proc = trainbench("images", "build", "trainbench-cpu", cwd=tmp_path, env=_no_engine(tmp_path), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    text = " ".join(proc.stderr.split())
    assert f"unix://{tmp_path}/no-engine.sock (from DOCKER_HOST)" in text
    assert "RUNTIME=local" in text and "Traceback" not in proc.stderr


def test_docker_run_without_an_engine_fails_before_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--runtime",
        "docker",
        "--output-dir",
        str(out),
        "--no-tracking",
        cwd=tmp_path,
        env=_no_engine(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no Docker engine is reachable" in proc.stderr and "RUNTIME=local" in " ".join(proc.stderr.split())
    assert not out.exists()


def test_docker_options_with_the_local_runtime_are_a_usage_error(tmp_path: Path) -> None:
    proc = trainbench("run", "resnet50-cpu", "--memory", "4g", "--cpuset-cpus", "0", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert "--cpuset-cpus, --memory apply to --runtime docker only" in " ".join(proc.stderr.split())


def test_bad_docker_option_values_fail_before_connecting(tmp_path: Path) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        "--runtime",
        "docker",
        "--memory",
        "lots",
        cwd=tmp_path,
        env=_no_engine(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 2 and "--memory 'lots': expected a size such as 512m or 8g" in proc.stderr


def test_unknown_image_and_bad_ca_bundle_are_refused(tmp_path: Path) -> None:
    proc = trainbench("images", "build", "trainbench-tpu", cwd=tmp_path, env=_no_engine(tmp_path), timeout=120)
    assert proc.returncode == 2 and "images: trainbench-cpu, trainbench-gpu" in proc.stderr
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("hello\n")
    proc = trainbench("images", "build", "--ca-bundle", str(not_pem), cwd=tmp_path, env=_no_engine(tmp_path))
    assert proc.returncode == 2 and "holds no PEM certificate" in proc.stderr
    proc = trainbench("images", "build", "--build-arg", "NOVALUE", cwd=tmp_path, env=_no_engine(tmp_path))
    assert proc.returncode == 2 and "expected KEY=VALUE" in proc.stderr
