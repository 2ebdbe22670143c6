"""The preprocessing chain in TensorFlow, run by tf.data in this process or by a tf.data service.

The tf.data service (TensorFlow's distributed input pipeline: a dispatcher and
workers) executes a dataset graph on remote CPU workers and streams the results to
the trainer. That is the heterogeneous-cluster pattern of the seed study ("Improve
price performance of your model training using Amazon SageMaker heterogeneous
clusters", Oct 2022): the trainer only trains; extra CPU machines preprocess.

The dataset graph carries the MNIST arrays themselves (about 47 MB for the full
training split), so workers need no access to the trainer's files.

Every batch also carries an *origin*: the host name and ``/proc/self/status`` of the
process that produced it, read by TensorFlow on that process. The trainer parses it
(:mod:`.origin`) to record where preprocessing really ran (host, process id, allowed CPUs).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up banner out of the run log

import numpy as np
import torch
import torchvision  # noqa: F401  (loaded before TensorFlow on purpose, see below)

# isort: split
# torchvision must be loaded before TensorFlow: TensorFlow first, then torchvision, crashes the
# process (SIGSEGV while torchvision's C++ operators load; torch 2.14.1, torchvision 0.29.1, TF 2.21).
import tensorflow as tf

from workloads.mnist_dataheavy.chain import (
    KERNEL_SIZE,
    MNIST_MEAN,
    MNIST_STD,
    ROTATION_DEG,
    SCALE_RANGE,
    SHEAR_DEG,
    SIGMA_RANGE,
    TRANSLATE_FRACTION,
)
from workloads.mnist_dataheavy.mnist import MnistArrays
from workloads.mnist_dataheavy.origin import Origin, parse_origin
from workloads.mnist_dataheavy.reach import DataServiceError

__all__ = [
    "Batch",
    "Origin",
    "TfBatches",
    "build_dataset",
    "chain_fn",
    "cpu_ms_per_sample",
    "local_dataset",
    "parse_origin",
    "service_dataset",
    "with_origin",
]

Batch = tuple[torch.Tensor, torch.Tensor]


def _origin() -> tf.Tensor:
    return tf.strings.join([tf.io.read_file("/proc/sys/kernel/hostname"), tf.io.read_file("/proc/self/status")])


def with_origin(ds: tf.data.Dataset) -> tf.data.Dataset:
    """``ds`` of ``(x, y)`` batches as ``(x, y, origin)``: the process that made each batch (:class:`TfBatches`)."""
    return ds.map(lambda x, y: (x, y, _origin()))


def _gaussian_kernel(sigma: tf.Tensor) -> tf.Tensor:
    r = tf.range(KERNEL_SIZE, dtype=tf.float32) - (KERNEL_SIZE - 1) / 2
    k = tf.exp(-(r**2) / (2.0 * sigma**2))
    return k / tf.reduce_sum(k)


def _heavy_once(x: tf.Tensor, seed: tf.Tensor, side: int) -> tf.Tensor:
    """One repeat of the chain on x: float32 [1, 28, 28, 1] -> [1, 28, 28, 1]."""
    u = tf.random.stateless_uniform([6], seed=seed)
    x = tf.image.resize(x, [side, side], method="bilinear", antialias=True)
    angle = (u[0] * 2 - 1) * ROTATION_DEG * math.pi / 180
    tx = (u[1] * 2 - 1) * TRANSLATE_FRACTION * side
    ty = (u[2] * 2 - 1) * TRANSLATE_FRACTION * side
    scale = SCALE_RANGE[0] + u[3] * (SCALE_RANGE[1] - SCALE_RANGE[0])
    shear = tf.tan((u[4] * 2 - 1) * SHEAR_DEG * math.pi / 180)
    cos, sin = tf.cos(angle), tf.sin(angle)
    # forward map p_out = c + t + A (p_in - c) with A = scale * R(angle) @ [[1, shear], [0, 1]];
    # ImageProjectiveTransform wants the inverse map output -> input: p_in = c + A^-1 (p_out - c - t)
    i00, i01 = (sin * shear + cos) / scale, -(cos * shear - sin) / scale
    i10, i11 = -sin / scale, cos / scale
    c = (side - 1) / 2.0
    ox, oy = c + tx, c + ty
    transform = tf.stack([i00, i01, c - (i00 * ox + i01 * oy), i10, i11, c - (i10 * ox + i11 * oy), 0.0, 0.0])
    x = tf.raw_ops.ImageProjectiveTransformV3(
        images=x,
        transforms=transform[None],
        output_shape=[side, side],
        fill_value=0.0,
        interpolation="BILINEAR",
        fill_mode="CONSTANT",
    )
    k = _gaussian_kernel(SIGMA_RANGE[0] + u[5] * (SIGMA_RANGE[1] - SIGMA_RANGE[0]))
    pad = KERNEL_SIZE // 2
    x = tf.pad(x, [[0, 0], [pad, pad], [pad, pad], [0, 0]], mode="REFLECT")
    x = tf.nn.depthwise_conv2d(x, tf.reshape(k, [KERNEL_SIZE, 1, 1, 1]), [1, 1, 1, 1], "VALID")
    x = tf.nn.depthwise_conv2d(x, tf.reshape(k, [1, KERNEL_SIZE, 1, 1]), [1, 1, 1, 1], "VALID")
    return tf.image.resize(x, [28, 28], method="bilinear", antialias=True)


def chain_fn(repeats: int, upscale: int) -> Any:
    """The chain as a tf.data map function ``(image uint8 [28, 28], label, seed int64 [2]) -> (x, label)``.

    x is float32 [1, 28, 28], normalized like the torchvision chain.
    """
    side = 28 * upscale

    def fn(image: tf.Tensor, label: tf.Tensor, seed: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.cast(image, tf.float32)[None, :, :, None] / 255.0
        for r in range(repeats):
            x = _heavy_once(x, tf.stack([seed[0], seed[1] + r]), side)
        x = (x - MNIST_MEAN) / MNIST_STD
        return tf.transpose(x[0], [2, 0, 1]), label

    return fn


def build_dataset(
    arrays: MnistArrays,
    *,
    repeats: int,
    upscale: int,
    batch_size: int,
    parallel_calls: int | None,
    shuffle: bool,
    seed: int | None,
) -> tf.data.Dataset:
    """An endless dataset of preprocessed batches ``(x [B, 1, 28, 28] float32, y [B] int64, origin string)``.

    Args:
        arrays: the MNIST split (embedded in the graph).
        repeats, upscale: the chain's cost (see ``chain``).
        batch_size: samples per batch (the last partial batch of an epoch is dropped).
        parallel_calls: map parallelism; None runs the map sequentially, 0 lets tf.data tune it.
        shuffle: shuffle each epoch (real data).
        seed: shuffle and augmentation seed; None draws a fresh one per pipeline instance
            (each tf.data service worker then shuffles and augments differently).
    """
    ds = tf.data.Dataset.from_tensor_slices((arrays.images, arrays.labels))
    if shuffle:
        ds = ds.shuffle(min(len(arrays), 10_000), seed=seed, reshuffle_each_iteration=True)
    ds = tf.data.Dataset.zip(ds.repeat(), tf.data.Dataset.random(seed=seed).batch(2))
    fn = chain_fn(repeats, upscale)
    if parallel_calls is None:
        ds = ds.map(lambda xy, s: fn(xy[0], xy[1], s))
    else:
        ds = ds.map(lambda xy, s: fn(xy[0], xy[1], s), num_parallel_calls=parallel_calls or tf.data.AUTOTUNE)
    return with_origin(ds.batch(batch_size, drop_remainder=True))


def cpu_ms_per_sample(arrays: MnistArrays, repeats: int, upscale: int, samples: int, warmup: int = 2) -> float:
    """CPU milliseconds per sample of the TensorFlow chain, measured in this process.

    Runs the chain sequentially on one tf.data thread over the first ``samples``
    images and divides the process CPU time (``time.process_time``, all threads)
    by the number of samples.

    Raises:
        ValueError: ``samples`` < 1.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    ds = tf.data.Dataset.from_tensor_slices((arrays.images[:samples], arrays.labels[:samples])).repeat()
    ds = tf.data.Dataset.zip(ds, tf.data.Dataset.random(seed=0).batch(2))
    fn = chain_fn(repeats, upscale)
    it = iter(local_dataset(ds.map(lambda xy, s: fn(xy[0], xy[1], s)), threads=1, prefetch=0))
    for _ in range(warmup):
        next(it)
    t0 = time.process_time()
    for _ in range(samples):
        next(it)
    return (time.process_time() - t0) * 1e3 / samples


def local_dataset(ds: tf.data.Dataset, threads: int, prefetch: int) -> tf.data.Dataset:
    """Run ``ds`` in this process with a private pool of ``threads`` threads and ``prefetch`` batches ahead.

    The knobs mean what they say: tf.data's own rewrites that would parallelize a
    sequential map or add a prefetch are switched off, so ``threads`` 0 with
    ``prefetch`` 0 runs the whole pipeline inside ``next()``, on the caller's time
    (as a DataLoader without workers does).
    """
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = max(1, threads)
    opts.threading.max_intra_op_parallelism = 1
    opts.experimental_optimization.apply_default_optimizations = False  # e.g. map+batch fusion, parallel batch
    opts.experimental_optimization.map_parallelization = False
    opts.experimental_optimization.inject_prefetch = False
    ds = ds.with_options(opts)
    return ds.prefetch(prefetch) if prefetch > 0 else ds


def service_dataset(ds: tf.data.Dataset, address: str, job_name: str, prefetch: int) -> tf.data.Dataset:
    """Have the tf.data service at ``address`` (HOST:PORT of its dispatcher) run ``ds``.

    Every worker processes whole epochs independently (``parallel_epochs``), and the
    trainer reads batches round-robin from all of them, uncompressed (compression
    would cost the trainer CPU time to undo).
    """
    ds = ds.apply(
        tf.data.experimental.service.distribute(
            processing_mode="parallel_epochs",
            service=f"grpc://{address}",
            job_name=job_name,
            compression=None,
        )
    )
    return ds.prefetch(prefetch) if prefetch > 0 else ds


class TfBatches:
    """One endless iterator over a tf.data pipeline, yielding torch batches.

    Attributes:
        origins: each process seen in the batches read by :meth:`probe`, with its batch count.
    """

    def __init__(self, ds: tf.data.Dataset, pin_memory: bool) -> None:
        self._it = iter(ds.as_numpy_iterator())
        self._pin = pin_memory
        self.origins: dict[Origin, int] = {}

    def probe(self, settle_s: float, timeout_s: float, source: str) -> dict[Origin, int]:
        """Read batches (dropped) to learn which processes produce them.

        Reads until no new producer has appeared for ``settle_s`` seconds, so that
        every worker that serves within that time is seen (a worker joins a job at
        its next heartbeat, about a second). Workers that deliver nothing while the
        probe reads are not counted.

        Args:
            settle_s: seconds without a new producer that end the probe (0: one batch).
            timeout_s: seconds to wait for the first batch, and for the rest.
            source: names the pipeline in error messages.

        Raises:
            DataServiceError: the first batch, or the rest, do not arrive within
                ``timeout_s`` each (for a service: no worker registered, or workers too slow).
        """
        first = threading.Event()
        failure: list[BaseException] = []

        def pull() -> None:
            last_new = time.monotonic()
            try:
                while True:
                    _, _, raw = next(self._it)
                    origin = parse_origin(raw)
                    now = time.monotonic()
                    if origin not in self.origins:
                        last_new = now
                    self.origins[origin] = self.origins.get(origin, 0) + 1
                    first.set()
                    if now - last_new >= settle_s:
                        break
            except BaseException as exc:
                failure.append(exc)
            finally:
                first.set()

        t = threading.Thread(target=pull, name="tfdata-probe", daemon=True)
        t.start()
        if not first.wait(timeout_s):
            raise DataServiceError(
                f"no batch arrived from {source} within {timeout_s:.0f} s (service_timeout_s); for a tf.data "
                "service: is at least one worker registered with its dispatcher "
                "(`trainbench data-service worker --dispatcher HOST:PORT`)?"
            )
        t.join(timeout_s)
        if t.is_alive():
            raise DataServiceError(f"probe batches from {source} stopped arriving for {timeout_s:.0f} s")
        if failure:
            raise DataServiceError(f"{source} failed: {failure[0]}") from failure[0]
        return self.origins

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        x, y, _ = next(self._it)
        xt, yt = torch.from_numpy(np.array(x)), torch.from_numpy(np.array(y))  # writable copies
        if self._pin:
            xt, yt = xt.pin_memory(), yt.pin_memory()
        return xt, yt
