"""``input_pipeline=tfdata-service``: the workers of a tf.data service decode and augment, the trainer trains.

This is seed 001's heterogeneous-cluster pattern ("Improve price performance of your model
training using Amazon SageMaker heterogeneous clusters", Oct 2022: TF ResNet-50 on a p4d got
2.2x faster with two c5.18xlarge preprocessing for it). It reuses the project's tf.data service
as it is: the dispatcher and workers of ``trainbench data-service`` (:mod:`suite.datasets.service`,
in containers with ``suite/containers/service.py``, on Slurm nodes), and the client side of
mnist-dataheavy (:mod:`workloads.mnist_dataheavy.tf_pipeline`: the job, the origin of each batch,
the probe that records which workers serve).

The dataset graph holds the file list and the labels from the same reader as every pipeline
(:func:`workloads.image_files.list_images`); the workers read the files by path, so they must
see data_dir at the same path (this host, or a shared mount). Per sample: read, a random crop
window (``sample_distorted_bounding_box`` with the area and ratio ranges of every pipeline),
``decode_and_crop_jpeg`` (decodes only the window, with the accurate IDCT as the other pipelines
decode; other formats are decoded whole, then cut), an antialiased bilinear resize to size x size,
a random horizontal flip; uint8 batches NHWC come back and
:class:`~workloads.resnet50_gpu.pipelines.tensors.Finisher` normalises them on the device.
Each rank runs its own job over all the files (``parallel_epochs``).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

from workloads.image_files import ImageList
from workloads.mnist_dataheavy.reach import DataServiceError, check_reachable
from workloads.resnet50_gpu.pipelines.tensors import Augment, Batch, Finisher

PROBE_SETTLE_S = 3.0
"""Seconds without a new service worker that end the set-up probe (as mnist-dataheavy's)."""


def jpeg_dataset(images: ImageList, augment: Augment, batch_size: int, parallel_calls: int) -> Any:
    """An endless, shuffled dataset of ``(uint8 [B, S, S, 3], int64 [B], origin)`` batches (the last
    partial batch of an epoch dropped). ``parallel_calls`` 0 lets tf.data tune the map's parallelism.
    """
    from workloads.mnist_dataheavy import tf_pipeline as tp  # imports torchvision before TensorFlow

    # isort: split
    import tensorflow as tf

    lo, hi = augment.area

    def window(shape: Any) -> tuple[Any, Any]:
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            shape,
            bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]),
            min_object_covered=lo,
            aspect_ratio_range=augment.ratio,
            area_range=(lo, hi),
            max_attempts=10,
            use_image_if_no_bounding_boxes=True,
        )
        return begin, size

    def jpeg(data: Any) -> Any:
        begin, size = window(tf.io.extract_jpeg_shape(data))
        window_ = tf.stack([begin[0], begin[1], size[0], size[1]])
        # INTEGER_ACCURATE: libjpeg-turbo's accurate IDCT, as Pillow, torchvision and DALI decode (TensorFlow's
        # default, the fast IDCT, makes the pixels about 1 grey level darker on average)
        return tf.io.decode_and_crop_jpeg(data, window_, channels=3, dct_method="INTEGER_ACCURATE")

    def other(data: Any) -> Any:  # e.g. the PNG under a .JPEG name in ImageNet's train split
        image = tf.io.decode_image(data, channels=3, expand_animations=False)
        begin, size = window(tf.shape(image))
        return tf.slice(image, begin, size)

    def load(path: Any, label: Any) -> tuple[Any, Any]:
        data = tf.io.read_file(path)
        crop = tf.cond(tf.io.is_jpeg(data), lambda: jpeg(data), lambda: other(data))
        resized = tf.image.resize(crop, [augment.size, augment.size], method="bilinear", antialias=True)
        image = tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8)
        return tf.image.random_flip_left_right(image), label

    ds = tf.data.Dataset.from_tensor_slices((list(images.files), tf.constant(images.labels, dtype=tf.int64)))
    ds = ds.shuffle(len(images), reshuffle_each_iteration=True).repeat()
    ds = ds.map(load, num_parallel_calls=parallel_calls or tf.data.AUTOTUNE)
    return tp.with_origin(ds.batch(batch_size, drop_remainder=True))


class ServicePipeline:
    """The trainer's side: a job on the tf.data service at ``address``, its batches finished on the device.

    Raises:
        DataServiceError: the dispatcher is unreachable, TensorFlow is missing, or no batch arrives
            within ``timeout_s`` (no worker registered, or workers that cannot read data_dir).
    """

    def __init__(
        self,
        images: ImageList,
        augment: Augment,
        finish: Finisher,
        *,
        address: str,
        batch_size: int,
        parallel_calls: int,
        prefetch: int,
        timeout_s: float,
    ) -> None:
        check_reachable(address, timeout_s)  # before TensorFlow is imported
        try:
            from workloads.mnist_dataheavy import tf_pipeline as tp
        except ImportError as exc:
            raise DataServiceError(
                f"input_pipeline=tfdata-service needs TensorFlow ({exc}); install trainbench's offload extra: "
                "pip install -e '.[offload]'"
            ) from exc
        ds = jpeg_dataset(images, augment, batch_size, parallel_calls)
        ds = tp.service_dataset(ds, address, f"trainbench-{uuid.uuid4().hex[:12]}", prefetch)
        self.batches = tp.TfBatches(ds, pin_memory=finish.device.type == "cuda")
        origins = self.batches.probe(PROBE_SETTLE_S, timeout_s, f"the tf.data service at {address}")
        here = socket.gethostname()
        cores_by_host: dict[str, set[int]] = {}
        for o in origins:
            cores_by_host.setdefault(o.host, set()).update(o.cpus)
        remote = all(o.host != here for o in origins)
        self.finish = finish
        self.info: dict[str, Any] = {
            "engine": "tf.data service",
            "placement": "remote" if remote else "remote (loopback)",
            "location": "remote hosts (tf.data service workers)"
            if remote
            else "tf.data service worker processes on the trainer's host (loopback)",
            "workers": len(origins),
            "cores": sum(len(c) for c in cores_by_host.values()),
            "hosts": sorted(cores_by_host),
            "producers": [{**o.to_dict(), "probe_batches": k} for o, k in origins.items()],
            "dispatcher": address,
        }

    def __iter__(self) -> Iterator[Batch]:
        for nhwc, labels in self.batches:
            yield self.finish(nhwc.permute(0, 3, 1, 2), labels)
