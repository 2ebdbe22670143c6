"""Parameters of the ResNet-50 TensorFlow + Horovod workload (importable without TensorFlow)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ResNet50TFParams(BaseModel):
    """Validated knobs of one rank; unknown keys are refused.

    Attributes:
        device: ``cpu``; ``gpu`` (one GPU per rank, picked by Horovod's local rank; needs a
            TensorFlow build with CUDA, which the trainbench-tf image does not have); ``auto``
            (a GPU when TensorFlow sees one, else the CPU).
        batch_size: images per rank per step; the global batch size is batch_size x world size
            (Horovod's tensorflow2_synthetic_benchmark.py defaults to 32 per rank).
        precision: ``fp32``; ``bf16``: Keras' ``mixed_bfloat16`` policy (bfloat16 compute,
            float32 variables); ``fp16``: ``mixed_float16`` with a dynamic
            ``LossScaleOptimizer`` (GPU only: refused with device=cpu and when ``auto`` finds
            no GPU). The loss is always computed in float32 from the logits.
        fp16_allreduce: compress gradients to float16 for the all-reduce
            (``hvd.Compression.fp16``, the ``--fp16-allreduce`` flag of Horovod's benchmarks).
        data: ``synthetic``: one fixed random batch created once on the rank's device and fed
            to every step, as Horovod's synthetic benchmarks do (measures the training step, not
            an input pipeline); ``imagefolder``: JPEG/PNG files read with tf.data (decode, random
            resized crop, horizontal flip, ImageNet normalization), sharded across ranks.
        data_dir: ImageFolder root (one sub-directory per class), for ``imagefolder``.
        num_parallel_calls: tf.data map parallelism of the decode/augment step
            (0 = ``tf.data.AUTOTUNE``); on a tf.data service, the parallelism on each worker.
        prefetch: batches tf.data reads ahead in the trainer (0 = none).
        data_service: HOST:PORT of a tf.data service dispatcher (``trainbench data-service
            dispatcher``) that runs the decode/augment pipeline on its workers instead of the
            trainer; ``imagefolder`` only. The workers read ``data_dir`` at the same path.
        service_timeout_s: seconds to wait for the dispatcher and for the first batch, s.
        image_size: square input size in pixels (224 for ImageNet).
        num_classes: classifier outputs (1000 for ImageNet).
        lr: SGD learning rate (Horovod's synthetic benchmark uses 0.01 x world size; here the
            value is taken as given).
        momentum: SGD momentum (0.9, as in the Keras ImageNet recipes).
        intra_op_threads: TensorFlow intra-op threads per rank (0 = TensorFlow's default,
            one per core it sees; set it when several ranks share a host's cores).
        inter_op_threads: TensorFlow inter-op threads per rank (0 = TensorFlow's default).
        seed: random seed of weights, synthetic data, shuffling and augmentation (each rank's
            data and augmentation use seed + rank; weights come from rank 0 by broadcast).
    """

    model_config = ConfigDict(extra="forbid")

    device: Literal["auto", "cpu", "gpu"] = "auto"
    batch_size: int = Field(32, ge=1, le=65536)
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    fp16_allreduce: bool = False
    data: Literal["synthetic", "imagefolder"] = "synthetic"
    data_dir: str | None = None
    num_parallel_calls: int = Field(0, ge=0, le=1024)
    prefetch: int = Field(2, ge=0, le=1024)
    data_service: str | None = Field(None, pattern=r"^[^\s:/]+:[0-9]{1,5}$")
    service_timeout_s: float = Field(60.0, gt=0, le=3600, allow_inf_nan=False)
    image_size: int = Field(224, ge=32, le=1024)
    num_classes: int = Field(1000, ge=2, le=1_000_000)
    lr: float = Field(0.01, gt=0, allow_inf_nan=False)
    momentum: float = Field(0.9, ge=0, lt=1)
    intra_op_threads: int = Field(0, ge=0, le=4096)
    inter_op_threads: int = Field(0, ge=0, le=4096)
    seed: int = 0

    @model_validator(mode="after")
    def _consistent(self) -> ResNet50TFParams:
        if self.data == "imagefolder" and not self.data_dir:
            raise ValueError("data=imagefolder needs data_dir=<directory with one folder per class>")
        if self.data_service and self.data != "imagefolder":
            raise ValueError(
                "data_service offloads the imagefolder pipeline; set data=imagefolder (synthetic data is one "
                "fixed batch on the device and has no pipeline to offload)"
            )
        if self.device == "cpu" and self.precision == "fp16":
            raise ValueError("precision=fp16 needs device=gpu; on CPU use bf16 or fp32")
        return self
