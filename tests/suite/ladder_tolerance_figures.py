"""The figures behind the ladder's loss-trajectory tolerance (``suite/ladder/numerics.py``).

Not a test: a measurement, run by hand (about 25 minutes on a 2-vCPU machine; arguments: the numbers of
distinct samples, default 4,8, and the optimizers, default cpu,gpu)::

    PYTHONPATH=. OMP_NUM_THREADS=1 python tests/suite/ladder_tolerance_figures.py [4,8 [cpu,gpu]]

For each seed, number of distinct samples and optimizer (resnet50-cpu's SGD lr 0.001; the
GPU workload's lr 0.01, momentum 0.9), it runs the real loss-trajectory pass of the ResNet-50
CPU workload (``ResNet50CPU.loss_trajectory``: the seeded initial weights, 8 steps on one
seeded batch at 32 x 32 pixels) for fp32, for the honest variants of a rung (bf16 autocast,
channels_last, both, the batch doubled with each sample twice, bf16 with it) and for broken
ones (the learning rate doubled, halved, tenfold), and prints each one's deviation from fp32
(mean |loss - fp32's| / fp32's first loss, :func:`suite.ladder.numerics.deviation`).
"""

from __future__ import annotations

import itertools
from typing import Any

from suite.ladder.numerics import TOLERANCE, deviation
from workloads.resnet50_cpu.params import ResNet50CPUParams
from workloads.resnet50_cpu.workload import ResNet50CPU

HONEST: dict[str, dict[str, Any]] = {
    "bf16": {"precision": "bf16"},
    "channels_last": {"channels_last": True},
    "bf16+channels_last": {"precision": "bf16", "channels_last": True},
    "batch x2": {"double": True},
    "bf16+batch x2": {"precision": "bf16", "double": True},
}
BROKEN: dict[str, dict[str, Any]] = {
    "lr x2": {"lr_factor": 2.0},
    "lr / 2": {"lr_factor": 0.5},
    "lr x10": {"lr_factor": 10.0},
}


def losses(seed: int, distinct: int, lr: float, momentum: float, **variant: Any) -> list[float]:
    """The trajectory of one variant (fp32, contiguous, batch = distinct, unless the variant says otherwise)."""
    params = ResNet50CPUParams(
        batch_size=distinct * (2 if variant.get("double") else 1),
        precision=variant.get("precision", "fp32"),
        channels_last=variant.get("channels_last", False),
        image_size=32,
        lr=lr * variant.get("lr_factor", 1.0),
        momentum=momentum,
        seed=seed,
        trajectory_steps=8,
        trajectory_batch=distinct,
    )
    record = ResNet50CPU(params).loss_trajectory()
    assert record is not None
    return [float(v) for v in record["losses"]]


OPTIMIZERS = {"cpu": (1e-3, 0.0), "gpu": (0.01, 0.9)}
"""(lr, momentum) of resnet50-cpu's and resnet50-gpu-horovod's SGD."""


def main(samples: list[int], optimizers: list[str]) -> None:
    """Print every deviation, then the largest honest one and the smallest broken one per setting."""
    worst: dict[tuple[int, float], float] = {}
    least: dict[tuple[int, float, str], float] = {}
    chosen = [OPTIMIZERS[o] for o in optimizers]
    for (lr, momentum), distinct, seed in itertools.product(chosen, samples, (0, 1, 2)):
        ref = losses(seed, distinct, lr, momentum)
        row = []
        for name, variant in {**HONEST, **BROKEN}.items():
            dev = deviation(ref, losses(seed, distinct, lr, momentum, **variant))
            row.append(f"{name} {dev:.3f}")
            if name in HONEST:
                worst[distinct, lr] = max(worst.get((distinct, lr), 0.0), dev)
            else:
                least[distinct, lr, name] = min(least.get((distinct, lr, name), 99.0), dev)
        print(f"lr {lr} momentum {momentum}, {distinct} samples, seed {seed}: fp32 {[round(v, 2) for v in ref]}")
        print("   " + ", ".join(row), flush=True)
    print(f"\ntolerance {TOLERANCE}")
    for (distinct, lr), dev in worst.items():
        broken = ", ".join(f"{n} >= {v:.3f}" for (d, r, n), v in least.items() if (d, r) == (distinct, lr))
        print(f"lr {lr}, {distinct} samples: honest <= {dev:.3f}; broken: {broken}")


if __name__ == "__main__":
    import sys

    main(
        [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "4,8").split(",")],
        (sys.argv[2] if len(sys.argv) > 2 else "cpu,gpu").split(","),
    )
