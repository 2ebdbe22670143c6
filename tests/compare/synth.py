"""Sealed results built from chosen step times, for the statistical edge cases of compare and tracking.

The records are internally consistent (window seconds = the sum of its step times,
steps back to back), and the summary is derived from them by the harness itself, so
``suite.results.read_result`` accepts the written files like any real result.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import summarize
from suite.results import Result, seal, write_result
from suite.specs import resolve

ZEN4_FLAGS = ["avx", "avx2", "avx512f", "avx512_bf16", "avx512_vnni", "fma", "sse4_2"]
ZEN1_FLAGS = ["avx", "avx2", "fma", "sse4_2"]


def result(
    step_times: list[list[float]],
    *,
    batch: int = 2,
    overrides: tuple[str, ...] = (),
    system: str = "synth-box",
    flags: list[str] | None = None,
    workload_info: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    origin_unix_s: float | None = None,
) -> Result:
    """A complete resnet50-cpu result: one warm-up step and then ``step_times[r]`` per repeat ``r``.

    Args:
        step_times: seconds of each measured step, one list per repeat.
        batch: samples per step.
        overrides: ``--set`` overrides of the quick profile (batch_size is set from ``batch``).
        system: the system name.
        flags: the CPU flags recorded (default: a Zen 4's, with native bf16).
        workload_info: extra workload info (e.g. ``{"bf16_emulated": True}``).
        environment: keys added to the recorded environment.
        origin_unix_s: the wall-clock origin the harness recorded (None: not recorded).
    """
    config = resolve(
        "resnet50-cpu",
        overrides=[f"batch_size={batch}", f"repeats={len(step_times)}", "measure_seconds=0", *overrides],
    )
    steps: list[StepRecord] = []
    windows: list[WindowRecord] = []
    t = 0.0
    for r, times in enumerate(step_times):
        for phase, seq in ((Phase.WARMUP, [times[0]]), (Phase.MEASUREMENT, times)):
            start = t
            for i, dt in enumerate(seq):
                steps.append(StepRecord(r, phase, i, t, 0.001 * dt, 0.999 * dt, batch))
                t += dt
            windows.append(WindowRecord(r, phase, start, t - start, len(seq), batch * len(seq)))
    env = {
        "cpu": {"model": "Synthetic EPYC", "flags": flags or ZEN4_FLAGS, "logical_cores": 2, "physical_cores": 2},
        "torch": {"version": "2.14.1", "cpu_capability": "AVX512", "cuda_available": False, "cuda_version": None},
        "gpus": {"devices": []},
        **(environment or {}),
    }
    return seal(
        {
            "run_id": uuid.uuid4().hex,
            "status": "complete",
            "workload": "resnet50-cpu",
            "profile": config.profile,
            "division": "open",
            "system": system,
            "config": config,
            "runtime": {"kind": "local", "launcher": "inline", "command": ["python"], "env_set": {}},
            "world_size": 1,
            "environment": env,
            "workload_info": workload_info or {},
            "steps": steps,
            "windows": windows,
            "utilization": [],
            "utilization_summary": None,
            "origin_unix_s": origin_unix_s,
            "summary": summarize(steps, windows),
            "diagnosis": None,
            "cost": None,
            "provenance": {
                "suite_version": "0.1.0",
                "git_commit": None,
                "git_dirty": None,
                "created_at": "2026-01-01T00:00:00+00:00",
            },
        }
    )


def jittered(base: float, n: int, seed: int) -> list[float]:
    """``n`` step times around ``base`` seconds, ±3% (deterministic)."""
    import random

    rng = random.Random(seed)
    return [base * (1 + rng.uniform(-0.03, 0.03)) for _ in range(n)]


def write(r: Result, directory: Path, name: str = "result.json") -> Path:
    """Write ``r`` as ``directory/name``."""
    return write_result(r, directory / name)
