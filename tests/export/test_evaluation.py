"""The ResNet-50 evaluation pass that an MLPerf export's eval_accuracy comes from (real model, tiny sizes)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import Subset

from harness.workload import Workload
from workloads.evaluation import run_evaluation
from workloads.resnet50_cpu.data import DataError
from workloads.resnet50_cpu.params import ResNet50CPUParams
from workloads.resnet50_cpu.workload import ResNet50CPU


def _workload(**kw: Any) -> ResNet50CPU:
    base: dict[str, Any] = {"batch_size": 2, "image_size": 64, "num_classes": 10, "precision": "fp32"}
    base["channels_last"] = False
    return ResNet50CPU(ResNet50CPUParams.model_validate({**base, **kw}))


def _correct_by_hand(w: ResNet50CPU) -> int:
    assert w.eval_set is not None
    samples: Any = w.eval_set.dataset
    w.model.eval()
    with torch.no_grad():
        hits = sum(int(w.model(x.unsqueeze(0)).argmax(1).item() == y) for x, y in samples)
    w.model.train()
    return hits


def test_synthetic_eval_measures_accuracy_without_touching_the_training_state() -> None:
    w = _workload(eval_samples=3)
    w.step(next(w.batches()))  # a real optimizer step, so gradients and BatchNorm statistics exist
    grads = [p.grad.clone() for p in w.model.parameters() if p.grad is not None]
    stats = w.model.bn1.running_mean.clone()
    record = w.evaluate()
    assert record is not None
    assert record["samples"] == 3 and record["requested_samples"] == 3  # the last batch is partial
    assert record["split"] == "synthetic" and record["data"] == "synthetic"
    assert record["chance_accuracy"] == pytest.approx(0.1) and "chance level (0.1) by construction" in record["dataset"]
    assert record["accuracy"] == record["correct"] / 3 and record["correct"] == _correct_by_hand(w)
    assert w.model.training  # train mode restored
    assert torch.equal(stats, w.model.bn1.running_mean)  # eval mode: BatchNorm statistics untouched
    assert all(
        torch.equal(a, p.grad)
        for a, p in zip(grads, (p for p in w.model.parameters() if p.grad is not None), strict=True)
    )
    assert w.evaluate() == record  # the same eval set, read again


def test_the_synthetic_eval_set_is_drawn_with_its_own_seed() -> None:
    a, b = _workload(eval_samples=2, seed=0), _workload(eval_samples=2, seed=1)
    assert a.eval_set is not None and b.eval_set is not None
    x0, y0 = a.eval_set.dataset[0]
    assert torch.equal(x0, a.eval_set.dataset[0][0]) and y0 == a.eval_set.dataset[0][1]
    assert not torch.equal(x0, b.eval_set.dataset[0][0])
    assert "seed 1000003 (training's seed is 0)" in a.eval_set.description


def test_no_evaluation_unless_asked_and_the_config_is_unchanged() -> None:
    w = _workload()
    assert w.evaluate() is None and run_evaluation(w, time.perf_counter()) is None
    assert "eval_samples" not in ResNet50CPUParams().model_dump()
    assert ResNet50CPUParams(eval_samples=4).model_dump()["eval_samples"] == 4


def test_images_held_out_of_the_folder_are_never_trained_on(jpeg_folder: Path) -> None:
    w = _workload(data="imagefolder", data_dir=str(jpeg_folder), eval_samples=4)
    assert w.eval_set is not None and w.eval_set.split == "held-out"
    train, held = w.loader.dataset, w.eval_set.dataset
    assert isinstance(train, Subset) and isinstance(held, Subset)
    assert set(train.indices).isdisjoint(held.indices) and len(train.indices) + len(held.indices) == 12
    assert w.describe()["train_samples"] == 8 and w.describe()["dataset_samples"] == 12
    record = run_evaluation(w, time.perf_counter())
    assert record is not None and record["samples"] == 4 and record["chance_accuracy"] is None
    assert record["seconds"] > 0 and record["start_s"] >= 0
    assert f"4 of the 12 images in {jpeg_folder} held out of training" in record["dataset"]
    with pytest.raises(DataError, match="leaves 1 for training, fewer than batch_size=2"):
        _workload(data="imagefolder", data_dir=str(jpeg_folder), eval_samples=11)


def test_a_val_folder_is_the_eval_split_and_is_not_trained_on(jpeg_folder: Path) -> None:
    val = jpeg_folder / "val"
    for cls in ("dog", "fox"):
        (val / cls).mkdir(parents=True)
        shutil.copy(jpeg_folder / cls / "0.jpg", val / cls / "0.jpg")
    w = _workload(data="imagefolder", data_dir=str(jpeg_folder), eval_samples=10)
    assert w.dataset.classes == ["cat", "dog", "fox"] and len(w.dataset) == 12  # val/ is no class to train on
    assert w.eval_set is not None and w.eval_set.split == "val"
    samples: Any = w.eval_set.dataset
    assert sorted(label for _, label in samples) == [1, 2]  # the training folder's label ids
    record = w.evaluate()
    assert record is not None and record["samples"] == 2 and record["requested_samples"] == 10
    (val / "wolf").mkdir()
    shutil.copy(jpeg_folder / "cat" / "0.jpg", val / "wolf" / "0.jpg")
    with pytest.raises(DataError, match="holds classes that the training folder lacks: wolf"):
        _workload(data="imagefolder", data_dir=str(jpeg_folder), eval_samples=2)


def test_a_failing_evaluation_is_recorded_not_raised() -> None:
    class Broken(Workload):
        def batches(self) -> Iterator[Any]:
            raise AssertionError("an evaluation pass reads no training batch")

        def step(self, batch: Any) -> int:
            raise AssertionError("an evaluation pass takes no training step")

        def evaluate(self) -> dict[str, Any]:
            raise DataError("the eval folder vanished")

    record = run_evaluation(Broken(), time.perf_counter())
    assert record is not None and record["error"] == "DataError: the eval folder vanished"
    assert "accuracy" not in record and record["seconds"] >= 0
