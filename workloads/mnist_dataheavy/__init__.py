"""MNIST made data-heavy: the classic MNIST convnet fed by a deliberately CPU-heavy input pipeline.

Seed: "Improve price performance of your model training using Amazon SageMaker
heterogeneous clusters", Oct 2022 (shared/seeds/001_*.txt): a PyTorch MNIST model
whose preprocessing was made heavy starved its GPU at 1193 ms/step with 8 loader
workers; offloading preprocessing to 32 workers on an extra CPU machine gave
184 ms/step. This workload exposes that effect (loader workers, prefetch, pin
memory, preprocessing offloaded to a tf.data service) and lets the harness's
input-bound diagnosis name it.
"""

from __future__ import annotations

from typing import Any

from harness.workload import Workload
from workloads.entry import WorkloadEntry
from workloads.mnist_dataheavy.params import MnistDataHeavyParams


def _build(params: Any) -> Workload:
    from workloads.mnist_dataheavy.workload import MnistDataHeavy

    return MnistDataHeavy(params)


ENTRY = WorkloadEntry(name="mnist-dataheavy", params_model=MnistDataHeavyParams, factory=_build)
