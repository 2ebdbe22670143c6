"""The images' lock files: complete, hash-pinned, and in step with their inputs (no engine needed)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from suite.containers.lock import LOCKS, LockError, check_lock, inputs_sha256, locked_packages, recorded_inputs
from tests.conftest import REPO


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_committed_lock_matches_its_inputs(name: str) -> None:
    """Fails when pyproject's dependencies (or requirements.in) change without `make lock`."""
    check_lock(LOCKS[name], REPO)


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_every_locked_package_is_pinned_with_sha256_hashes(name: str) -> None:
    text = (REPO / LOCKS[name].path).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 4)[-1])
    requirements = [e for e in entries if e.strip() and not e.startswith("#")]
    minimum = 1 if name == "tools" else 6  # tools.lock pins uv alone; the image locks pin whole environments
    assert len(requirements) == len(locked_packages(REPO / LOCKS[name].path)) >= minimum
    for entry in requirements:
        first = entry.splitlines()[0]
        assert re.match(r"^[A-Za-z0-9._-]+(\[[^\]]*\])?==\S+", first), f"not pinned with ==: {first}"
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), f"no sha256 hash: {first}"


def test_cpu_lock_pins_what_pyproject_pins() -> None:
    """The image gets the torch/torchvision pair pyproject.toml pins (the pair that runs on CPU here)."""
    pinned = locked_packages(REPO / LOCKS["cpu"].path)
    text = (REPO / "pyproject.toml").read_text()
    for pkg in ("torch", "torchvision"):
        version = re.search(rf'"{pkg}==([^"]+)"', text)
        assert version is not None
        assert pinned[pkg] == version.group(1)
    assert {"setuptools", "wheel", "docker", "mlflow"} <= set(pinned)


def test_gpu_lock_agrees_with_the_cpu_lock() -> None:
    """The GPU image adds packages on top of the CPU image: shared packages must have one version."""
    cpu = locked_packages(REPO / LOCKS["cpu"].path)
    gpu = locked_packages(REPO / LOCKS["gpu"].path)
    assert {"horovod", "nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-cccl"} <= set(gpu)
    assert gpu["horovod"] == "0.28.1"
    for name in set(cpu) & set(gpu):
        assert gpu[name] == cpu[name], name


def test_a_changed_dependency_makes_the_lock_stale(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "containers" / "gpu").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    for lock in LOCKS.values():
        (root / lock.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / lock.path, root / lock.path)
    shutil.copy(REPO / "containers/gpu/requirements.in", root / "containers/gpu/requirements.in")
    check_lock(LOCKS["cpu"], root)
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(text.replace('    "pyyaml>=6",\n', '    "pyyaml>=6",\n    "tqdm>=4",\n', 1))
    assert inputs_sha256(LOCKS["cpu"], root) != recorded_inputs(root / LOCKS["cpu"].path)
    with pytest.raises(LockError, match=r"stale.*make lock"):
        check_lock(LOCKS["cpu"], root)
    # the GPU lock is resolved against the CPU lock, so a new CPU lock makes it stale too
    (root / LOCKS["cpu"].path).write_text((root / LOCKS["cpu"].path).read_text() + "# regenerated\n")
    with pytest.raises(LockError, match="stale"):
        check_lock(LOCKS["gpu"], root)


def test_a_missing_lock_says_how_to_make_it(tmp_path: Path) -> None:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with pytest.raises(LockError, match=r"missing.*make lock"):
        check_lock(LOCKS["cpu"], tmp_path)
