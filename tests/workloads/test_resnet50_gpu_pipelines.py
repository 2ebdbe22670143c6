"""The GPU workload's input pipelines feed the step the same tensors, from the same files with the same
labels; the parameters resolve old and new spellings; the DataLoader refuses what would not fit in memory.
Everything here runs on CPU (DALI's CPU backend where DALI is installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from pydantic import ValidationError

from workloads.checks import WorkloadRefused
from workloads.image_files import list_images
from workloads.resnet50_gpu.params import ResNet50GPUParams
from workloads.resnet50_gpu.pipelines import Augment, Finisher, build_feed
from workloads.resnet50_gpu.pipelines.dataloader import LoaderMemoryError, check_memory, loader_memory

SIZE = 32
WHOLE = Augment(SIZE, area=(1.0, 1.0), ratio=(4 / 3, 4 / 3))
"""Crops that are the whole 64x48 image: every pipeline's output is then fixed up to the flip."""
HAVE_DALI = importlib.util.find_spec("nvidia") is not None and importlib.util.find_spec("nvidia.dali") is not None


@pytest.fixture
def even_tree(tmp_path: Path) -> Path:
    """2 classes x 4 smooth 64x48 JPEGs (one aspect ratio), each image its own colours."""
    root = tmp_path / "tree"
    yy, xx = np.mgrid[0:48, 0:64].astype(np.float32)
    for c, name in enumerate(("n01440764", "n01443537")):
        (root / name).mkdir(parents=True)
        for i in range(4):
            k = 4 * c + i
            rgb = [20 + 25 * k + xx, 200 - 20 * k + yy, 60 + 10 * k + 0.5 * (xx + yy)]
            pixels = np.clip(np.stack(rgb, axis=-1), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / name / f"{name}_{i}.JPEG", format="JPEG", quality=95)
    return root


def _first_batch(params: dict[str, object], augment: Augment = WHOLE) -> tuple[torch.Tensor, torch.Tensor]:
    p = ResNet50GPUParams.model_validate({"device": "cpu", "image_size": SIZE, "batch_size": 8, **params})
    feed = build_feed(p, torch.device("cpu"), torch.channels_last, rank=0, world_size=1, ranks_here=1, augment=augment)
    return next(feed.batches)


def _tf_first_batch(tree: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """The tf.data service's dataset graph run in this process (the service runs the same graph remotely)."""
    from workloads.mnist_dataheavy import tf_pipeline as tp
    from workloads.resnet50_gpu.pipelines.tfdata import jpeg_dataset

    ds = tp.local_dataset(jpeg_dataset(list_images(tree), WHOLE, 8, 1), threads=1, prefetch=0)
    nhwc, labels = next(iter(tp.TfBatches(ds, pin_memory=False)))
    return Finisher(torch.device("cpu"), torch.channels_last)(nhwc.permute(0, 3, 1, 2), labels)


def _signature(x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Per image: label and channel means (a flip does not change them), sorted: one row per file."""
    rows = torch.cat([y[:, None].double(), x.double().mean(dim=(2, 3))], dim=1).numpy()
    return rows[np.lexsort((rows[:, 1], rows[:, 0]))]


def _assert_step_tensors(x: torch.Tensor, y: torch.Tensor) -> None:
    assert x.shape == (8, 3, SIZE, SIZE) and x.dtype == torch.float32
    assert x.is_contiguous(memory_format=torch.channels_last)
    assert y.shape == (8,) and y.dtype == torch.int64
    lo = min((0 - m) / s for m, s in zip((0.485, 0.456, 0.406), (0.229, 0.224, 0.225), strict=True))
    hi = max((1 - m) / s for m, s in zip((0.485, 0.456, 0.406), (0.229, 0.224, 0.225), strict=True))
    assert lo - 1e-4 <= float(x.min()) and float(x.max()) <= hi + 1e-4


def test_every_pipeline_feeds_the_same_tensors(even_tree: Path) -> None:
    """Same shape, dtype, layout, normalisation and labels; with whole-image crops the same images."""
    x, y = _first_batch({"input_pipeline": "dataloader", "data_dir": str(even_tree), "num_workers": 0})
    _assert_step_tensors(x, y)
    reference = _signature(x, y)
    assert sorted(y.tolist()) == [0, 0, 0, 0, 1, 1, 1, 1], "one epoch: every file once"
    others = {"tfdata-service graph": _tf_first_batch(even_tree)}
    if HAVE_DALI:
        others["dali"] = _first_batch({"input_pipeline": "dali", "data_dir": str(even_tree), "num_workers": 1})
    for name, (xo, yo) in others.items():
        _assert_step_tensors(xo, yo)
        # means agree within 0.6 grey levels (measured: 0.1; the libraries' antialiased resizes differ slightly)
        np.testing.assert_allclose(_signature(xo, yo), reference, atol=0.01, err_msg=name)
    xs, ys = _first_batch({})  # synthetic: random pixels through the same finish
    _assert_step_tensors(xs, ys)
    if not HAVE_DALI:
        pytest.skip("DALI is not installed (make venv-dali); the other pipelines were compared")


def test_random_crops_differ_but_stay_in_range(even_tree: Path) -> None:
    x, y = _first_batch({"input_pipeline": "dataloader", "data_dir": str(even_tree), "num_workers": 1})
    _assert_step_tensors(x, y)
    x2, _ = _first_batch({"input_pipeline": "dataloader", "data_dir": str(even_tree), "num_workers": 1}, Augment(SIZE))
    assert not torch.equal(x, x2), "the ImageNet augmentation crops at random"


def test_old_and_new_spellings_resolve_and_contradictions_say_the_fix() -> None:
    old = ResNet50GPUParams.model_validate({"data": "imagefolder", "data_dir": "/d"})
    assert old.input_pipeline == "dataloader" and old.data == "imagefolder"
    new = ResNet50GPUParams.model_validate({"input_pipeline": "dali", "data_dir": "/d"})
    assert new.data == "imagefolder"
    assert ResNet50GPUParams.model_validate({}).input_pipeline == "synthetic"
    for values, message in (
        ({"data": "synthetic", "input_pipeline": "dali", "data_dir": "/d"}, "data=synthetic contradicts"),
        ({"input_pipeline": "dataloader"}, "needs data_dir"),
        ({"input_pipeline": "tfdata-service", "data_dir": "/d"}, "needs data_service=HOST:PORT"),
        ({"data_service": "h:1"}, "applies to input_pipeline=tfdata-service only"),
        ({"input_pipeline": "ffcv"}, "'synthetic', 'dataloader', 'dali' or 'tfdata-service'"),
    ):
        with pytest.raises(ValidationError, match=message):
            ResNet50GPUParams.model_validate(values)


def test_a_loader_that_would_not_fit_is_refused_before_any_worker_starts() -> None:
    batch = 256 * 3 * 224 * 224  # one uint8 ImageNet batch: 38.5 MB (a float32 one: 154 MB)
    assert loader_memory(batch, workers=15, prefetch=2) == 15 * (2 * batch + 256 * 2**20) + 2 * batch
    plan = check_memory(2, 32, workers=1, prefetch=2, ranks_here=1)
    assert plan["planned_bytes"] < plan["available_bytes"]
    with pytest.raises(LoaderMemoryError, match=r"lower num_workers, prefetch or batch_size") as info:
        check_memory(65536, 1024, workers=4, prefetch=2, ranks_here=1)  # 206 GB per batch
    assert isinstance(info.value, WorkloadRefused) and "GiB available" in str(info.value)
