"""``input_pipeline=dali``: NVIDIA DALI reads, decodes, crops and flips; on a GPU the decoding runs there.

The pipeline is the one of DALI's own ResNet-50 example and MLPerf's submissions: a file
reader (this rank's shard, shuffled), ``decoders.image_random_crop`` (decodes only the random
crop's region; ``device="mixed"``: nvJPEG on the GPU, with the hardware JPEG decoder where the
GPU has one, such as A100 and H100), ``resize`` to size x size with antialiasing and a random
horizontal ``flip``, all on the GPU after the decoder. It delivers uint8 NHWC on the device and
:class:`~workloads.resnet50_gpu.pipelines.tensors.Finisher` normalises as for every pipeline.

With ``device=cpu`` the same graph runs on DALI's CPU backend (``device_id=None``, the "cpu"
decoder), which is what CI runs. DALI is an optional extra (``make venv-dali, or pip install -e '.[dali]'``,
the ``nvidia-dali-cuda130`` wheel, about 200 MB plus nvJPEG and nvImageCodec).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from workloads.checks import WorkloadRefused
from workloads.image_files import DataError, ImageList
from workloads.resnet50_gpu.pipelines.tensors import Augment, Batch, Finisher

READER = "reader"


def _dali() -> Any:
    """The ``nvidia.dali`` package and its PyTorch plugin, or a refusal that says how to install them.

    Raises:
        WorkloadRefused: DALI is not installed.
    """
    try:
        import nvidia.dali as dali
        import nvidia.dali.plugin.pytorch as dali_torch
    except ImportError as exc:
        raise WorkloadRefused(
            f"input_pipeline=dali needs NVIDIA DALI ({exc}); install trainbench's dali extra: "
            "make venv-dali, or pip install -e '.[dali]' (the nvidia-dali-cuda130 wheel; its CPU backend runs "
            "without a GPU)"
        ) from exc
    return dali, dali_torch


class DaliPipeline:
    """A rank's shard of the JPEGs through a DALI pipeline, epoch after epoch, finished on the device.

    Args:
        threads: DALI's CPU worker threads (num_workers; at least 1).
        prefetch: DALI's prefetch queue depth (batches prepared ahead).

    Raises:
        WorkloadRefused: DALI is not installed.
        DataError: this rank's shard holds fewer files than one batch.
    """

    def __init__(
        self,
        images: ImageList,
        augment: Augment,
        finish: Finisher,
        *,
        batch_size: int,
        threads: int,
        prefetch: int,
        rank: int,
        world_size: int,
        seed: int,
    ) -> None:
        dali, dali_torch = _dali()
        fn, types = dali.fn, dali.types
        if len(images) // world_size < batch_size:
            raise DataError(
                f"the dataset has {len(images)} samples, {len(images) // world_size} per rank, fewer than "
                f"batch_size={batch_size}; lower batch_size or add data"
            )
        gpu = finish.device.type == "cuda"
        decoder = "mixed" if gpu else "cpu"

        @dali.pipeline_def(  # type: ignore[untyped-decorator]  # DALI has no type hints
            batch_size=batch_size,
            num_threads=max(1, threads),
            device_id=finish.device.index if gpu else None,
            seed=seed + rank,
            prefetch_queue_depth=prefetch,
        )
        def graph() -> Any:
            jpegs, labels = fn.readers.file(
                files=list(images.files),
                labels=list(images.labels),
                random_shuffle=True,
                shard_id=rank,
                num_shards=world_size,
                name=READER,
            )
            decoded = fn.decoders.image_random_crop(
                jpegs,
                device=decoder,
                output_type=types.RGB,
                random_area=list(augment.area),
                random_aspect_ratio=list(augment.ratio),
                num_attempts=10,
            )
            resized = fn.resize(decoded, resize_x=augment.size, resize_y=augment.size, antialias=True)
            return fn.flip(resized, horizontal=fn.random.coin_flip(probability=0.5)), labels

        self.iterator = dali_torch.DALIGenericIterator(
            [graph()],
            ["images", "labels"],
            reader_name=READER,
            last_batch_policy=dali_torch.LastBatchPolicy.DROP,
            auto_reset=True,
        )
        self.finish = finish
        self.info: dict[str, Any] = {
            "engine": f"NVIDIA DALI {dali.__version__}",
            "location": "the GPU (nvJPEG mixed decoder) after DALI's CPU reader threads"
            if gpu
            else "DALI's CPU backend threads in the trainer process",
            "decoder": decoder,
            "workers": max(1, threads),
            "cores": max(1, threads),
            "prefetch_queue_depth": prefetch,
        }

    def __iter__(self) -> Iterator[Batch]:
        while True:
            for out in self.iterator:  # one epoch; auto_reset starts the next
                nhwc: torch.Tensor = out[0]["images"]
                yield self.finish(nhwc.permute(0, 3, 1, 2), out[0]["labels"])
