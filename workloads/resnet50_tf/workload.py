"""One Horovod rank of data-parallel ResNet-50 training in TensorFlow 2.15 (Keras 2).

The training step follows Horovod's ``examples/tensorflow2/tensorflow2_synthetic_benchmark.py``
(v0.28.1): a ``tf.function`` step whose ``tf.GradientTape`` is wrapped in
``hvd.DistributedGradientTape`` (gradients averaged over all ranks), and
``hvd.broadcast_variables`` of the model's and the optimizer's variables from rank 0 after the
first step, once the optimizer has created its slots.

Nothing here imports torch: the trainbench-tf image has none.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import math
import os
import uuid
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up banner out of the run log

import tensorflow as tf

# isort: split
import horovod
import horovod.tensorflow as hvd

from harness.system import read_isa
from harness.workload import Workload
from workloads.checks import NonFiniteLossError, WorkloadRefused
from workloads.mnist_dataheavy.reach import check_reachable
from workloads.resnet50_tf.data import Batch, first_batch, imagefolder_dataset, normalize, on_service, synthetic_batch
from workloads.resnet50_tf.files import ImageList, list_imagefolder
from workloads.resnet50_tf.params import ResNet50TFParams
from workloads.resnet50_tf.precision import bf16_refusal, onednn_only

POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
"""precision -> Keras mixed-precision policy (bfloat16/float16 compute, float32 variables)."""


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


class ResNet50TF(Workload):
    """ResNet-50 (``tf.keras.applications.ResNet50``, random weights) trained with SGD and sparse
    categorical cross-entropy, data-parallel over Horovod.

    Implements :class:`harness.workload.Workload` with its distributed hooks (agree_done, all_gather, shutdown).

    Layout: NHWC (``channels_last``), TensorFlow's default and what its CPU (oneDNN) and GPU
    (cuDNN) convolutions prefer; inputs are uint8 images normalized inside the step.

    Synchronization: on CPU a TensorFlow step has finished when it returns, so the harness
    synchronizes after each step (``sync_each_step``) and the loss is checked every step. On
    a GPU, kernels are queued: the loss check is a device-side counter read at window edges,
    and :meth:`synchronize` waits for the devices. :meth:`synchronize` is also a barrier across
    ranks, so every rank opens and closes each window together.

    Raises (from ``__init__``):
        RuntimeError: device=gpu but TensorFlow sees no GPU; precision=fp16 without a GPU.
        workloads.checks.WorkloadRefused: precision=bf16 on a CPU whose bf16 a oneDNN ISA cap
            hides (:mod:`workloads.resnet50_tf.precision`).
        workloads.resnet50_tf.files.DataError: the ImageFolder cannot feed a batch.
        workloads.mnist_dataheavy.reach.DataServiceError: the tf.data service is unreachable
            or delivers no batch within service_timeout_s.
    """

    def __init__(self, params: ResNet50TFParams) -> None:
        self.params = p = params
        hvd.init()
        self.rank, self.world_size, self.local_rank = hvd.rank(), hvd.size(), hvd.local_rank()
        if p.intra_op_threads:
            tf.config.threading.set_intra_op_parallelism_threads(p.intra_op_threads)
        if p.inter_op_threads:
            tf.config.threading.set_inter_op_parallelism_threads(p.inter_op_threads)
        gpus = tf.config.list_physical_devices("GPU")
        if p.device == "gpu" and not gpus:
            raise RuntimeError(
                f"device=gpu but TensorFlow {tf.__version__} sees no GPU (the trainbench-tf image has the CPU "
                "build of TensorFlow); run with --set device=cpu"
            )
        if p.device == "cpu" or not gpus:
            tf.config.set_visible_devices([], "GPU")
            self.device = "cpu"
        else:  # one GPU per rank, as Horovod's examples pin it
            gpu = gpus[self.local_rank % len(gpus)]
            tf.config.experimental.set_memory_growth(gpu, True)
            tf.config.set_visible_devices(gpu, "GPU")
            self.device = "gpu"
        if p.precision == "fp16" and self.device != "gpu":
            raise RuntimeError("precision=fp16 needs a GPU (device=gpu); on CPU use bf16 or fp32")
        on_cpu_bf16 = p.precision == "bf16" and self.device == "cpu"
        if on_cpu_bf16 and (refusal := bf16_refusal(read_isa(env=onednn_only(os.environ)))) is not None:
            raise WorkloadRefused(refusal)
        self.sync_each_step = self.device == "cpu"
        self._tf_device = "/GPU:0" if self.device == "gpu" else "/CPU:0"

        tf.keras.mixed_precision.set_global_policy(POLICIES[p.precision])
        tf.random.set_seed(p.seed)
        with tf.device(self._tf_device):
            self.model = tf.keras.applications.ResNet50(
                weights=None,
                classes=p.num_classes,
                input_shape=(p.image_size, p.image_size, 3),
                classifier_activation=None,  # logits; the loss is taken in float32 from them
            )
            optimizer: Any = tf.keras.optimizers.SGD(learning_rate=p.lr, momentum=p.momentum)
            if p.precision == "fp16":
                optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
            self.optimizer = optimizer
            self._nonfinite = tf.Variable(0, dtype=tf.int64, trainable=False, name="nonfinite_losses")
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self._compression = hvd.Compression.fp16 if p.fp16_allreduce else hvd.Compression.none
        self._train_step = tf.function(self._step_fn)
        self._broadcast_done = False

        self.images: ImageList | None = None
        self._first: Batch | None = None
        self.data_service_job: str | None = None
        if p.data == "synthetic":
            with tf.device(self._tf_device):
                self._synthetic = synthetic_batch(p.batch_size, p.image_size, p.num_classes, (p.seed, self.rank))
        else:
            assert p.data_dir is not None  # checked by the params model
            self.images = list_imagefolder(p.data_dir)
            if p.data_service:
                check_reachable(p.data_service, p.service_timeout_s)
            ds = imagefolder_dataset(
                self.images,
                image_size=p.image_size,
                batch_size=p.batch_size,
                rank=self.rank,
                world_size=self.world_size,
                seed=p.seed + self.rank,
                parallel_calls=p.num_parallel_calls,
            )
            if p.data_service:
                self.data_service_job = f"trainbench-resnet50-tf-{uuid.uuid4().hex[:12]}-rank{self.rank}"
                ds = on_service(ds, p.data_service, self.data_service_job)
            self._dataset = ds.prefetch(p.prefetch) if p.prefetch > 0 else ds
            self._iterator: Iterator[Batch] = iter(self._dataset)
            if p.data_service:
                self._first = first_batch(
                    self._iterator, p.service_timeout_s, f"the tf.data service at {p.data_service}"
                )

    # ---- the training step ----

    def _step_fn(self, images: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        """Forward, loss, all-reduced backward, SGD update; returns the float32 loss (traced once)."""
        fp16 = self.params.precision == "fp16"
        x = normalize(images)
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            loss = self.loss_fn(labels, tf.cast(logits, tf.float32))
            scaled = self.optimizer.get_scaled_loss(loss) if fp16 else loss
        dist_tape = hvd.DistributedGradientTape(tape, compression=self._compression)
        grads = dist_tape.gradient(scaled, self.model.trainable_variables)
        if fp16:
            grads = self.optimizer.get_unscaled_gradients(grads)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=True))
        if not self.sync_each_step:
            self._nonfinite.assign_add(tf.cast(tf.logical_not(tf.math.is_finite(loss)), tf.int64))
        return loss

    def batches(self) -> Iterator[Any]:
        """Endless batches: the fixed synthetic batch, or the tf.data pipeline (repeated epochs)."""
        if self.params.data == "synthetic":
            return itertools.repeat(self._synthetic)
        if self._first is not None:
            first, self._first = self._first, None
            return itertools.chain([first], self._iterator)
        return self._iterator

    def step(self, batch: Any) -> int:
        """One optimizer step on ``batch`` (uint8 images [B, S, S, 3], int64 labels [B]); returns B.

        Raises:
            NonFiniteLossError: the loss is NaN or infinite (checked here on CPU; on a GPU
                at the next window edge, in :meth:`synchronize`).
        """
        images, labels = batch
        with tf.device(self._tf_device):
            loss = self._train_step(images, labels)
        if not self._broadcast_done:
            # Horovod's recipe: after the first step, once the optimizer's slot variables exist.
            hvd.broadcast_variables(self.model.variables, root_rank=0)
            hvd.broadcast_variables(self._optimizer_variables(), root_rank=0)
            self._broadcast_done = True
        if self.sync_each_step:
            value = float(loss)
            if not math.isfinite(value):
                raise NonFiniteLossError(f"training loss is {value} on rank {self.rank}; the run is invalid")
        return int(images.shape[0])

    def _optimizer_variables(self) -> list[tf.Variable]:
        variables = self.optimizer.variables
        return list(variables() if callable(variables) else variables)

    # ---- the harness's and workloads.rank's distributed hooks ----

    def synchronize(self) -> None:
        """Wait for every queued device operation of this rank, check the GPU loss counter,
        then wait for all ranks (a one-element all-reduce serves as a barrier).

        Raises:
            NonFiniteLossError: a step since the last check had a NaN or infinite loss.
        """
        if self.device == "gpu":
            tf.test.experimental.sync_devices()
            bad = int(self._nonfinite.numpy())
            if bad:
                raise NonFiniteLossError(f"{bad} training step(s) had a NaN or infinite loss on rank {self.rank}")
        if self.world_size > 1:
            with tf.device("/CPU:0"):
                hvd.allreduce(tf.constant(0, tf.int32), op=hvd.Sum, name="trainbench.barrier")

    def agree_done(self, local_done: bool) -> bool:
        """True when every rank has met both minimums of the current window (all-reduce MIN of 0/1)."""
        if self.world_size == 1:
            return local_done
        with tf.device("/CPU:0"):
            flag = hvd.allreduce(tf.constant(1 if local_done else 0, tf.int32), op=hvd.Min, name="trainbench.done")
        return bool(int(flag.numpy()))

    def all_gather(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``obj``, in rank order, on every rank (``hvd.allgather_object``, cloudpickle)."""
        return list(hvd.allgather_object(obj, name="trainbench.all_gather"))

    def shutdown(self) -> None:
        """Shut Horovod down (its background thread and the Gloo context)."""
        hvd.shutdown()

    def describe(self) -> dict[str, Any]:
        """What was built and where (JSON-ready): model, engine, versions, ranks, batch sizes, precision, data."""
        p = self.params
        info: dict[str, Any] = {
            "model": "tf.keras.applications.ResNet50",
            "parameters": int(self.model.count_params()),
            "optimizer": "SGD" + (" + LossScaleOptimizer" if p.precision == "fp16" else ""),
            "loss": "SparseCategoricalCrossentropy(from_logits=True), float32",
            "engine": "horovod",
            "framework": "tensorflow",
            "tensorflow_version": tf.__version__,
            "keras_version": _version("keras"),
            "horovod_version": horovod.__version__,
            "horovod_controller": "gloo" if hvd.gloo_enabled() else ("mpi" if hvd.mpi_enabled() else "unknown"),
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world_size": self.world_size,
            "per_rank_batch_size": p.batch_size,
            "global_batch_size": p.batch_size * self.world_size,
            "precision": p.precision,
            "mixed_precision_policy": tf.keras.mixed_precision.global_policy().name,
            "fp16_allreduce": p.fp16_allreduce,
            "device": self.device,
            "devices": [d.name for d in tf.config.get_visible_devices()],
            "data_format": tf.keras.backend.image_data_format(),
            "image_size": p.image_size,
            "data": p.data,
            "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
        }
        if self.images is not None:
            info["dataset_samples"] = len(self.images)
            info["classes"] = len(self.images.classes)
            info["rank_shard_samples"] = self.images.shard_size(self.rank, self.world_size)
            info["preprocessing"] = self._preprocessing()
        return info

    def _preprocessing(self) -> dict[str, Any]:
        """Where the decode/augment pipeline runs, in the keys the report and MLflow read
        (``engine``, ``placement``, ``location``, ``workers``, ``cores``; as mnist-dataheavy)."""
        p = self.params
        parallel: int | str = p.num_parallel_calls or "autotune"
        if p.data_service:
            return {
                "engine": "tf.data service",
                "placement": "remote",
                "location": f"workers of the tf.data service dispatcher at {p.data_service}",
                "workers": None,  # not probed: the dispatcher hands the job to every registered worker
                "cores": None,
                "parallel_calls_per_worker": parallel,
                "dispatcher": p.data_service,
                "job": self.data_service_job,
            }
        return {
            "engine": "tf.data",
            "placement": "trainer",
            "location": "trainer process (tf.data threads)",
            "workers": parallel,
            "cores": len(os.sched_getaffinity(0)),
            "prefetch": p.prefetch,
        }
