"""JPEG sets a user makes (``data make-imagenet-like``) or brings (an ImageNet tree): the bytes a seed
fixes, photo-like content at ImageNet's sizes, the one reader, and verification against SHA-256s."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from suite.datasets.image_sets import ImageSetError, MakeSettings, make_imagenet_like, write_manifest
from suite.datasets.photos import photo
from suite.datasets.set_verify import verify
from tests.conftest import trainbench
from workloads.image_files import DataError, list_images

SMALL = MakeSettings(classes=3, images_per_class=6, seed=5, long_side=64)


def test_the_same_seed_writes_the_same_bytes_whatever_the_processes(tmp_path: Path) -> None:
    one = make_imagenet_like(tmp_path / "a", SMALL, jobs=1)
    make_imagenet_like(tmp_path / "b", SMALL, jobs=2)
    make_imagenet_like(tmp_path / "c", MakeSettings(**{**SMALL.__dict__, "seed": 6}))
    sums = {k: (tmp_path / k / "SHA256SUMS").read_bytes() for k in "abc"}
    assert sums["a"] == sums["b"] and sums["a"] != sums["c"]
    assert one.images == 18 and one.classes == 3
    assert len(sums["a"].splitlines()) == 18
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["kind"] == "generated" and manifest["generator"]["seed"] == 5
    assert manifest["summary"]["images"] == 18


def test_full_size_images_are_photo_like_and_near_imagenets_mean_file_size(tmp_path: Path) -> None:
    """About 110 KB at 500 px and quality 90 (ImageNet's mean), neither flat nor white noise."""
    s = make_imagenet_like(tmp_path / "set", MakeSettings(classes=2, images_per_class=6, seed=1))
    assert 85_000 < s.mean_bytes < 140_000, s.mean_bytes
    assert s.mean_width is not None and 400 < s.mean_width <= 500
    for path in list_images(tmp_path / "set").files[:4]:
        x = np.asarray(Image.open(path).convert("L"), dtype=np.float64)
        assert 300 <= max(x.shape) <= 500 and min(x.shape) >= 200  # 60-100% of the long side, aspect <= 3:2
        assert x.std() > 20, "not a flat image"
        # neighbouring pixels are correlated (white noise would give about 0)
        corr = np.corrcoef(x[:, :-1].ravel(), x[:, 1:].ravel())[0, 1]
        assert 0.3 < corr < 0.995, corr
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (375, 500, 3), dtype=np.uint8))
    smooth = photo(np.random.default_rng(0), 500, 375, np.full((4, 3), 128, np.uint8), texture=0.0)
    sizes = []
    for im in (noise, smooth):
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=90)
        sizes.append(len(buf.getvalue()))
    assert sizes[1] < 30_000 < s.mean_bytes < sizes[0], "between a smooth image and white noise"


def _imagenet_like_tree(root: Path) -> None:
    """A tiny tree laid out as ImageNet's train/: synset folders, ``.JPEG`` names, one PNG under a JPEG name."""
    rng = np.random.default_rng(0)
    for wnid in ("n01440764", "n01443537"):
        (root / wnid).mkdir(parents=True)
        for i in (10026, 10027):
            Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(
                root / wnid / f"{wnid}_{i}.JPEG", format="JPEG"
            )
    Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)).save(
        root / "n01443537" / "n01443537_2933.JPEG", format="PNG"
    )


def test_the_reader_reads_an_imagenet_tree_unchanged_and_says_what_is_wrong_with_others(tmp_path: Path) -> None:
    train = tmp_path / "imagenet" / "train"
    _imagenet_like_tree(train)
    images = list_images(train)
    assert images.classes == ("n01440764", "n01443537")
    assert images.labels == (0, 0, 1, 1, 1)
    assert [Path(f).name for f in images.files][:2] == ["n01440764_10026.JPEG", "n01440764_10027.JPEG"]
    # the dataset's root instead of its split
    (tmp_path / "imagenet" / "val").mkdir()
    with pytest.raises(DataError, match="hold folders: point data_dir at the split"):
        list_images(tmp_path / "imagenet")
    # ImageNet's val/ as shipped: flat
    flat = tmp_path / "flat"
    flat.mkdir()
    Image.new("RGB", (8, 8)).save(flat / "ILSVRC2012_val_00000001.JPEG", format="JPEG")
    with pytest.raises(DataError, match="1 images directly in it: ImageNet's val/ ships flat"):
        list_images(flat)
    with pytest.raises(DataError, match="is not a directory"):
        list_images(tmp_path / "nowhere")


def test_verify_finds_missing_changed_and_unlisted_images(tmp_path: Path) -> None:
    root = tmp_path / "set"
    make_imagenet_like(root, SMALL)
    report = verify(root)
    assert report.ok and report.checked == 18
    (root / "c0000" / "c0000_00000.JPEG").unlink()
    with (root / "c0001" / "c0001_00002.JPEG").open("ab") as f:
        f.write(b"x")
    Image.new("RGB", (8, 8)).save(root / "c0002" / "new.jpg")
    report = verify(root)
    assert not report.ok and report.checked == 16
    assert report.missing == ["c0000/c0000_00000.JPEG"] and report.changed == ["c0001/c0001_00002.JPEG"]
    assert report.unlisted == ["c0002/new.jpg"]


def test_a_brought_tree_is_sealed_and_hostile_lists_are_refused(tmp_path: Path) -> None:
    train = tmp_path / "train"
    _imagenet_like_tree(train)
    s = write_manifest(train)
    assert s.images == 5 and s.classes == 2
    assert verify(train).ok
    sums = train / "SHA256SUMS"
    text = sums.read_text()
    sums.write_text(text.replace("n01440764/n01440764_10026.JPEG", "../../etc/passwd"))
    with pytest.raises(ImageSetError, match=r"is not the list manifest\.json sealed"):
        verify(train)
    # a list resealed by hand cannot leave the set or run past the manifest's count
    import hashlib

    manifest = json.loads((train / "manifest.json").read_text())
    for body, message in (
        (text.replace("n01440764/n01440764_10026.JPEG", "../../etc/passwd"), "is not a path inside the set"),
        (text + text, "more lines than the manifest's images"),
    ):
        sums.write_text(body)
        manifest["sha256sums_sha256"] = hashlib.sha256(body.encode()).hexdigest()
        (train / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(ImageSetError, match=message):
            verify(train)
    (train / "manifest.json").unlink()
    with pytest.raises(ImageSetError, match=r"manifest\.json is missing"):
        verify(train)


def test_the_commands_make_and_verify_with_exit_codes(tmp_path: Path) -> None:
    root = tmp_path / "set"
    args = ["--classes", "2", "--images-per-class", "3", "--long-side", "48", "--seed", "1"]
    proc = trainbench("data", "make-imagenet-like", str(root), *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "6 images in 2 classes" in proc.stdout and "input_pipeline=dataloader" in proc.stdout
    again = trainbench("data", "make-imagenet-like", str(root), *args, cwd=tmp_path)
    assert again.returncode == 2 and "is not an empty directory" in again.stderr
    assert trainbench("data", "verify", str(root), cwd=tmp_path).returncode == 0
    (root / "c0001" / "c0001_00000.JPEG").write_bytes(b"not a jpeg")
    bad = trainbench("data", "verify", str(root), cwd=tmp_path)
    assert bad.returncode == 1 and "1 changed (first: c0001/c0001_00000.JPEG)" in bad.stderr
