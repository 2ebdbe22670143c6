"""Input of the ResNet-50 TensorFlow workload: a fixed synthetic batch, or an ImageFolder read with tf.data.

Both give batches ``(images uint8 [B, H, W, 3], labels int64 [B])`` in TensorFlow's default
``channels_last`` (NHWC) layout; the training step normalizes them on the rank's device, so
real and synthetic data run the same step and a batch crosses the host-device link (or the
network, from a tf.data service) as bytes, a quarter of float32.

The decode/augment pipeline can run in the trainer's tf.data threads or on the workers of a
tf.data service (TensorFlow's dispatcher/worker servers; ``trainbench data-service``), the
pattern the MNIST workload uses (``workloads/mnist_dataheavy/tf_pipeline.py``; that module imports
torch, so the torch-free pieces are repeated here). The dataset graph carries the file paths,
not the files: service workers must see ``data_dir`` at the same path.

Augmentation follows torchvision's ImageNet training recipe (RandomResizedCrop with scale
0.08-1 and aspect ratio 3/4-4/3, horizontal flip), as ``workloads/resnet50_cpu`` does, with
stateless random ops seeded per element, so a pipeline is reproducible for a given seed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up banner out of the run log

import tensorflow as tf

from workloads.mnist_dataheavy.reach import DataServiceError
from workloads.resnet50_tf.files import DataError, ImageList

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
"""ImageNet channel statistics (RGB, on the 0-1 scale), as torchvision's reference recipes use."""
CROP_SCALE = (0.08, 1.0)
CROP_RATIO = (3 / 4, 4 / 3)
"""RandomResizedCrop's area fraction and aspect-ratio ranges (torchvision defaults)."""

Batch = tuple[tf.Tensor, tf.Tensor]


def normalize(images: tf.Tensor) -> tf.Tensor:
    """uint8 [B, H, W, 3] -> float32 [B, H, W, 3], ImageNet-normalized per channel."""
    mean = tf.constant(IMAGENET_MEAN, tf.float32) * 255.0
    std = tf.constant(IMAGENET_STD, tf.float32) * 255.0
    return (tf.cast(images, tf.float32) - mean) / std


def synthetic_batch(batch_size: int, image_size: int, num_classes: int, seed: tuple[int, int]) -> Batch:
    """One random batch ``(uint8 [B, S, S, 3], int64 [B] in [0, num_classes))``, created on the current device."""
    images = tf.random.stateless_uniform(
        [batch_size, image_size, image_size, 3], seed=seed, minval=0, maxval=256, dtype=tf.int32
    )
    labels = tf.random.stateless_uniform(
        [batch_size], seed=(seed[0], seed[1] + 1), minval=0, maxval=num_classes, dtype=tf.int64
    )
    return tf.cast(images, tf.uint8), labels


def _load(path: tf.Tensor, label: tf.Tensor, seed: tf.Tensor, image_size: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Read, decode, random-resized-crop, resize and flip one image -> (uint8 [S, S, 3], label)."""
    image = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
    begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]),
        seed=seed,
        min_object_covered=0.0,
        aspect_ratio_range=CROP_RATIO,
        area_range=CROP_SCALE,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    crop = tf.slice(image, begin, size)
    resized = tf.image.resize(crop, [image_size, image_size], method="bilinear", antialias=True)
    flipped = tf.image.stateless_random_flip_left_right(resized, seed=seed + tf.constant([0, 1], tf.int64))
    return tf.cast(tf.clip_by_value(tf.round(flipped), 0.0, 255.0), tf.uint8), label


def imagefolder_dataset(
    images: ImageList,
    *,
    image_size: int,
    batch_size: int,
    rank: int,
    world_size: int,
    seed: int,
    parallel_calls: int,
) -> tf.data.Dataset:
    """An endless dataset of augmented batches ``(uint8 [B, S, S, 3], int64 [B])`` for one rank.

    The file list is sharded across ranks (rank r reads every world_size-th file), shuffled
    each epoch, and the last partial batch of an epoch is dropped.

    Args:
        images: the listed ImageFolder tree.
        image_size: output side S, pixels.
        batch_size: images per batch (per rank).
        rank, world_size: this rank and the number of ranks.
        seed: shuffle and augmentation seed (the caller adds the rank).
        parallel_calls: decode/augment parallelism (0 = ``tf.data.AUTOTUNE``).

    Raises:
        DataError: this rank's shard holds fewer files than one batch.
    """
    shard = images.shard_size(rank, world_size)
    if shard < batch_size:
        raise DataError(
            f"the ImageFolder has {len(images)} images, so rank {rank} of {world_size} reads {shard}, fewer than "
            f"batch_size={batch_size}; lower batch_size or add images"
        )
    files = tf.data.Dataset.from_tensor_slices(
        (tf.constant(images.paths, tf.string), tf.constant(images.labels, tf.int64))
    )
    if world_size > 1:
        files = files.shard(world_size, rank)
    files = files.shuffle(shard, seed=seed, reshuffle_each_iteration=True).repeat()
    seeds = tf.data.Dataset.random(seed=seed).batch(2)
    ds = tf.data.Dataset.zip((files, seeds))
    ds = ds.map(
        lambda pl, s: _load(pl[0], pl[1], s, image_size),
        num_parallel_calls=parallel_calls or tf.data.AUTOTUNE,
    )
    return ds.batch(batch_size, drop_remainder=True)


def on_service(ds: tf.data.Dataset, address: str, job_name: str) -> tf.data.Dataset:
    """Have the tf.data service at ``address`` (HOST:PORT of its dispatcher) run ``ds``.

    Every worker processes whole epochs of the rank's shard independently
    (``parallel_epochs``) and the rank reads batches round-robin from all of them,
    uncompressed (the batches are already uint8; decompressing would cost the trainer
    CPU time), as the MNIST workload does. ``job_name`` must be unique per rank and run.
    """
    return ds.apply(
        tf.data.experimental.service.distribute(
            processing_mode="parallel_epochs",
            service=f"grpc://{address}",
            job_name=job_name,
            compression=None,
        )
    )


def first_batch(it: Iterator[Batch], timeout_s: float, source: str) -> Batch:
    """The first batch of ``it``, waiting at most ``timeout_s`` seconds (set-up, not measured).

    Raises:
        DataServiceError: nothing arrived in time (for a service: no worker registered,
            or workers that cannot read data_dir), or the pipeline failed.
    """
    box: list[Any] = []

    def pull() -> None:
        try:
            box.append(next(it))
        except BaseException as exc:
            box.append(exc)

    t = threading.Thread(target=pull, name="tfdata-first-batch", daemon=True)
    t.start()
    t.join(timeout_s)
    if not box:
        raise DataServiceError(
            f"no batch arrived from {source} within {timeout_s:.0f} s (service_timeout_s); is at least one "
            "worker registered with its dispatcher (`trainbench data-service worker --dispatcher HOST:PORT`), "
            "and does it see data_dir at the same path?"
        )
    if isinstance(box[0], BaseException):
        raise DataServiceError(f"{source} failed: {box[0]}") from box[0]
    batch: Batch = box[0]
    return batch
