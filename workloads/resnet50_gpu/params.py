"""Parameters of the ResNet-50 GPU workload: the precision/layout/compile knobs, data and engine."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ResNet50GPUParams(BaseModel):
    """Validated knobs of one rank; unknown keys are refused.

    Attributes:
        engine: ``horovod`` (``horovod.torch.DistributedOptimizer``, started by horovodrun)
            or ``ddp`` (``torch.nn.parallel.DistributedDataParallel``, started by torchrun).
            The launcher must match (``launch.launcher`` horovodrun / torchrun).
        device: ``cuda`` (one GPU per rank, picked by the local rank), ``cpu`` (the CPU path
            that CI runs: Horovod over Gloo, DDP over gloo), or ``auto`` (cuda when a GPU is visible).
        batch_size: images per rank per step; the global batch size is batch_size x world size.
        precision: ``fp32``; ``bf16`` autocast; ``fp16`` autocast with a gradient scaler
            (``torch.amp.GradScaler``). On CPU only fp32 and bf16 are accepted.
        channels_last: NHWC memory format for model and inputs (what tensor cores prefer).
        compile: ``off`` or ``inductor`` (``torch.compile`` of the model).
        data: ``synthetic``: one fixed random batch resident on the device, as Horovod's
            synthetic benchmark and Lambda's benchmark do (measures the training step, not
            an input pipeline); ``imagefolder``: real JPEGs decoded and augmented by
            DataLoader workers, copied to the GPU from pinned memory.
        data_dir: ImageFolder root (one sub-directory per class).
        num_workers: DataLoader worker processes per rank (imagefolder only).
        image_size: square input size in pixels (224 for ImageNet).
        num_classes: classifier outputs (1000 for ImageNet).
        lr: SGD learning rate (Horovod's benchmark uses 0.01).
        momentum: SGD momentum.
        backend: DDP process-group backend; ``auto`` = nccl on cuda, gloo on cpu.
        collective_timeout_s: seconds a collective waits for a missing rank (DDP).
        seed: random seed of weights and data (each rank adds its rank to the data seed).
    """

    model_config = ConfigDict(extra="forbid")

    engine: Literal["horovod", "ddp"] = "horovod"
    device: Literal["auto", "cuda", "cpu"] = "auto"
    batch_size: int = Field(256, ge=1, le=65536)
    precision: Literal["fp32", "bf16", "fp16"] = "bf16"
    channels_last: bool = True
    compile: Literal["off", "inductor"] = "off"
    data: Literal["synthetic", "imagefolder"] = "synthetic"
    data_dir: str | None = None
    num_workers: int = Field(4, ge=0, le=256)
    image_size: int = Field(224, ge=32, le=1024)
    num_classes: int = Field(1000, ge=2)
    lr: float = Field(0.01, gt=0, allow_inf_nan=False)
    momentum: float = Field(0.9, ge=0, lt=1)
    backend: Literal["auto", "nccl", "gloo"] = "auto"
    collective_timeout_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    seed: int = 0

    @model_validator(mode="after")
    def _consistent(self) -> ResNet50GPUParams:
        if self.data == "imagefolder" and not self.data_dir:
            raise ValueError("data=imagefolder needs data_dir=<directory with one folder per class>")
        if self.device == "cpu" and self.precision == "fp16":
            raise ValueError("precision=fp16 needs device=cuda; on CPU use bf16 or fp32")
        if self.device == "cpu" and self.backend == "nccl":
            raise ValueError("backend=nccl needs device=cuda; on CPU use backend=gloo (or auto)")
        return self

    def launcher(self) -> str:
        """The launcher this engine needs: ``horovodrun`` for horovod, ``torchrun`` for ddp."""
        return "horovodrun" if self.engine == "horovod" else "torchrun"
