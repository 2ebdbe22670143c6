"""Parameters of the ResNet-50 GPU workload: the precision/layout/compile knobs, input pipeline and engine."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

InputPipeline = Literal["synthetic", "dataloader", "dali", "tfdata-service"]


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
        input_pipeline: who feeds the step (every pipeline gives the step the same tensors:
            float32 N x 3 x image_size x image_size on the device, normalised with ImageNet's
            mean and std, int64 labels; see ``workloads/resnet50_gpu/pipelines/``):
            ``synthetic``: one fixed random batch resident on the device, as Horovod's and
            Lambda's benchmarks do (measures the training step, not an input pipeline: the
            ceiling the others are compared with);
            ``dataloader``: DataLoader workers decode the JPEGs of data_dir and random-resized-crop
            and flip them to uint8; pinned memory, prefetch; the float conversion and the
            normalisation run on the device;
            ``dali``: NVIDIA DALI decodes on the GPU (nvJPEG, the "mixed" decoder) and crops,
            resizes and flips there (its CPU backend with device=cpu); MLPerf's pipeline;
            ``tfdata-service``: the workers of a tf.data service (data_service) decode and
            augment, the trainer only trains (the heterogeneous-cluster pattern of seed 001).
            Unset: ``dataloader`` with data=imagefolder, else ``synthetic``.
        data: what the step trains on, resolved from input_pipeline when unset: ``synthetic``
            or ``imagefolder`` (real JPEGs in data_dir, whichever pipeline reads them). Kept
            for configs written before input_pipeline (``data=imagefolder`` means the DataLoader).
        data_dir: a tree of class folders of JPEGs: ImageNet's ``train/`` or ``val/`` (sorted into
            class folders), an ImageFolder, or ``trainbench data make-imagenet-like DIR``.
        num_workers: preprocessing parallelism per rank: DataLoader worker processes; DALI's CPU
            threads; map parallelism on each tf.data service worker (0 = tuned by tf.data).
        prefetch: batches read ahead: per DataLoader worker (its prefetch_factor); DALI's
            prefetch queue depth; tf.data's prefetch in the trainer.
        data_service: HOST:PORT of the tf.data service dispatcher (input_pipeline=tfdata-service);
            its workers must read data_dir at the same path (same host, or a shared mount).
        service_timeout_s: seconds to wait for the dispatcher and the first batch.
        image_size: square input size in pixels (224 for ImageNet).
        num_classes: classifier outputs (1000 for ImageNet).
        lr: SGD learning rate (Horovod's benchmark uses 0.01).
        momentum: SGD momentum.
        compile_mode: torch.compile's mode with compile=inductor: ``default``,
            ``max-autotune-no-cudagraphs`` (autotuned kernels), ``reduce-overhead`` (CUDA graphs) or
            ``max-autotune`` (both); the last two need a GPU. Left out of the config when default.
        optimizer_impl: SGD's implementation: ``default`` (torch's choice: foreach on CUDA),
            ``foreach`` or ``fused`` (one kernel for the whole step). Left out when default.
        trajectory_steps, trajectory_batch: the loss-trajectory pass after the measurement
            (``workloads/trajectory.py``), as for resnet50-cpu; 0 (the default) runs none.
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
    input_pipeline: InputPipeline = "synthetic"
    data: Literal["synthetic", "imagefolder"] = "synthetic"
    data_dir: str | None = None
    num_workers: int = Field(4, ge=0, le=256)
    prefetch: int = Field(2, ge=1, le=64)
    data_service: str | None = Field(None, pattern=r"^[^\s:/]+:[0-9]{1,5}$")
    service_timeout_s: float = Field(60.0, gt=0, le=3600, allow_inf_nan=False)
    image_size: int = Field(224, ge=32, le=1024)
    num_classes: int = Field(1000, ge=2)
    lr: float = Field(0.01, gt=0, allow_inf_nan=False)
    momentum: float = Field(0.9, ge=0, lt=1)
    compile_mode: Literal["default", "max-autotune-no-cudagraphs", "reduce-overhead", "max-autotune"] = Field(
        "default", exclude_if=lambda v: v == "default"
    )
    optimizer_impl: Literal["default", "foreach", "fused"] = Field("default", exclude_if=lambda v: v == "default")
    trajectory_steps: int = Field(0, ge=0, le=1000, exclude_if=lambda v: v == 0)
    trajectory_batch: int = Field(0, ge=0, le=65536, exclude_if=lambda v: v == 0)
    backend: Literal["auto", "nccl", "gloo"] = "auto"
    collective_timeout_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    seed: int = 0

    @model_validator(mode="before")
    @classmethod
    def _resolve_data(cls, values: Any) -> Any:
        """Fill input_pipeline from data (configs written before it), and data from input_pipeline."""
        if not isinstance(values, dict):
            return values
        out = dict(values)
        if out.get("input_pipeline") is None:
            out["input_pipeline"] = "dataloader" if out.get("data") == "imagefolder" else "synthetic"
        if out.get("data") is None:
            out["data"] = "synthetic" if out["input_pipeline"] == "synthetic" else "imagefolder"
        return out

    @model_validator(mode="after")
    def _consistent(self) -> ResNet50GPUParams:
        reads_files = self.input_pipeline != "synthetic"
        if reads_files != (self.data == "imagefolder"):
            raise ValueError(
                f"data={self.data} contradicts input_pipeline={self.input_pipeline}: set input_pipeline "
                "(synthetic, dataloader, dali or tfdata-service) and leave data out, it follows"
            )
        if reads_files and not self.data_dir:
            raise ValueError(
                f"input_pipeline={self.input_pipeline} needs data_dir=<directory with one folder per class of "
                "JPEGs> (ImageNet's train/, or `trainbench data make-imagenet-like DIR`)"
            )
        if self.input_pipeline == "tfdata-service" and not self.data_service:
            raise ValueError("input_pipeline=tfdata-service needs data_service=HOST:PORT of the dispatcher")
        if self.input_pipeline != "tfdata-service" and self.data_service:
            raise ValueError("data_service applies to input_pipeline=tfdata-service only")
        if self.device == "cpu" and self.precision == "fp16":
            raise ValueError("precision=fp16 needs device=cuda; on CPU use bf16 or fp32")
        if self.device == "cpu" and self.backend == "nccl":
            raise ValueError("backend=nccl needs device=cuda; on CPU use backend=gloo (or auto)")
        return self

    @model_validator(mode="after")
    def _step_knobs(self) -> ResNet50GPUParams:
        if self.compile_mode != "default" and self.compile == "off":
            raise ValueError(f"compile_mode={self.compile_mode} needs compile=inductor")
        if self.device == "cpu" and self.compile_mode in ("reduce-overhead", "max-autotune"):
            raise ValueError(f"compile_mode={self.compile_mode} captures CUDA graphs and needs device=cuda")
        if self.trajectory_batch and (self.trajectory_batch < 2 or self.batch_size % self.trajectory_batch):
            raise ValueError(
                f"trajectory_batch={self.trajectory_batch} must divide batch_size={self.batch_size} and be at least 2"
            )
        return self

    def launcher(self) -> str:
        """The launcher this engine needs: ``horovodrun`` for horovod, ``torchrun`` for ddp."""
        return "horovodrun" if self.engine == "horovod" else "torchrun"
