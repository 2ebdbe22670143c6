"""The TensorFlow image (trainbench-tf) against a real engine: its lock, build and labels, Horovod's build
(TensorFlow + Gloo), TensorFlow 2.15 with Keras 2 and no torch, the workload's Horovod hooks with two real
ranks (on synthetic batches), and resnet50-tf-horovod run end to end by ``trainbench run --runtime docker``
with two Horovod ranks on CPU: bf16 where the CPU has native bf16 (fp32 elsewhere) on an ImageFolder read
with tf.data in the trainers, and fp32 on one preprocessed on a tf.data service (TensorFlow 2.21 on the
host) read by the image's TensorFlow 2.15.

Skipped without an engine or without the image (``make images IMAGES=trainbench-tf``); failed instead
in CI (``TRAINBENCH_REQUIRE_DOCKER=1``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from harness.precision import choose_precision
from harness.records import Phase
from harness.system import read_isa
from suite.containers.images import LABEL_INPUTS, LABEL_LOCK, get_image, lock_digest, oci_metadata
from suite.containers.lock import LOCKS, TF_IMAGE_DEPENDENCIES, LockError, check_lock, locked_packages
from suite.results import Result, read_result
from tests.conftest import REPO, TINY_RUN, trainbench
from tests.containers.conftest import _ensure
from workloads.resnet50_tf.precision import bf16_refusal, onednn_only


@pytest.fixture(scope="session")
def tf_image(engine: Any) -> Any:
    """The trainbench-tf image of this checkout (docker.models.images.Image)."""
    return _ensure(engine, "trainbench-tf")


def _sh(engine: Any, image: Any, script: str) -> str:
    out: bytes = engine.containers.run(image.id, ["-c", script], entrypoint="sh", network_mode="none", remove=True)
    return out.decode()


def test_tf_lock_pins_tensorflow_215_keras_2_horovod_and_no_torch() -> None:
    pinned = locked_packages(REPO / LOCKS["tf"].path)
    assert pinned["tensorflow-cpu"].startswith("2.15.") and pinned["keras"].startswith("2.15.")
    assert pinned["horovod"] == "0.28.1" and int(pinned["numpy"].split(".")[0]) == 1
    assert {"pydantic", "psutil", "pyyaml", "click", "rich", "setuptools", "wheel", "cmake"} <= set(pinned)
    assert not {"torch", "torchvision", "mlflow", "docker"} & set(pinned)


def test_tf_lock_follows_pyproject_for_the_listed_dependencies_only(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "containers" / "tf").mkdir(parents=True)
    for rel in ("pyproject.toml", "containers/tf/requirements.in", LOCKS["tf"].path):
        shutil.copy(REPO / rel, root / rel)
    check_lock(LOCKS["tf"], root)
    text = (root / "pyproject.toml").read_text()
    assert '"mlflow>=3.17,<4",' in text and '"pydantic>=2.6,<3",' in text and '"psutil>=5.9",' in text
    (root / "pyproject.toml").write_text(text.replace('"mlflow>=3.17,<4",', '"mlflow>=3.18,<4",'))
    check_lock(LOCKS["tf"], root)  # MLflow is not in the TF image: its lock is unaffected
    (root / "pyproject.toml").write_text(text.replace('"pydantic>=2.6,<3",', '"pydantic>=2.7,<3",'))
    with pytest.raises(LockError, match=r"stale.*make lock"):
        check_lock(LOCKS["tf"], root)
    (root / "pyproject.toml").write_text(text.replace('    "psutil>=5.9",\n', ""))
    with pytest.raises(LockError, match=r"\['psutil'\] are in neither \[project\].dependencies nor an extra"):
        check_lock(LOCKS["tf"], root)
    assert set(TF_IMAGE_DEPENDENCIES) <= set(locked_packages(REPO / LOCKS["tf"].path))


def test_tf_image_is_labelled_non_root_and_has_tf_215_with_keras_2_and_no_torch(engine: Any, tf_image: Any) -> None:
    labels = tf_image.labels
    meta = oci_metadata(REPO)
    assert labels["org.opencontainers.image.title"] == "trainbench-tf"
    assert labels["org.opencontainers.image.version"] == meta["VERSION"]
    assert labels["org.opencontainers.image.revision"] not in ("", "unknown")
    assert labels["org.opencontainers.image.source"].strip()
    assert labels[LABEL_LOCK] == lock_digest(get_image("trainbench-tf"), REPO)
    assert len(labels[LABEL_INPUTS]) == 64
    config = tf_image.attrs["Config"]
    uid = config["User"].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, config["User"]
    assert config["Entrypoint"] == ["trainbench"]
    out = engine.containers.run(tf_image.id, ["--version"], network_mode="none", remove=True).decode()
    assert f"trainbench, version {meta['VERSION']}" in out
    script = (
        "test ! -e /tmp/ca && id -u && python -c 'import tensorflow as tf, keras, numpy, horovod;"
        ' print("versions", tf.__version__, keras.__version__, numpy.__version__, horovod.__version__)\''
        " && (python -c 'import torch' 2>/dev/null && echo torch-present || echo torch-absent)"
        " && (python -m pip show cmake >/dev/null 2>&1 && echo cmake-present || echo cmake-absent)"
    )
    out = _sh(engine, tf_image, script)
    assert out.split()[0] == uid
    m = re.search(r"versions (\d+)\.(\d+)\.\S+ (\d+)\.\S+ (\d+)\.\S+ (\S+)", out)
    assert m is not None, out
    tf_major, tf_minor, keras_major, numpy_major, hvd = m.groups()
    assert (int(tf_major), int(tf_minor)) <= (2, 15) and (tf_major, tf_minor) == ("2", "15"), out
    assert keras_major == "2" and numpy_major == "1" and hvd == "0.28.1", out
    assert "torch-absent" in out and "cmake-absent" in out, out


BUILT_SCRIPT = """
import glob, json, os
import horovod, horovod.tensorflow as hvd
flags = ("gloo_built", "mpi_built", "nccl_built", "ccl_built", "ddl_built", "cuda_built", "rocm_built")
here = os.path.dirname(horovod.__file__)
print(json.dumps({
    "built": {f: bool(getattr(hvd, f)()) for f in flags},
    "extensions": sorted(os.path.relpath(p, here) for p in glob.glob(os.path.join(here, "*", "mpi_lib*.so"))),
}))
"""


def test_horovod_is_built_with_tensorflow_and_gloo_only(engine: Any, tf_image: Any) -> None:
    """What ``horovodrun --check-build`` lists (containers/README.md), asked of Horovod's own API in one process:
    check-build loads each framework's extension in a process of its own, and each imports TensorFlow (35 s
    where this takes 8). Importing horovod.tensorflow loads the compiled TensorFlow extension; Gloo is the only
    controller, and the TensorFlow extension is the only one compiled (Horovod 0.28.1's check-build shows
    "[X] PyTorch" without torch, because horovod.torch tolerates a missing extension)."""
    out = engine.containers.run(
        tf_image.id, ["-c", BUILT_SCRIPT], entrypoint="python", network_mode="none", remove=True
    ).decode()
    report = json.loads(out.strip().splitlines()[-1])
    built = report["built"]
    assert built.pop("gloo_built") is True, report
    assert not any(built.values()), f"only Gloo is built in: {report}"
    assert [Path(p).parent.name for p in report["extensions"]] == ["tensorflow"], report


def test_second_build_reuses_the_image(tf_image: Any) -> None:
    t0 = time.monotonic()
    proc = trainbench("images", "build", "trainbench-tf", cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"reusing image {tf_image.id}" in proc.stdout
    assert time.monotonic() - t0 < 60


HOOKS_SCRIPT = """
import json, sys
import numpy as np
from workloads.resnet50_tf.params import ResNet50TFParams
from workloads.resnet50_tf.workload import NonFiniteLossError, ResNet50TF

w = ResNet50TF(ResNet50TFParams(device="cpu", batch_size=2, image_size=32, num_classes=10))
r = w.rank
out = {"rank": r, "world_size": w.world_size, "sync_each_step": w.sync_each_step}
out["data"] = w.describe()["data"]  # the default: one synthetic batch, as Horovod's synthetic benchmark
out["agree_mixed"] = w.agree_done(r == 0)
out["agree_all"] = w.agree_done(True)
out["agree_none"] = w.agree_done(False)
out["gathered"] = w.all_gather({"rank": r, "items": [r] * 3})
if r == 1:  # rank 0's weights must win: the broadcast after the first step
    w.model.trainable_variables[0].assign_add(np.ones(w.model.trainable_variables[0].shape, np.float32))
batches = iter(w.batches())
out["samples"] = w.step(next(batches))
w.synchronize()
total = float(sum(np.sum(v.numpy().astype(np.float64)) for v in w.model.variables))
out["weight_sums"] = [g["s"] for g in w.all_gather({"s": total})]
w.optimizer.learning_rate.assign(1e30)
out["nonfinite"] = None
try:
    for _ in range(10):
        w.step(next(batches))
        w.synchronize()
except NonFiniteLossError as exc:
    out["nonfinite"] = str(exc)
w.shutdown()
open(f"{sys.argv[1]}/hooks-{r}.json", "w").write(json.dumps(out))
"""


def test_horovod_hooks_agree_gather_broadcast_and_nan_check(engine: Any, tf_image: Any, tmp_path: Path) -> None:
    """The workload's distributed hooks with two real ranks: agree_done is a MIN over ranks,
    all_gather returns every rank's object in rank order, rank 0's weights reach every rank after
    the first step, and a diverging loss raises NonFiniteLossError on every rank."""
    work = tmp_path / "hooks"
    work.mkdir()
    (work / "hooks.py").write_text(HOOKS_SCRIPT)
    work.chmod(0o777)  # the image's non-root user writes the reports
    logs = engine.containers.run(
        tf_image.id,
        ["--gloo", "-np", "2", "-H", "localhost:2", "python", "/work/hooks.py", "/work"],
        entrypoint="horovodrun",
        volumes={str(work): {"bind": "/work", "mode": "rw"}},
        network_mode="host",
        shm_size="256m",
        remove=True,
    ).decode()
    reports = [json.loads((work / f"hooks-{r}.json").read_text()) for r in (0, 1)]
    for r, rep in enumerate(reports):
        assert rep["rank"] == r and rep["world_size"] == 2 and rep["sync_each_step"] is True, logs
        assert rep["data"] == "synthetic", rep
        assert (rep["agree_mixed"], rep["agree_all"], rep["agree_none"]) == (False, True, False)
        assert rep["gathered"] == [{"rank": 0, "items": [0, 0, 0]}, {"rank": 1, "items": [1, 1, 1]}]
        assert rep["samples"] == 2
        assert rep["weight_sums"][0] == rep["weight_sums"][1], "rank 0's variables were broadcast"
        assert re.fullmatch(rf"training loss is (nan|inf|-inf) on rank {r}; the run is invalid", rep["nonfinite"]), rep


def _run_tf(tmp_path: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    out = tmp_path / "out"
    proc = trainbench(
        "run",
        "resnet50-tf-horovod",
        *TINY_RUN,
        "--set",
        "device=cpu",
        "--set",
        "nproc_per_node=2",
        "--set",
        "intra_op_threads=1",
        *extra,
        "--runtime",
        "docker",
        "--shm-size",
        "256m",
        "--output-dir",
        str(out),
        "--no-tracking",
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    [path] = sorted(out.rglob("result.json"))
    return read_result(path), json.loads(path.read_text())


def _check_two_rank_result(result: Result, raw: dict[str, Any], tf_image: Any) -> None:
    """The combined result of two ranks: both ranks' records, samples summed, the slowest rank's window."""
    assert result.status == "complete" and result.world_size == 2 and raw["world_size"] == 2
    assert result.runtime.kind == "docker" and result.runtime.launcher == "horovodrun"
    assert result.runtime.image == "trainbench-tf:latest" and result.runtime.image_id == tf_image.id
    info = result.workload_info
    assert info["engine"] == "horovod" and info["framework"] == "tensorflow" and info["device"] == "cpu"
    assert info["tensorflow_version"].startswith("2.15.") and info["keras_version"].startswith("2.")
    assert info["horovod_version"] == "0.28.1" and info["horovod_controller"] == "gloo"
    assert info["world_size"] == 2 and info["global_batch_size"] == 2 * info["per_rank_batch_size"] == 4
    assert info["data_format"] == "channels_last" and info["parameters"] > 20_000_000
    assert [r["rank"] for r in result.environment["ranks"]] == [0, 1]

    measured = [w for w in result.windows if w.phase is Phase.MEASUREMENT]
    assert sorted(w.rank for w in measured) == [0, 1], "one measurement window per rank"
    steps = [s for s in result.steps if s.phase is Phase.MEASUREMENT]
    per_rank = {r: [s for s in steps if s.rank == r] for r in (0, 1)}
    assert len(per_rank[0]) == len(per_rank[1]) >= 3, "agree_done: every rank ends the window at the same step"
    for w in measured:
        assert w.samples == sum(s.samples for s in per_rank[w.rank]) == 2 * w.steps
    total = sum(w.samples for w in measured)
    slowest = max(w.seconds for w in measured)
    assert result.summary is not None
    assert result.summary.measured_samples == total == sum(s.samples for s in steps)
    assert result.summary.measured_seconds == pytest.approx(slowest)
    assert result.summary.throughput == pytest.approx(total / slowest, rel=1e-9)
    # the same numbers as they stand in the result file
    raw_windows = [w for w in raw["windows"] if w["phase"] == "measurement"]
    raw_total = sum(w["samples"] for w in raw_windows)
    raw_slowest = max(w["seconds"] for w in raw_windows)
    assert raw["summary"]["measured_samples"] == raw_total == total
    assert raw["summary"]["throughput"] == pytest.approx(raw_total / raw_slowest, rel=1e-9)


@pytest.mark.slow
def test_two_horovod_ranks_train_on_an_imagefolder_read_with_tf_data_in_the_trainers(
    engine: Any, tf_image: Any, tmp_path: Path, jpeg_folder: Path
) -> None:
    """Two Horovod ranks in the tf image combine into one result, and each trainer reads its shard of real
    JPEGs with tf.data. (One run for both: a tf run costs about 40 s of two CPUs, most of it TensorFlow's
    import and tracing, not steps.) Where the CPU has native bf16, the run is bf16 (Keras' mixed_bfloat16
    policy); elsewhere it is fp32, so the test never waits on emulated bf16 (an AVX2-only Zen 1).

    Where a oneDNN cap hides this CPU's bf16 (CI's emulated AVX2 class), TensorFlow cannot run bf16: the
    run must refuse it before the first step with the fix and no traceback."""
    isa = read_isa(env=onednn_only(os.environ))
    refusal = bf16_refusal(isa)
    if refusal is not None:
        proc = trainbench(
            "run", "resnet50-tf-horovod", *TINY_RUN, "--set", "device=cpu", "--set", "precision=bf16",
            "--runtime", "docker", "--output-dir", str(tmp_path / "refused"), "--no-tracking", cwd=tmp_path,
            timeout=600,
        )  # fmt: skip
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0, said[-3000:]
        assert "precision=bf16 cannot train in TensorFlow" in said and "--set precision=fp32" in said, said[-3000:]
        assert "Traceback" not in said, said[-3000:]
    precision = choose_precision("auto", isa).chosen  # what precision=auto picks for TensorFlow's oneDNN
    result, raw = _run_tf(
        tmp_path,
        "--set",
        f"precision={precision}",
        "--set",
        "data=imagefolder",
        "--set",
        f"data_dir={jpeg_folder}",
        "--set",
        "num_parallel_calls=2",
    )
    _check_two_rank_result(result, raw, tf_image)
    info = result.workload_info
    policy = "mixed_bfloat16" if precision == "bf16" else "float32"
    assert info["mixed_precision_policy"] == policy and info["intra_op_threads"] == 1
    assert info["data"] == "imagefolder" and info["classes"] == 3 and info["rank_shard_samples"] == 6
    prep = info["preprocessing"]
    assert (prep["engine"], prep["placement"], prep["workers"]) == ("tf.data", "trainer", 2)
    assert f"{jpeg_folder}:{jpeg_folder}:ro" in " ".join(result.runtime.command), "data_dir is mounted read-only"


@pytest.mark.slow
def test_imagefolder_preprocessed_on_a_tf_data_service_of_another_tensorflow(
    engine: Any, tf_image: Any, tmp_path: Path, jpeg_folder: Path
) -> None:
    """The image's TensorFlow 2.15 client reads batches from the suite's tf.data service (the host's
    TensorFlow, 2.21 in the dev environment): the two versions' service protocol and the pipeline's ops agree."""
    pytest.importorskip("tensorflow", reason="the host's tf.data service needs trainbench's offload extra")
    from suite.datasets.service import LocalService

    with LocalService([None], tmp_path / "service") as service:
        result, raw = _run_tf(
            tmp_path,
            "--set",
            "data=imagefolder",
            "--set",
            f"data_dir={jpeg_folder}",
            "--set",
            f"data_service={service.address}",
        )
    _check_two_rank_result(result, raw, tf_image)
    info = result.workload_info
    assert info["data"] == "imagefolder" and info["classes"] == 3 and info["dataset_samples"] == 12
    prep = info["preprocessing"]
    assert info["rank_shard_samples"] == 6 and prep["engine"] == "tf.data service" and prep["placement"] == "remote"
    assert prep["dispatcher"] == service.address and prep["job"].endswith("-rank0")
