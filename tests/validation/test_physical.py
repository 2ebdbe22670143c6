"""Results that must be physically possible (issue 35): the four forgeries of a careful submitter, and the
classes they stand for, each refused with a finding that names it; honest real results accepted.

Every forgery starts from a REAL result (the conftest's tiny ResNet-50 launch of 5 repeats, built as the
runner builds it) and is made with the project's own code: the records edited, the summary, the
utilization summary and the cost recomputed, the file sealed again (``tests/validation/forgery.py``).

The tolerances of the checks (``suite/validation/sampler_checks.py``, ``timestamps.py``) come from real
runs on the 2-vCPU machines of this project (Xeon with AMX, 2026-11-27, with other jobs running):

==================================  =================  =================  ==================  ===============
figure                              quick (0.5 s)      tiny (0.1 s)       numa-ddp 2 ranks    mnist, 1 worker
==================================  =================  =================  ==================  ===============
reading spacing / interval          1.002 - 1.075      1.007 - 1.183      1.008 - 1.631       -
per-core |offered - spacing|, max   0.014 s            0.010 s            0.048 s             0.006 s
offered / (cores x span), run       0.9996             1.0004             0.9999              1.0003
run's cores (allowed: 2)            0.90               0.74               0.53                0.11
per-core busy / accounted CPU       0.9998             1.0000             1.0000              1.0000
last reading - end of timed work    -0.16 s            -0.09 s            -0.07 s             +5.48 s
created_at - end of timed work      4.0 s (to the s)   0.4 s (to the s)   12.5 s              -
==================================  =================  =================  ==================  ===============

The committed Zen 4 submission (older sampler, no CPU-seconds) spaced its readings 1.003 - 1.562 intervals
apart and stopped them 0.01 - 0.45 s before the end. mnist's +5.48 s is its DataLoader worker being joined
(5 s timeout) when the batch iterator is freed, before the sampler stops: allowed per worker.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from suite.results import Result
from suite.validation.sampler_checks import TEARDOWN_S
from tests.validation import forgery
from tests.validation.conftest import RealRuns, build, quiet
from tests.validation.synthetic import result as synthetic_result

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def honest(real_runs: RealRuns, tmp_path_factory: pytest.TempPathFactory) -> Result:
    """The longer real launch (5 repeats of 1 warm-up and 8 measured steps), built as the runner builds it."""
    assert real_runs.long_measurement is not None and real_runs.long_config is not None
    return build(real_runs.long_config, real_runs.long_measurement, real_runs.plan, tmp_path_factory.mktemp("honest"))


@pytest.fixture
def doc(honest: Result) -> dict[str, Any]:
    return honest.model_dump(mode="json")


def _messages(result: Result, code: str) -> list[str]:
    return [f.message for f in forgery.errors(result) if f.code == code]


LOADED = {"steady-state-trending"}
"""The one error an honest run of a loaded test machine may draw: its 8-step windows still trending is the
steady-state check judging the measurement, not a physical impossibility (the forgeries below never rely on
it, and the 3-step runs of ``real_runs`` are too short for it)."""


def test_honest_real_results_validate(honest: Result, real_runs: RealRuns) -> None:
    loaded = [f for f in forgery.errors(honest) if f.code not in LOADED]
    assert loaded == [], [f.message for f in loaded]
    for r in [*real_runs.open, *real_runs.closed]:
        found = forgery.errors(r, specs_dir=real_runs.specs_dir)
        assert found == [], [f.message for f in found]
    again = forgery.resealed(honest.model_dump(mode="json"))
    assert forgery.errors(again) == forgery.errors(honest)  # recomputing changes nothing


@pytest.mark.parametrize("factor", [0.5, 0.7, 0.8, 0.97])
def test_shortened_windows_are_refused_by_the_sampler_that_ran_on(doc: dict[str, Any], factor: float) -> None:
    """Forgery 1 (durations x 0.8, summary recomputed) and its class: any shortening of the windows' clock alone
    that leaves the sampler's readings running on longer than the rank's teardown explains (0.5 s and one
    interval without loader workers). A run of a few seconds shortened by a few per cent stays under that:
    the check cannot see it, and ``trainbench reproduce`` must."""
    forged = forgery.resealed(forgery.scale_windows(doc, factor))
    assert forged.summary is not None and forged.summary.throughput > doc["summary"]["throughput"] / factor * 0.999
    end = max(w["start_s"] + w["seconds"] for w in doc["windows"])
    outlasts = max(u["t_s"] for u in doc["utilization"]) - factor * end
    messages = _messages(forged, "clock-mismatch")
    if outlasts > TEARDOWN_S + doc["config"]["windows"]["sampler_interval_s"]:
        assert messages and "past the last timed work" in messages[0] and "the windows were shortened" in messages[0]
    else:
        assert messages == []
    if factor <= 0.8:
        assert messages, f"a run of {end:.1f} s shortened to {factor:.0%}: {outlasts:.2f} s of readings past its end"


@pytest.mark.parametrize("factor", [0.5, 0.8, 0.95])
def test_rescaled_sampler_clock_is_refused_by_the_kernels_counters(doc: dict[str, Any], factor: float) -> None:
    """Forgery 2 (the sampler's timestamps scaled too) and its class: any edit of the readings' clock. The
    sampler never reads early, and the kernel's CPU-seconds per reading tell the real interval."""
    forged = forgery.resealed(forgery.scale_sampler(forgery.scale_windows(doc, factor), factor))
    messages = _messages(forged, "clock-mismatch")
    assert any("never early" in m or "after the run's origin" in m for m in messages), messages
    if factor <= 0.8:
        cores = len(doc["utilization"][0]["cpu_percent"])
        assert any(f"cores' worth on a {cores}-core machine" in m or "ratio" in m for m in messages), messages


def test_scaled_cpu_seconds_are_not_whole_kernel_ticks(doc: dict[str, Any]) -> None:
    """A forger who scales the CPU-seconds with the clock must also round them to ticks; unrounded they show."""
    edited = forgery.scale_sampler(forgery.scale_windows(doc, 0.8), 0.8)
    for u in edited["utilization"]:
        for key in ("machine_cpu_s", "run_cpu_s", "others_cpu_s", "steal_s"):
            u[key] = u[key] * 0.8 + 0.003
    assert any("whole number of kernel clock ticks" in m for m in _messages(forgery.resealed(edited), "clock-mismatch"))


def test_more_cpu_time_than_the_cores_allowed_is_refused() -> None:
    """The run's tree used about 1.96 cores; a result that says it was allowed one CPU cannot hold that."""
    base = synthetic_result(steps=40).model_dump(mode="json")
    assert forgery.codes(base) == set()
    base["environment"]["binding"]["cpus_allowed"] = [0]
    [message] = _messages(forgery.resealed(base), "cpu-time-impossible")
    assert "allowed 1 core(s)" in message


def test_hidden_interference_is_refused(doc: dict[str, Any]) -> None:
    """Other processes' CPU time removed from the readings of a disturbed run, the cores left as busy as they
    were: the run then passes as undisturbed, but nobody accounts for the cores' busy time."""
    disturbed = copy.deepcopy(doc)
    disturbed["utilization"] = [forgery.disturb(u, 0.3) for u in doc["utilization"]]
    honest = forgery.resealed(disturbed)
    assert honest.utilization_summary is not None and honest.utilization_summary.disturbed
    assert "interference-hidden" not in forgery.codes(honest)
    for u in disturbed["utilization"]:
        u["others_cpu_s"] = 0.0
    forged = forgery.resealed(disturbed)
    assert forged.utilization_summary is not None and not forged.utilization_summary.disturbed
    assert any("was removed from the readings" in m for m in _messages(forged, "interference-hidden")), [
        (f.code, f.message) for f in forgery.errors(forged)
    ]
    made_quiet = copy.deepcopy(disturbed)
    made_quiet["utilization"] = [quiet(u) for u in honest.model_dump(mode="json")["utilization"]]
    assert "interference-hidden" not in forgery.codes(forgery.resealed(made_quiet))  # cores lowered with it


def test_a_tree_counted_ahead_of_the_machine_is_not_hidden_interference(doc: dict[str, Any]) -> None:
    """Per-process and per-CPU ticks are sampled apart: a reading may count the run's tree a few ticks past
    the machine's busy time, and the sampler then clamps others at 0 (``harness.procstat``). That honest
    reading accounts for more than the cores were busy, the opposite of hiding interference."""
    start, end = next(
        (w["start_s"], w["start_s"] + w["seconds"]) for w in doc["windows"] if w["phase"] == "measurement"
    )
    for u in [u for u in doc["utilization"] if start < u["t_s"] <= end][:3]:
        u["run_cpu_s"] = round(u["run_cpu_s"] + u["others_cpu_s"] + 0.05, 2)
        u["others_cpu_s"] = 0.0
    assert "interference-hidden" not in forgery.codes(forgery.resealed(doc))


@pytest.mark.parametrize(
    "keep",
    [frozenset({"avx2"}), frozenset({"avx2", "avx512f", "avx512_vnni"}), frozenset()],
    ids=["avx2-only (zen1)", "avx512 without bf16 (skylake)", "no avx"],
)
def test_native_bf16_on_an_isa_without_it_is_refused(doc: dict[str, Any], keep: frozenset[str]) -> None:
    """Forgery 3 (the ISA rewritten to AVX2 only, native bf16 still claimed) and its class: every CPU
    without bf16 matrix instructions, however consistently its record is rewritten."""
    if not doc["workload_info"]["precision"]["bf16_native"]:
        pytest.skip("this CPU runs no native bf16, so no run here claims it")
    forged = forgery.resealed(forgery.downgrade_isa(doc, keep))
    [message] = _messages(forged, "precision-impossible")
    assert "the hardware cannot run what the result claims" in message and "no native bf16" in message


def test_an_isa_record_that_contradicts_its_own_flags_is_refused(doc: dict[str, Any]) -> None:
    half = copy.deepcopy(doc)
    half["environment"]["isa"]["features"]["amx_bf16"] = False  # the CPU flags still list it
    assert "isa-inconsistent" in forgery.codes(forgery.resealed(half))
    cap = copy.deepcopy(doc)
    cap["environment"]["isa"]["onednn_max_cpu_isa"] = "AVX2"  # a cap whose effect the record does not show
    assert {"isa-inconsistent", "precision-impossible"} <= forgery.codes(forgery.resealed(cap))
    torch_cap = copy.deepcopy(doc)
    torch_cap["environment"]["isa"]["features"]["avx512f"] = False
    torch_cap["environment"]["isa"]["effective"]["avx512f"] = False
    torch_cap["environment"]["cpu"]["flags"].remove("avx512f")
    assert any("torch dispatched to AVX512" in f.message for f in forgery.errors(forgery.resealed(torch_cap)))


@pytest.mark.parametrize("device", ["cuda:0", "cuda", "gpu"])
def test_a_cpu_run_relabelled_as_a_gpu_run_is_refused(doc: dict[str, Any], device: str) -> None:
    """Forgery 4 and its class: a device the environment does not have, named any way a workload names one."""
    forged = forgery.resealed(forgery.relabel_gpu(doc, H100, device))
    messages = _messages(forged, "device-impossible")
    assert any("records no GPU" in m for m in messages) and any("a CPU workload" in m for m in messages)


def test_a_gpu_run_must_name_a_recorded_gpu(doc: dict[str, Any]) -> None:
    doc["environment"]["gpus"] = {"devices": [{"index": 0, "name": "NVIDIA A10G", "uuid": "GPU-1", "memory_bytes": 1}]}
    forged = forgery.resealed(forgery.relabel_gpu(doc, H100))
    assert any("not one of the GPUs it recorded (NVIDIA A10G)" in m for m in _messages(forged, "device-impossible"))


def _at(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="milliseconds")


def test_timestamps_out_of_order_are_refused(doc: dict[str, Any]) -> None:
    moved = {**doc, "started_at": "2031-01-01T00:00:00.000+00:00"}  # a new identity without moving the origin
    assert any("is not origin_unix_s" in m for m in _messages(forgery.resealed(moved), "timestamps"))
    later = {**doc, "origin_unix_s": doc["origin_unix_s"] + 7200.0, "started_at": _at(doc["origin_unix_s"] + 7200.0)}
    assert any("after created_at" in m for m in _messages(forgery.resealed(later), "timestamps"))
    future = copy.deepcopy(doc)
    future["provenance"]["created_at"] = "2999-01-01T00:00:00+00:00"
    assert any("in the future" in m for m in _messages(forgery.resealed(future), "timestamps"))
    day_before = doc["origin_unix_s"] - 86_400.0
    earlier = {**doc, "origin_unix_s": day_before, "started_at": _at(day_before)}
    assert "timestamps" not in forgery.codes(forgery.resealed(earlier))  # a run a day earlier, written now: possible
    assert "timestamps" in forgery.codes(forgery.resealed({**earlier, "started_at": None}))


def test_the_passes_after_the_windows_are_timed_work_and_only_those_asked_for(doc: dict[str, Any]) -> None:
    """A run with a loss-trajectory pass (every ladder rung, and a best config run again) keeps its sampler
    running through that pass: the readings end when the pass does, not when the windows do. The pass runs
    after the last window, and only where the config asks for it; one stamped inside the windows, or one the
    config did not ask for, is refused."""
    end = max(w["start_s"] + w["seconds"] for w in doc["windows"] if w["rank"] == 0)
    last = max(u["t_s"] for u in doc["utilization"])
    forged = forgery.scale_windows(doc, 0.5)  # windows ending far before the readings: the sampler check's case
    assert "clock-mismatch" in forgery.codes(forgery.resealed(forged))
    half = 0.5 * end
    forged["workload_info"]["loss_trajectory"] = {
        "losses": [2.3] * 3,
        "steps": 3,
        "start_s": half,
        "seconds": last - half,
    }
    assert "clock-mismatch" not in forgery.codes(forgery.resealed(forged))
    assert any("config asked for trajectory_steps = 0" in m for m in _messages(forgery.resealed(forged), "timestamps"))
    forged["config"]["params"]["trajectory_steps"] = 3  # a pass the config asks for, of the length it asks
    assert "timestamps" not in forgery.codes(forgery.resealed(forged))
    evaluated = copy.deepcopy(doc)
    evaluated["workload_info"]["evaluation"] = {"requested_samples": 16, "start_s": end + 0.01, "seconds": 0.01}
    assert any("config asked for eval_samples = 0" in m for m in _messages(forgery.resealed(evaluated), "timestamps"))
    evaluated["config"]["params"]["eval_samples"] = 16
    assert "timestamps" not in forgery.codes(forgery.resealed(evaluated))
    inside = copy.deepcopy(doc)
    inside["workload_info"]["loss_trajectory"] = {"losses": [2.3], "steps": 1, "start_s": end / 2, "seconds": 0.1}
    assert any("loss trajectory pass starts" in m for m in _messages(forgery.resealed(inside), "timestamps"))


def test_overlapping_steps_are_refused(doc: dict[str, Any]) -> None:
    """Step times edited apart from the timeline: two steps at once, the window and its total unchanged."""
    measured = [s for s in doc["steps"] if s["phase"] == "measurement" and s["repeat"] == 0]
    shift = measured[1]["compute_s"] / 2
    measured[0]["compute_s"] += shift
    measured[1]["compute_s"] -= shift
    assert any("after step 0 ended" in f.message for f in forgery.errors(forgery.resealed(doc)) if f.code == "records")


def test_fewer_cores_than_the_readings_saw_are_refused(doc: dict[str, Any]) -> None:
    """The sampler read every core of /proc/stat; a machine recorded with fewer cannot have shown them. (More
    recorded cores than read are refused outside containers only: lxcfs hides cores from /proc/stat.)"""
    doc["environment"]["cpu"]["logical_cores"] = len(doc["utilization"][0]["cpu_percent"]) - 1
    assert "environment-inconsistent" in forgery.codes(forgery.resealed(doc))
    doc["environment"]["cpu"]["logical_cores"] = 64
    doc["environment"]["container"]["in_container"] = False
    assert "environment-inconsistent" in forgery.codes(forgery.resealed(doc))


def test_the_committed_submission_still_validates() -> None:
    root = Path(__file__).resolve().parents[2] / "submissions" / "trainbench" / "results"
    for path in sorted(root.rglob("result_*.json")):
        assert forgery.errors(json.loads(path.read_text()), str(path)) == [], path
