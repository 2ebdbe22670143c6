"""resnet50-tf-horovod without TensorFlow: its parameters, its spec and profiles, the ImageFolder
listing, and that the rank path stays free of torch and TensorFlow until the workload is built."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from suite.specs import ConfigError, get_spec, resolve
from tests.conftest import REPO
from workloads import registry
from workloads.resnet50_tf.files import DataError, list_imagefolder
from workloads.resnet50_tf.params import ResNet50TFParams


def test_defaults_are_horovods_benchmark_settings() -> None:
    p = ResNet50TFParams()
    assert (p.device, p.batch_size, p.precision, p.data, p.image_size, p.num_classes) == (
        "auto",
        32,
        "fp32",
        "synthetic",
        224,
        1000,
    )
    assert (p.lr, p.momentum, p.seed) == (0.01, 0.9, 0)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"batch_sise": 8}, "Extra inputs are not permitted"),
        ({"device": "cuda"}, "'auto', 'cpu' or 'gpu'"),
        ({"precision": "int8"}, "'fp32', 'bf16' or 'fp16'"),
        ({"batch_size": 0}, "greater than or equal to 1"),
        ({"image_size": 16}, "greater than or equal to 32"),
        ({"lr": float("nan")}, "finite number"),
        ({"data": "imagefolder"}, "data=imagefolder needs data_dir"),
        ({"device": "cpu", "precision": "fp16"}, "precision=fp16 needs device=gpu"),
        ({"data_service": "localhost:5050"}, "set data=imagefolder"),
        ({"data": "imagefolder", "data_dir": "/d", "data_service": "grpc://h:1"}, "should match pattern"),
    ],
)
def test_bad_values_are_refused_with_what_to_change(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ResNet50TFParams.model_validate(values)


def test_valid_combinations() -> None:
    p = ResNet50TFParams.model_validate(
        {"data": "imagefolder", "data_dir": "/data", "data_service": "dispatcher-1:5050", "precision": "bf16"}
    )
    assert p.data_service == "dispatcher-1:5050"
    assert ResNet50TFParams.model_validate({"device": "gpu", "precision": "fp16"}).precision == "fp16"


def test_spec_profiles_and_cpu_overrides_resolve() -> None:
    spec = get_spec("resnet50-tf-horovod")
    assert spec.image == "trainbench-tf" and spec.requires_gpu and spec.workload == "resnet50-tf-horovod"
    assert registry.get(spec.workload).params_model is ResNet50TFParams
    quick = resolve("resnet50-tf-horovod")
    assert quick.launch.launcher == "horovodrun" and quick.launch.nproc_per_node == 2
    assert quick.params["image_size"] == 64 and quick.params["batch_size"] == 4
    official = resolve("resnet50-tf-horovod", "official")
    assert official.params["batch_size"] == 256 and official.params["image_size"] == 224
    assert official.launch.launcher == "horovodrun" and official.launch.nproc_per_node is None
    assert official.windows.measure_steps >= 200
    cpu = resolve("resnet50-tf-horovod", overrides=["device=cpu", "nproc_per_node=2", "precision=bf16"])
    assert cpu.params["device"] == "cpu" and cpu.params["precision"] == "bf16"
    with pytest.raises(ConfigError, match="precision=fp16 needs device=gpu"):
        resolve("resnet50-tf-horovod", overrides=["device=cpu", "precision=fp16"])
    with pytest.raises(ConfigError, match="unknown setting"):
        resolve("resnet50-tf-horovod", overrides=["channels_last=true"])


def test_imagefolder_listing(tmp_path: Path) -> None:
    root = tmp_path / "images"
    for cls, names in {
        "dog": ["b.jpg", "a.JPEG", "notes.txt"],
        "cat": ["x.png", "sub/y.jpg"],
        ".hidden": ["z.jpg"],
    }.items():
        for name in names:
            (root / cls / name).parent.mkdir(parents=True, exist_ok=True)
            (root / cls / name).write_bytes(b"not decoded here")
    images = list_imagefolder(root)
    assert images.classes == ("cat", "dog")
    assert [Path(p).relative_to(root.resolve()).as_posix() for p in images.paths] == [
        "cat/sub/y.jpg",
        "cat/x.png",
        "dog/a.JPEG",
        "dog/b.jpg",
    ]
    assert images.labels == (0, 0, 1, 1) and len(images) == 4
    assert [images.shard_size(r, 3) for r in range(3)] == [2, 1, 1]


def test_imagefolder_errors_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is not a directory"):
        list_imagefolder(tmp_path / "missing")
    with pytest.raises(DataError, match="no class sub-directories"):
        list_imagefolder(tmp_path)
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "readme.txt").write_text("x")
    with pytest.raises(DataError, match="holds no image files"):
        list_imagefolder(tmp_path)


BLOCK_HEAVY = """
import importlib.abc, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "tensorflow", "horovod", "keras", "mlflow"):
            raise ImportError(f"{name} is blocked: the rank path must not import it")
        return None

sys.meta_path.insert(0, Block())
import workloads.rank
from workloads import registry
entry = registry.get("resnet50-tf-horovod")
params = entry.params_model.model_validate({"device": "cpu", "batch_size": 2})
print(json.dumps({"names": registry.names(), "batch": params.batch_size}))
"""


def test_rank_path_imports_neither_torch_nor_tensorflow_before_the_build() -> None:
    """The trainbench-tf image has no torch: the rank module, the registry and every workload's
    params must import without it (TensorFlow and Horovod only once the factory runs)."""
    proc = subprocess.run([sys.executable, "-c", BLOCK_HEAVY], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert "resnet50-tf-horovod" in out["names"] and out["batch"] == 2
