"""ResNet-50 data-parallel training in TensorFlow 2.15 (Keras 2) with Horovod (``resnet50-tf-horovod``).

The TensorFlow variant of the Horovod workloads (GitHub-style issue 7): Keras' ResNet-50, SGD,
sparse categorical cross-entropy, ``hvd.DistributedGradientTape`` in a ``tf.function`` step,
rank 0's variables broadcast after the first step; fp32, or Keras mixed precision (bf16, fp16
with loss scaling); channels_last (NHWC, TensorFlow's default); synthetic data (one fixed batch on
the device) or an ImageFolder read with tf.data, optionally preprocessed on a tf.data service.

Seeds: Horovod's ``examples/tensorflow2/tensorflow2_synthetic_benchmark.py`` (v0.28.1) and the
Keras applications' ResNet50 (He et al., "Deep Residual Learning for Image Recognition", 2015).
It runs in the ``trainbench-tf`` image (TensorFlow 2.15.1 CPU build, Horovod 0.28.1 with
TensorFlow + Gloo), started by ``horovodrun``. This module and the parameters import neither
TensorFlow nor Horovod; the factory does, lazily.
"""

from __future__ import annotations

from typing import Any

from harness.workload import Workload
from workloads.entry import WorkloadEntry
from workloads.resnet50_tf.params import ResNet50TFParams


def _build(params: Any) -> Workload:
    from workloads.resnet50_tf.workload import ResNet50TF

    return ResNet50TF(params)


ENTRY = WorkloadEntry(name="resnet50-tf-horovod", params_model=ResNet50TFParams, factory=_build)
