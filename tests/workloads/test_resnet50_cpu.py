"""Real ResNet-50 steps on CPU (tiny batches and images), and its data pipelines."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
import torch

from harness.loop import run_plan
from harness.windows import RunPlan, Window
from workloads import registry
from workloads.checks import NonFiniteLossError
from workloads.resnet50_cpu.data import DataError
from workloads.resnet50_cpu.params import ResNet50CPUParams
from workloads.resnet50_cpu.workload import ResNet50CPU


def _params(**kw: object) -> ResNet50CPUParams:
    base: dict[str, object] = {"batch_size": 2, "image_size": 64, "num_classes": 10}
    base.update(kw)
    return ResNet50CPUParams.model_validate(base)


@pytest.mark.parametrize(("precision", "channels_last"), [("fp32", False), ("bf16", True)])
def test_a_real_step_updates_the_weights(precision: str, channels_last: bool) -> None:
    w = ResNet50CPU(_params(precision=precision, channels_last=channels_last, lr=0.1))
    before = w.model.fc.weight.detach().clone()
    batch = next(w.batches())
    assert batch[0].shape == (2, 3, 64, 64)
    assert w.step(batch) == 2
    assert not torch.equal(before, w.model.fc.weight)
    if channels_last:
        assert w.model.conv1.weight.is_contiguous(memory_format=torch.channels_last)


def test_harness_drives_the_workload() -> None:
    w = registry.get("resnet50-cpu").factory(_params())
    m = run_plan(w, RunPlan(Window(1, 0.0), Window(2, 0.0)))
    assert m.complete and [r.samples for r in m.steps] == [2, 2, 2]


def test_divergence_is_an_error_not_a_number() -> None:
    w = ResNet50CPU(_params(precision="fp32", channels_last=False, lr=1e12, momentum=0.9))
    batches = w.batches()
    with pytest.raises(NonFiniteLossError, match="the run is invalid"):
        for _ in range(10):
            w.step(next(batches))


def test_imagefolder_decodes_real_jpegs(jpeg_folder: Path) -> None:
    w = ResNet50CPU(_params(data="imagefolder", data_dir=str(jpeg_folder), batch_size=4))
    info = w.describe()
    assert info["classes"] == 3 and info["dataset_samples"] == 12
    it = w.batches()
    x, y = next(it)
    assert x.shape == (4, 3, 64, 64) and x.dtype == torch.float32
    assert float(x.mean().abs()) < 3.0  # normalized, not raw 0-255 pixels
    assert set(y.tolist()) <= {0, 1, 2}
    for _ in range(5):  # more batches than one epoch holds: the loader cycles
        next(it)


def test_data_errors(tmp_path: Path, jpeg_folder: Path) -> None:
    with pytest.raises(DataError, match="not a directory"):
        ResNet50CPU(_params(data="imagefolder", data_dir=str(tmp_path / "missing")))
    with pytest.raises(DataError, match="fewer than batch_size=64"):
        ResNet50CPU(_params(data="imagefolder", data_dir=str(jpeg_folder), batch_size=64))


def test_unknown_workload_lists_valid_names() -> None:
    with pytest.raises(registry.UnknownWorkloadError, match="valid workloads: mnist-dataheavy, numa-ddp, resnet50-cpu"):
        registry.get("resnet-50")


def test_channels_last_batches_release_the_contiguous_images_before_the_step() -> None:
    """The harness holds the batch it passes to step(); the contiguous copy the loader made must
    already be gone then, as in the seed study's loop (only the channels_last copy is alive)."""
    w = ResNet50CPU(_params(channels_last=True))
    originals: list[weakref.ref[torch.Tensor]] = []
    loader_batches = iter(w.loader)

    class Watched:  # the loader's batches, each remembered by a weak reference only
        def __iter__(self) -> Watched:
            return self

        def __next__(self) -> list[torch.Tensor]:
            images, labels = next(loader_batches)
            originals.append(weakref.ref(images))
            return [images, labels]

    w.loader = Watched()  # type: ignore[assignment]
    batches = w.batches()
    images, labels = next(batches)
    gc.collect()
    assert images.is_contiguous(memory_format=torch.channels_last)
    assert len(originals) == 1 and originals[0]() is None
    assert w.step((images, labels)) == 2
