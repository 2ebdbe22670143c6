"""Parameters of the MNIST data-heavy workload: the model's, the chain's cost and the input pipeline's knobs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class MnistDataHeavyParams(BaseModel):
    """Validated knobs; unknown keys are refused.

    Attributes:
        batch_size: samples per optimizer step (64 in the PyTorch MNIST example).
        data: ``synthetic`` (random MNIST-shaped images) or ``idx`` (the MNIST IDX files in data_dir).
        data_dir: directory with the MNIST files (``trainbench data fetch mnist --dest DIR``).
        split: ``train`` (60,000 images) or ``test`` (10,000).
        synthetic_samples: dataset size in synthetic mode.
        preprocess_repeats: k, how many times the heavy chain runs per sample (0 = the
            light pipeline: normalization only). Its cost is measured and recorded as
            CPU ms per sample.
        upscale: the heavy chain works at (28 * upscale)^2 pixels.
        input_pipeline: who preprocesses:
            ``dataloader``: torch DataLoader, num_workers processes (0 = the trainer itself);
            ``tfdata``: tf.data in the trainer process, num_workers threads (0 = inside next());
            ``tfdata-service``: remote workers of the tf.data service at data_service.
        num_workers: DataLoader worker processes; tf.data map threads; for the service,
            map parallelism on each remote worker (0 = let tf.data tune it to the worker's cores).
        prefetch: batches read ahead: per DataLoader worker (its prefetch_factor, needs
            num_workers > 0), or by tf.data in the trainer (0 = none).
        pin_memory: put batches in page-locked memory (only takes effect when CUDA is available).
        data_service: HOST:PORT of the tf.data service dispatcher (input_pipeline=tfdata-service).
        service_timeout_s: seconds to wait for the dispatcher and the first batch.
        device: ``cpu``, or ``cuda`` to train on the GPU (the seed study's GPU-starvation case).
        intra_op_threads: torch.set_num_threads for training; 0 keeps torch's default.
        lr: Adadelta learning rate (1.0 in the PyTorch MNIST example).
        calibration_samples: samples timed to measure the chain's CPU ms per sample.
        seed: random seed for weights, data, shuffling and augmentation.
    """

    model_config = ConfigDict(extra="forbid")

    batch_size: int = Field(64, ge=1, le=65536)
    data: Literal["synthetic", "idx"] = "synthetic"
    data_dir: str | None = None
    split: Literal["train", "test"] = "train"
    synthetic_samples: int = Field(10_000, ge=1, le=10_000_000)
    preprocess_repeats: int = Field(4, ge=0, le=64)
    upscale: int = Field(4, ge=1, le=16)
    input_pipeline: Literal["dataloader", "tfdata", "tfdata-service"] = "dataloader"
    num_workers: int = Field(0, ge=0, le=256)
    prefetch: int = Field(2, ge=0, le=1024)
    pin_memory: bool = False
    data_service: str | None = Field(None, pattern=r"^[^\s:/]+:[0-9]{1,5}$")
    service_timeout_s: float = Field(60.0, gt=0, le=3600, allow_inf_nan=False)
    device: Literal["cpu", "cuda"] = "cpu"
    intra_op_threads: int = Field(0, ge=0, le=4096)
    lr: float = Field(1.0, gt=0, allow_inf_nan=False)
    calibration_samples: int = Field(16, ge=1, le=10_000)
    seed: int = 0

    @model_validator(mode="after")
    def _consistent(self) -> MnistDataHeavyParams:
        if self.data == "idx" and not self.data_dir:
            raise ValueError("data=idx needs data_dir=<directory with the MNIST IDX files>")
        if self.input_pipeline == "tfdata-service" and not self.data_service:
            raise ValueError("input_pipeline=tfdata-service needs data_service=HOST:PORT of the dispatcher")
        if self.input_pipeline != "tfdata-service" and self.data_service:
            raise ValueError("data_service applies to input_pipeline=tfdata-service only")
        if self.input_pipeline == "dataloader" and self.num_workers == 0 and self.prefetch not in (0, 2):
            raise ValueError("prefetch needs num_workers > 0 with the DataLoader (it is per worker)")
        if self.input_pipeline == "dataloader" and self.num_workers > 0 and self.prefetch == 0:
            raise ValueError("the DataLoader prefetches at least 1 batch per worker; set prefetch >= 1")
        return self
