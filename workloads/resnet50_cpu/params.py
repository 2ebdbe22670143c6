"""Parameters of the ResNet-50 CPU workload (the knobs of the seed study)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ResNet50CPUParams(BaseModel):
    """Validated knobs; unknown keys are refused.

    Attributes:
        batch_size: samples per optimizer step (the seed study used 128).
        precision: ``auto`` (bf16 where the CPU runs it natively, fp32 elsewhere: decided by the
            rank on its own host, :mod:`workloads.cpu_precision`), ``fp32``, or ``bf16`` autocast
            (``torch.autocast("cpu", bfloat16)``).
        channels_last: NHWC memory format for model and inputs.
        compile: ``off`` or ``inductor`` (``torch.compile`` of the model).
        intra_op_threads: ``torch.set_num_threads`` value; 0 keeps torch's default.
        num_workers: DataLoader worker processes (0 = load in the training process).
        data: ``synthetic`` (random tensors generated per sample, as in the study) or
            ``imagefolder`` (real JPEGs decoded and augmented).
        data_dir: root of the ImageFolder tree (one sub-directory per class).
        image_size: square input size in pixels (224 in the study).
        num_classes: classifier outputs (1000 for ImageNet).
        lr: SGD learning rate (torch's former default, 1e-3, as the study used).
        momentum: SGD momentum (0 as in the study).
        seed: random seed for weights and data.
        eval_samples: samples of the evaluation pass run once after the measurement
            windows, outside every timed window (top-1 accuracy on the eval split of the
            data; see ``workloads/resnet50_cpu/evaluation.py``). 0, the default, runs none
            and leaves the key out of the resolved config, so configs without it are unchanged.
        trajectory_steps: steps of the loss-trajectory pass run once after the measurement (and the
            evaluation), outside every timed window: the seeded initial weights trained on one fixed
            seeded batch (``workloads/trajectory.py``); ``trainbench ladder`` compares the losses of
            its rungs. 0, the default, runs none and leaves the key out of the resolved config.
        trajectory_batch: distinct samples in that batch, each repeated batch_size / trajectory_batch
            times (the same training at any batch size that it divides); 0 = batch_size (left out).
    """

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(16, ge=1, le=4096)
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    channels_last: bool = True
    compile: Literal["off", "inductor"] = "off"
    intra_op_threads: int = Field(0, ge=0, le=4096)
    num_workers: int = Field(0, ge=0, le=256)
    data: Literal["synthetic", "imagefolder"] = "synthetic"
    data_dir: str | None = None
    image_size: int = Field(224, ge=32, le=1024)
    num_classes: int = Field(1000, ge=2)
    lr: float = Field(1e-3, gt=0)
    momentum: float = Field(0.0, ge=0, lt=1)
    seed: int = 0
    eval_samples: int = Field(0, ge=0, le=1_000_000, exclude_if=lambda v: v == 0)
    trajectory_steps: int = Field(0, ge=0, le=1000, exclude_if=lambda v: v == 0)
    trajectory_batch: int = Field(0, ge=0, le=4096, exclude_if=lambda v: v == 0)

    @model_validator(mode="after")
    def _data_dir_needed(self) -> ResNet50CPUParams:
        if self.data == "imagefolder" and not self.data_dir:
            raise ValueError("data=imagefolder needs data_dir=<directory with one folder per class>")
        if self.trajectory_batch and (self.trajectory_batch < 2 or self.batch_size % self.trajectory_batch):
            raise ValueError(
                f"trajectory_batch={self.trajectory_batch} must divide batch_size={self.batch_size} and be at least 2"
            )
        return self
