"""The loss trajectory: a short seeded training pass that shows a configuration still trains the same model.

A fast configuration (bf16, channels_last, torch.compile, CUDA graphs, a fused optimizer step,
a larger batch) must train the same model as the fp32 baseline (MLPerf's closed division asks
the same of a submission). With ``trajectory_steps`` > 0 the rank runs this pass once after the
last measurement window (outside every timed window, like the evaluation pass): the model's
weights, its batch-norm statistics and the optimizer's state are reset to the seeded initial
ones, and the workload's own training step (:meth:`harness.workload.Workload.step`, the code the
windows timed) trains ``trajectory_steps`` steps on one fixed batch of real, seeded samples. The
loss of each step is recorded in ``workload_info["loss_trajectory"]``; ``trainbench ladder``
compares it with the fp32 rung's (``suite/ladder/numerics.py``).

The batch holds ``trajectory_batch`` distinct samples (seeded by ``seed`` and the rank), each
repeated ``batch_size / trajectory_batch`` times. The mean loss and its gradient over k copies of
a set of samples are those over the set itself, and so are the batch-norm statistics of a
training step (the mean and the biased variance), so rungs at different batch sizes (the
ladder's batch-size search) train exactly the same model in exact arithmetic, at their own
batch shape (no recompilation for the pass). Only rounding differs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from workloads.evaluation import TRAJECTORY_KEY

__all__ = ["TRAJECTORY_KEY", "loss_trajectory", "reset_training", "seeded_batch", "trajectory_samples"]


def trajectory_samples(batch_size: int, trajectory_batch: int) -> int:
    """Distinct samples per trajectory step: ``trajectory_batch``, or ``batch_size`` when it is 0.

    Raises:
        ValueError: ``trajectory_batch`` does not divide ``batch_size`` or is 1 (one sample repeated
            makes every batch-norm variance zero, a degenerate model).
    """
    distinct = trajectory_batch or batch_size
    if distinct < 2 or batch_size % distinct:
        raise ValueError(
            f"trajectory_batch={trajectory_batch} must be 0 (= batch_size) or a divisor >= 2 of batch_size={batch_size}"
        )
    return distinct


def seeded_batch(
    batch_size: int, distinct: int, image_size: int, num_classes: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The trajectory's batch on the CPU: ``distinct`` seeded samples, each repeated ``batch_size / distinct`` times.

    Returns:
        float32 images ``batch_size x 3 x image_size x image_size`` (standard normal, as the synthetic
        data) and int64 labels ``batch_size`` in ``[0, num_classes)``.
    """
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn((distinct, 3, image_size, image_size), generator=g)
    y = torch.randint(0, num_classes, (distinct,), generator=g)
    copies = batch_size // distinct
    return x.repeat(copies, 1, 1, 1), y.repeat(copies)


def reset_training(model: torch.nn.Module, optimizer: Any, build: Callable[[], torch.nn.Module], seed: int) -> None:
    """Load the seeded initial weights and batch-norm buffers into ``model`` and clear the optimizer's state.

    ``build()`` is run under ``torch.manual_seed(seed)`` with the global RNG state restored
    afterwards; its state dict is copied into ``model``'s tensors in place (their device and
    memory format are kept, so a compiled or captured module keeps its inputs). The optimizer's
    per-parameter state (momentum buffers) is cleared, as in a new optimizer.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = build()
    model.load_state_dict(fresh.state_dict())
    optimizer.state.clear()


def loss_trajectory(
    params: Any,
    model: torch.nn.Module,
    optimizer: Any,
    init_seed: int,
    step: Callable[[Any], int],
    last_loss: Callable[[], torch.Tensor],
    to_device: Callable[[torch.Tensor, torch.Tensor], Any] = lambda x, y: (x, y),
) -> dict[str, Any] | None:
    """The pass (module docstring) for a ResNet-50 workload; None when ``params.trajectory_steps`` is 0.

    Args:
        params: the workload's params (``trajectory_steps``, ``trajectory_batch``, ``batch_size``,
            ``image_size``, ``num_classes``, ``seed``).
        model: the module whose weights the step trains; optimizer: its optimizer.
        init_seed: the seed the model's initial weights were drawn with (torchvision's ResNet-50).
        step: the workload's training step; last_loss: the loss tensor of its last step.
        to_device: puts the CPU batch where and how ``step`` takes it (device, memory format).

    Returns:
        ``losses`` (one per step, None where not finite), ``steps``, ``distinct_samples``,
        ``batch_size`` and the data ``seed``.
    """
    import torchvision

    if params.trajectory_steps == 0:
        return None
    distinct = trajectory_samples(params.batch_size, params.trajectory_batch)
    reset_training(model, optimizer, lambda: torchvision.models.resnet50(num_classes=params.num_classes), init_seed)
    batch = to_device(*seeded_batch(params.batch_size, distinct, params.image_size, params.num_classes, params.seed))
    losses: list[float | None] = []
    for _ in range(params.trajectory_steps):
        step(batch)
        value = float(last_loss())
        losses.append(value if math.isfinite(value) else None)
    return {
        "losses": losses,
        "steps": len(losses),
        "distinct_samples": distinct,
        "batch_size": params.batch_size,
        "seed": params.seed,
    }
