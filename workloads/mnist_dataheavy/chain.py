"""The deliberately CPU-heavy preprocessing chain, and its measured cost.

One *repeat* of the chain, on one 1 x 28 x 28 MNIST image:

1. upscale to (28 * upscale)^2 pixels, bilinear;
2. random affine: rotation within +-ROTATION_DEG, translation within +-TRANSLATE_FRACTION
   of the side, scale within SCALE_RANGE, x-shear within +-SHEAR_DEG, bilinear;
3. Gaussian blur, KERNEL_SIZE x KERNEL_SIZE, sigma drawn from SIGMA_RANGE;
4. downscale back to 28 x 28, bilinear with antialiasing.

``repeats`` (k) applies it k times in a row; then the image is scaled to [0, 1] and
normalized with MNIST's mean and standard deviation. k = 0 leaves only the
normalization: the light pipeline. The cost grows linearly in k and roughly with
upscale^2; it is not given as a number but *measured* on the machine that runs the
chain and recorded as CPU milliseconds per sample (:func:`cpu_ms_per_sample`).

The same chain is written with torchvision transforms v2 here (DataLoader path) and
with TensorFlow ops in ``tf_pipeline`` (tf.data and tf.data service paths).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from torchvision.transforms import v2

ROTATION_DEG = 5.0
TRANSLATE_FRACTION = 0.02
SCALE_RANGE = (0.95, 1.05)
SHEAR_DEG = 3.0
KERNEL_SIZE = 5
SIGMA_RANGE = (0.1, 0.8)
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081
"""Normalization of the PyTorch MNIST example (github.com/pytorch/examples, mnist/main.py)."""


class TorchChain:
    """The chain as torchvision transforms v2: uint8 1 x 28 x 28 -> float32 1 x 28 x 28.

    Picklable, so DataLoader worker processes can run it.

    Args:
        repeats: k, how many times the heavy part runs (0 = normalization only).
        upscale: the heavy part works at (28 * upscale)^2 pixels.
    """

    def __init__(self, repeats: int, upscale: int) -> None:
        if repeats < 0 or upscale < 1:
            raise ValueError(f"repeats must be >= 0 and upscale >= 1, got {repeats} and {upscale}")
        self.repeats = repeats
        self.upscale = upscale
        bilinear = v2.InterpolationMode.BILINEAR
        self.heavy = v2.Compose(
            [
                v2.Resize(28 * upscale, interpolation=bilinear, antialias=True),
                v2.RandomAffine(
                    degrees=ROTATION_DEG,
                    translate=(TRANSLATE_FRACTION, TRANSLATE_FRACTION),
                    scale=SCALE_RANGE,
                    shear=SHEAR_DEG,
                    interpolation=bilinear,
                ),
                v2.GaussianBlur(KERNEL_SIZE, sigma=SIGMA_RANGE),
                v2.Resize(28, interpolation=bilinear, antialias=True),
            ]
        )
        self.final = v2.Compose([v2.ToDtype(torch.float32, scale=True), v2.Normalize([MNIST_MEAN], [MNIST_STD])])

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        """Preprocess one image (uint8, 1 x 28 x 28) into float32 1 x 28 x 28."""
        for _ in range(self.repeats):
            image = self.heavy(image)
        out: torch.Tensor = self.final(image)
        return out


def cpu_ms_per_sample(run_one: Callable[[int], object], indices: Sequence[int], warmup: int = 2) -> float:
    """CPU milliseconds per sample of ``run_one(index)``, measured on this thread.

    Runs with one torch thread (as in a DataLoader worker) and times the calling
    thread's CPU clock (``time.thread_time``), so other processes on the machine do
    not inflate the figure.

    Args:
        run_one: preprocesses the sample at an index.
        indices: the samples to time (at least one).
        warmup: samples run first and not timed (first-call allocations).

    Returns:
        Mean CPU time per sample, ms.

    Raises:
        ValueError: ``indices`` is empty.
    """
    if not indices:
        raise ValueError("cpu_ms_per_sample needs at least one sample")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for i in list(indices)[:warmup]:
            run_one(i)
        t0 = time.thread_time()
        for i in indices:
            run_one(i)
        return (time.thread_time() - t0) * 1e3 / len(indices)
    finally:
        torch.set_num_threads(threads)
