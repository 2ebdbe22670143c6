"""The loss-trajectory pass on a real tiny ResNet-50: it starts from the seeded initial weights whatever was
trained before, trains the workload's own step on one fixed seeded batch, and runs after every timed window."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from workloads.resnet50_cpu.params import ResNet50CPUParams
from workloads.resnet50_cpu.workload import ResNet50CPU
from workloads.resnet50_gpu.params import ResNet50GPUParams
from workloads.trajectory import seeded_batch


def test_the_pass_starts_again_from_the_seeded_weights_and_is_reproducible() -> None:
    params = ResNet50CPUParams(batch_size=4, image_size=32, precision="fp32", trajectory_steps=3, trajectory_batch=2)
    trained = ResNet50CPU(params)
    batch = next(iter(trained.batches()))
    for _ in range(2):  # the measurement's steps move the weights and the momentum away from the start
        trained.step(batch)
    first = trained.loss_trajectory()
    again = trained.loss_trajectory()
    fresh = ResNet50CPU(params).loss_trajectory()
    assert first is not None and again is not None and fresh is not None
    assert first["losses"] == again["losses"] == fresh["losses"]
    assert first["steps"] == 3 and first["distinct_samples"] == 2 and first["batch_size"] == 4
    losses = first["losses"]
    assert losses[-1] < losses[0]  # it trains: the fixed batch's loss falls
    assert ResNet50CPU(params.model_copy(update={"trajectory_steps": 0})).loss_trajectory() is None


def test_the_batch_repeats_its_distinct_samples_and_bad_sizes_are_refused() -> None:
    x, y = seeded_batch(6, 2, 32, 1000, seed=5)
    assert x.shape == (6, 3, 32, 32) and torch.equal(x[0], x[2]) and torch.equal(x[1], x[5])
    assert torch.equal(y, y[:2].repeat(3)) and not torch.equal(x[0], x[1])
    again, _ = seeded_batch(6, 2, 32, 1000, seed=5)
    assert torch.equal(x, again)
    for model in (ResNet50CPUParams, ResNet50GPUParams):
        with pytest.raises(ValidationError, match="trajectory_batch=3 must divide batch_size=8"):
            model.model_validate({"batch_size": 8, "trajectory_batch": 3})
        with pytest.raises(ValidationError, match="must divide batch_size=8 and be at least 2"):
            model.model_validate({"batch_size": 8, "trajectory_batch": 1})
    assert "trajectory_steps" not in ResNet50CPUParams().model_dump()  # configs without it are unchanged
