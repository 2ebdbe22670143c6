"""The MLflow run page of a real tiny run, read back from a real SQLite store: name, times, description,
metric order, intervals, per-step timestamps, system metrics, params and tags."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from harness.stats import Interval
from suite import labels
from suite.markdown import escape
from suite.results import Result, read_result, seal
from suite.tracking import log_result
from suite.tracking.page import number
from suite.tracking.series import last_offset_s
from tests.compare import synth
from tests.conftest import TINY_RUN, trainbench


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Result, Path]]:
    """One real tiny run: fp32, batch 2, 64x64 images, 8 measured steps (enough for a CI and a steady-state check)."""
    tmp = tmp_path_factory.mktemp("run")
    proc = trainbench(
        "run", "resnet50-cpu", *TINY_RUN, "--set", "precision=fp32", "--set", "measure_steps=8",
        "--output-dir", str(tmp / "o"), "--no-tracking", "--system", "test-box", cwd=tmp,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = list((tmp / "o").rglob("result.json"))
    yield read_result(path), path


def _logged(result: Result, path: Path, tmp_path: Path) -> tuple[MlflowClient, Run]:
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    rid = log_result(result, path, [], uri)
    client = MlflowClient(tracking_uri=uri)
    return client, client.get_run(rid)


def test_the_run_page_of_a_real_run_answers_at_a_glance(real: tuple[Result, Path], tmp_path: Path) -> None:
    result, path = real
    s = result.summary
    assert s is not None
    client, run = _logged(result, path, tmp_path)
    rid = run.info.run_id
    assert run.info.run_name == "resnet50-cpu fp32 bs2 [image_size=64] @ test-box"

    # the Duration is the measurement's: the run spans the records, and ends when the result was written
    created_ms = datetime.fromisoformat(result.provenance.created_at).timestamp() * 1000
    assert run.info.end_time is not None
    assert run.info.end_time - run.info.start_time == pytest.approx(last_offset_s(result) * 1000, abs=2)
    assert run.info.end_time - run.info.start_time >= s.measured_seconds * 1000
    assert run.info.end_time <= created_ms + 1000  # ended before the result was written
    assert run.data.tags["trainbench.clock"] == "measured"  # the harness recorded its wall-clock origin
    assert result.origin_unix_s is not None and abs(run.info.start_time - result.origin_unix_s * 1000) <= 1

    # the description answers first: throughput, its 95% CI, the verdicts, the hardware
    note = run.data.tags["mlflow.note.content"]
    first = note.splitlines()[0]
    assert first.startswith(f"**{number(s.throughput)} samples/s** · 95% CI")
    assert result.diagnosis is not None and f"{result.diagnosis.verdict} \\(" in note.splitlines()[1]
    assert "steady state: " in note.splitlines()[1]
    # the CPU model is untrusted text, escaped for Markdown ("Intel(R) Xeon(R)" keeps its parentheses as "\(R\)")
    assert note.splitlines()[2].startswith(escape(result.environment["cpu"]["model"]))

    # the throughput is the first metric, its CI is defined, nothing is NaN
    metrics = run.data.metrics
    assert next(iter(metrics)) == "throughput_samples_per_s"
    assert metrics["throughput_samples_per_s"] == pytest.approx(s.throughput)
    assert all(math.isfinite(v) for v in metrics.values())
    if s.throughput_ci95 is None:  # a loaded machine can leave 8 steps unbounded: said in words, never NaN
        assert "throughput_ci95_high" not in metrics and "unbounded" in run.data.tags["trainbench.throughput_ci95"]
    elif s.throughput_ci95.high is not None:
        assert metrics["throughput_ci95_low"] <= metrics["throughput_samples_per_s"] <= metrics["throughput_ci95_high"]
        assert metrics["throughput_ci95_rel"] == pytest.approx(
            (s.throughput_ci95.high - s.throughput_ci95.low) / 2 / s.throughput, rel=1e-6
        )
    assert metrics["steady_state_windows_checked"] == 1
    assert run.data.tags["trainbench.steady_state"] == s.steady_state.status

    # per-step metrics carry their real, distinct times: the origin plus each step's start
    steps = sorted(client.get_metric_history(rid, "step_time_s"), key=lambda m: m.step)
    measured = [r for r in result.steps if r.phase.value == "measurement"]
    assert [m.step for m in steps] == list(range(len(measured)))
    origin = run.info.start_time / 1000
    expected = [(origin + r.start_s) * 1000 for r in measured]
    assert all(abs(m.timestamp - t) <= 1 for m, t in zip(steps, expected, strict=True))
    assert len({m.timestamp for m in steps}) == len(steps)

    # the sampler's readings are MLflow system metrics, inside the run's time span
    cpu = client.get_metric_history(rid, "system/cpu_utilization_percentage")
    rss = client.get_metric_history(rid, "system/process_tree_rss_megabytes")
    assert len(cpu) == len(rss) == len(result.utilization) > 0
    assert all(run.info.start_time <= m.timestamp <= run.info.end_time for m in cpu)
    assert max(m.value for m in rss) == pytest.approx(max(u.rss_bytes for u in result.utilization) / 1e6, rel=1e-6)

    # params as the CLI spells them
    params = run.data.params
    assert params["params.channels_last"] == "true" and "launch.compare_single" not in params  # torchrun only
    assert params["launch.startup_timeout_s"] == "1800" and params["windows.warmup_seconds"] == "0"
    assert "launch.cpus" not in params and "params.data_dir" not in params
    assert not {v for v in params.values() if v in ("None", "True", "False")}
    assert not [v for v in params.values() if re.fullmatch(r"-?\d+\.\d{7,}", v)]

    # hardware and software tags
    tags, env = run.data.tags, result.environment
    assert tags["trainbench.cpu_model"] == str(env["cpu"]["model"])
    assert tags["trainbench.cores"].startswith(f"{env['cpu']['logical_cores']} logical")
    assert tags.get("trainbench.isa") == labels.isa_summary(env)
    assert tags.get("trainbench.isa_features", "") == " ".join(labels.isa_features(env))
    assert tags["trainbench.torch"] == env["torch"]["version"] and tags["trainbench.runtime"] == "local"
    assert tags["trainbench.gpu"] == labels.gpu_text(env)
    assert "trainbench.slurm_job_id" not in tags


def _with_interval(result: Result, interval: Interval | None) -> Result:
    assert result.summary is not None
    doc = result.model_dump()
    doc["summary"] = {**result.summary.to_dict(), "throughput_ci95": interval}
    doc["run_id"] = "f" * 32
    return seal(doc)


def test_an_unbounded_or_missing_interval_is_said_in_words_never_logged_as_nan(
    real: tuple[Result, Path], tmp_path: Path
) -> None:
    result, path = real
    assert result.summary is not None
    low = result.summary.throughput * 0.5
    unbounded = _with_interval(result, Interval(low, None, 0.95, "t-interval over 2 repeats"))
    _, run = _logged(unbounded, path, tmp_path / "u")
    assert run.data.metrics["throughput_ci95_low"] == pytest.approx(result.summary.throughput * 0.5)
    assert "throughput_ci95_high" not in run.data.metrics and "throughput_ci95_rel" not in run.data.metrics
    assert run.data.tags["trainbench.throughput_ci95"].endswith("unbounded): too few repeats")
    assert "to unbounded" in run.data.tags["mlflow.note.content"].splitlines()[0]
    missing = _with_interval(result, None)
    missing = seal({**missing.model_dump(), "run_id": "e" * 32})
    _, run = _logged(missing, path, tmp_path / "m")
    assert not {"throughput_ci95_low", "throughput_ci95_high", "throughput_ci95_rel"} & set(run.data.metrics)
    assert run.data.tags["trainbench.throughput_ci95"].startswith("none: too few repeats and steps")
    assert all(math.isfinite(v) for v in run.data.metrics.values())


def test_fields_other_parts_record_are_used_when_present(tmp_path: Path) -> None:
    """origin_unix_s gives the exact start; environment["isa"], a Slurm job and bf16_emulated become tags."""
    result = synth.result(
        [synth.jittered(0.5, 4, 1)],
        overrides=("precision=bf16",),
        origin_unix_s=1_800_000_000.25,
        environment={
            "isa": {"features": ["avx2", "amx_bf16", "avx512_bf16"], "torch_capability": "AVX512"},
            "slurm": {"job_id": "4242", "nodelist": "n[1-2]", "partition": "cpu"},
        },
        workload_info={"bf16_emulated": False, "precision": {"requested": "auto", "effective": "bf16"}},
    )
    path = synth.write(result, tmp_path / "r")
    _, run = _logged(result, path, tmp_path)
    assert run.info.start_time == 1_800_000_000_250
    assert run.data.tags["trainbench.clock"] == "measured"
    assert run.data.tags["trainbench.isa_features"] == "avx2 avx512_bf16 amx_bf16"
    assert run.data.tags["trainbench.isa"] == "AVX2 AMX-BF16 BF16"
    assert run.data.tags["trainbench.torch_cpu_capability"] == "AVX512"
    assert run.data.tags["trainbench.slurm_job_id"] == "4242" and run.data.tags["trainbench.slurm_nodelist"] == "n[1-2]"
    assert run.data.tags["trainbench.bf16_emulated"] == "false"
    assert run.info.run_name == "resnet50-cpu bf16 bs2 @ synth-box"


def test_hostile_system_names_stay_text_in_the_description(tmp_path: Path) -> None:
    result = synth.result(
        [synth.jittered(0.5, 4, 2)],
        system="evil](javascript:alert(1))\n<script>",
        environment={"cpu": {"model": "[x](http://evil) `code` | <b>", "logical_cores": 2}},
    )
    path = synth.write(result, tmp_path / "r")
    _, run = _logged(result, path, tmp_path)
    assert run.info.run_name.endswith("@ evil](javascript:alert(1)) <script>")  # a name is text, one line
    note = run.data.tags["mlflow.note.content"]
    assert r"evil\]\(javascript:alert\(1\)\) &lt;script&gt;" in note
    assert "<script>" not in note and "](javascript" not in note and "](http" not in note and "`code`" not in note


def test_an_incomplete_run_says_so_and_keeps_its_steps(real: tuple[Result, Path], tmp_path: Path) -> None:
    result, path = real
    broken = seal(
        {
            **result.model_dump(),
            "run_id": "d" * 32,
            "status": "incomplete",
            "error": "the rank was killed by SIGKILL",
            "windows": [],
            "summary": None,
            "utilization_summary": None,
            "diagnosis": None,
            "cost": None,
        }
    )
    client, run = _logged(broken, path, tmp_path)
    assert run.info.status == "FAILED"
    assert run.data.tags["mlflow.note.content"].startswith("**incomplete run**: the rank was killed by SIGKILL")
    assert "throughput_samples_per_s" not in run.data.metrics
    measured = [r for r in broken.steps if r.phase.value == "measurement"]
    assert len(client.get_metric_history(run.info.run_id, "step_time_s")) == len(measured)
    assert run.info.end_time is not None and run.info.end_time > run.info.start_time
