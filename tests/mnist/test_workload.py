"""The workload's parts: parameters, the preprocessing chain and its measured cost, the loader's threading."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from suite.specs import ConfigError, resolve
from workloads.mnist_dataheavy import tf_pipeline as tp
from workloads.mnist_dataheavy.chain import MNIST_MEAN, MNIST_STD, TorchChain, cpu_ms_per_sample
from workloads.mnist_dataheavy.data import PreprocessedMnist, cycle, make_loader
from workloads.mnist_dataheavy.mnist import MnistDataError, synthetic_mnist


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["input_pipeline=tfdata-service"], "needs data_service=HOST:PORT"),
        (["data_service=127.0.0.1:5050"], "applies to input_pipeline=tfdata-service only"),
        (["data=idx"], "data=idx needs data_dir"),
        (["prefetch=4"], "prefetch needs num_workers > 0"),
        (["num_workers=1", "prefetch=0"], "prefetch >= 1"),
        (["preprocess_repeats=-1"], "preprocess_repeats"),
        (["data_service=nohost", "input_pipeline=tfdata-service"], "data_service"),
        (["no_such_knob=1"], "unknown setting"),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve("mnist-dataheavy", None, overrides)


def test_both_profiles_resolve() -> None:
    assert resolve("mnist-dataheavy").params["input_pipeline"] == "dataloader"
    official = resolve("mnist-dataheavy", "official")
    assert official.params["data"] == "idx" and official.params["batch_size"] == 64


def test_light_chain_is_exactly_the_normalization() -> None:
    image = torch.randint(0, 256, (1, 28, 28), dtype=torch.uint8)
    out = TorchChain(0, 4)(image)
    assert out.shape == (1, 28, 28) and out.dtype == torch.float32
    torch.testing.assert_close(out, (image.float() / 255 - MNIST_MEAN) / MNIST_STD)


def test_heavy_chain_changes_the_image_and_costs_more_per_repeat() -> None:
    data = synthetic_mnist(8, seed=0)
    ds0 = PreprocessedMnist(data, TorchChain(0, 4))
    ds6 = PreprocessedMnist(data, TorchChain(6, 4))
    x0, x6 = ds0[0][0], ds6[0][0]
    assert x6.shape == (1, 28, 28) and torch.isfinite(x6).all() and not torch.allclose(x0, x6)
    light = cpu_ms_per_sample(lambda i: ds0[i], range(8))
    heavy = cpu_ms_per_sample(lambda i: ds6[i], range(8))
    assert light > 0 and heavy > 10 * light, (light, heavy)


def test_trainer_side_preprocessing_runs_on_one_thread() -> None:
    seen: list[int] = []

    class Recording(PreprocessedMnist):
        def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
            seen.append(torch.get_num_threads())
            return super().__getitem__(index)

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        loader = make_loader(
            Recording(synthetic_mnist(8, 0), TorchChain(0, 1)),
            batch_size=4,
            num_workers=0,
            prefetch=2,
            pin_memory=False,
            seed=0,
        )
        it = cycle(loader)
        batches = [next(it) for _ in range(3)]  # crosses an epoch boundary (2 batches per epoch)
        assert [b[0].shape for b in batches] == [(4, 1, 28, 28)] * 3
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2  # training keeps its threads
    finally:
        torch.set_num_threads(threads)


def test_loader_refuses_too_little_data() -> None:
    with pytest.raises(MnistDataError, match="fewer than batch_size=16"):
        make_loader(
            PreprocessedMnist(synthetic_mnist(8, 0), TorchChain(0, 1)),
            batch_size=16,
            num_workers=0,
            prefetch=2,
            pin_memory=False,
            seed=0,
        )


def test_tf_chain_matches_the_torch_chain_where_it_must() -> None:
    data = synthetic_mnist(64, seed=2)
    image = data.images[0]
    x0, _ = tp.chain_fn(0, 4)(image, data.labels[0], np.array([1, 2], dtype=np.int64))
    expected = (torch.from_numpy(image).float() / 255 - MNIST_MEAN) / MNIST_STD
    np.testing.assert_allclose(x0.numpy()[0], expected.numpy(), rtol=1e-5, atol=1e-5)
    x3, _ = tp.chain_fn(3, 4)(image, data.labels[0], np.array([1, 2], dtype=np.int64))
    assert x3.shape == (1, 28, 28) and np.isfinite(x3.numpy()).all() and not np.allclose(x3.numpy(), x0.numpy())
    assert tp.cpu_ms_per_sample(data, 4, 4, 8) > 10 * tp.cpu_ms_per_sample(data, 0, 4, 8)
    ds = tp.local_dataset(
        tp.build_dataset(data, repeats=1, upscale=2, batch_size=8, parallel_calls=None, shuffle=True, seed=0),
        threads=1,
        prefetch=0,
    )
    batches = tp.TfBatches(ds, pin_memory=False)
    origins = batches.probe(0.0, 60, "test pipeline")
    assert sum(origins.values()) == 1  # settle_s 0: the first batch only
    [origin] = origins
    assert origin.pid == os.getpid() and origin.cpus == tuple(sorted(os.sched_getaffinity(0)))
    x, y = next(batches)
    assert x.shape == (8, 1, 28, 28) and x.dtype == torch.float32 and y.dtype == torch.int64


def test_parse_origin_of_this_process() -> None:
    raw = Path("/proc/sys/kernel/hostname").read_bytes() + Path("/proc/self/status").read_bytes()
    origin = tp.parse_origin(raw)
    assert origin.pid == os.getpid() and origin.host == os.uname().nodename
    with pytest.raises(ValueError, match="lacks Pid"):
        tp.parse_origin(b"host\nName: x\n")
