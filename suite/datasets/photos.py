"""Photo-like pixels for a generated JPEG set: what a JPEG decoder and a crop see in real photos,
with no photo in them.

An image is a smooth colour field (a coarse grid of the class's colours, upsampled bicubically:
sky, walls, out-of-focus background), soft-edged shapes (ellipses, rectangles, polygons drawn at
half resolution and upsampled), and band-limited texture (Gaussian noise at half and full
resolution, with a chroma component) whose strength varies smoothly across the image, so some
regions are flat and others busy, as in photographs. Neither constant (which JPEG compresses to
almost nothing) nor white noise (which it cannot compress at all).

The texture strength sets the JPEG size. :data:`DEFAULT_TEXTURE` was tuned so that the default
sizes at quality 90 average about 110 KB, about ImageNet's mean file size (ILSVRC-2012's training
archive holds about 138 GiB in 1,281,167 files, about 115 KB each). Measured with
``trainbench data make-imagenet-like`` (its summary prints the mean): 300 images of seed 11 at the
defaults averaged 110.8 KB and 461 x 387 px.

Everything is drawn from the ``numpy.random.Generator`` passed in, so a seed fixes the pixels
(and, with the same Pillow, the JPEG bytes).
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

DEFAULT_TEXTURE = 0.25
"""Texture amplitude (fraction of the 0-255 range per unit of noise), tuned for ~110 KB at 500x375, quality 90."""

ASPECTS = ((4 / 3, 0.55), (3 / 2, 0.25), (5 / 4, 0.1), (1.0, 0.1))
"""(long side / short side, probability): ImageNet's common shapes, 500x375 (4:3) the most frequent."""
PORTRAIT = 0.2
"""Share of portrait (taller than wide) images."""
FULL_SIZE = 0.85
"""Share of images whose long side is the set's long side (ImageNet's images mostly have 500 px);
the rest are smaller, down to 60% of it."""


def image_size(rng: np.random.Generator, long_side: int) -> tuple[int, int]:
    """(width, height) of one image: a common aspect ratio, mostly landscape, mostly full size.

    Raises:
        ValueError: ``long_side`` < 8.
    """
    if long_side < 8:
        raise ValueError(f"long side must be >= 8 px, got {long_side}")
    aspects, weights = zip(*ASPECTS, strict=True)
    aspect = float(rng.choice(aspects, p=weights))
    long = long_side if rng.random() < FULL_SIZE else round(long_side * rng.uniform(0.6, 1.0))
    short = max(8, round(long / aspect))
    return (short, long) if rng.random() < PORTRAIT else (long, short)


def class_palette(rng: np.random.Generator) -> np.ndarray:
    """Four base colours of one class (uint8, 4 x 3): each class's images share a colour scheme."""
    return rng.integers(30, 226, size=(4, 3), dtype=np.uint8)


def _upsample(a: np.ndarray, width: int, height: int, resample: Image.Resampling) -> np.ndarray:
    """A float32 2-D array resized to height x width (a writable copy)."""
    return np.array(Image.fromarray(a, mode="F").resize((width, height), resample))


def photo(rng: np.random.Generator, width: int, height: int, palette: np.ndarray, texture: float) -> Image.Image:
    """One photo-like RGB image of ``width`` x ``height`` pixels.

    Args:
        rng: the image's own generator (everything random comes from it).
        palette: the class's colours (:func:`class_palette`).
        texture: texture amplitude (:data:`DEFAULT_TEXTURE`; 0 gives smooth shapes only).
    """
    hw, hh = max(2, width // 2), max(2, height // 2)
    grid = palette[rng.integers(0, len(palette), size=(3, 4))].astype(np.int16)
    grid += rng.integers(-25, 26, size=grid.shape, dtype=np.int16)
    canvas = Image.fromarray(np.clip(grid, 0, 255).astype(np.uint8)).resize((hw, hh), Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(canvas)
    for _ in range(int(rng.integers(4, 14))):
        x0, y0 = rng.random() * hw, rng.random() * hh
        sw, sh = (0.05 + 0.4 * rng.random()) * hw, (0.05 + 0.4 * rng.random()) * hh
        colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
        kind = int(rng.integers(3))
        if kind == 0:
            draw.ellipse((x0, y0, x0 + sw, y0 + sh), fill=colour)
        elif kind == 1:
            draw.rectangle((x0, y0, x0 + sw, y0 + sh), fill=colour)
        else:
            points = rng.random((5, 2)) * (sw, sh) + (x0, y0)
            draw.polygon([(float(x), float(y)) for x, y in points], fill=colour)
    pixels = np.asarray(canvas.resize((width, height), Image.Resampling.BICUBIC), dtype=np.float32)
    if texture > 0:
        strength = _upsample(0.2 + rng.random((2, 3), dtype=np.float32), width, height, Image.Resampling.BICUBIC)
        grain = _upsample(rng.standard_normal((hh, hw), dtype=np.float32), width, height, Image.Resampling.BILINEAR)
        grain += 0.5 * rng.standard_normal((height, width), dtype=np.float32)
        grain *= strength * (texture * 255)
        pixels += grain[..., None]
        chroma = rng.standard_normal((max(1, hh // 2), max(1, hw // 2)), dtype=np.float32)
        pixels[..., int(rng.integers(3))] += (
            _upsample(chroma, width, height, Image.Resampling.BILINEAR) * strength * (texture * 60)
        )
    return Image.fromarray(np.clip(pixels + 0.5, 0, 255).astype(np.uint8))
