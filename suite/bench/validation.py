"""Benchmark of the validator on large results: seconds and peak memory to check one result file.

``trainbench bench-validate`` writes a sealed result of N measured steps (default 10,000;
step times drawn from a log-normal distribution, so the statistics do real work), then
checks it in a fresh Python process, so the memory figure is the checker's own: the file
is read with the bounded reader, checked against its JSON Schema, parsed, and every
per-result check runs (records, the summary recomputed from the records, steady state,
interference). The target of issue 14: 10,000 steps in at most 2 s and 300 MB RSS.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

TARGET_SECONDS = 2.0
"""Most seconds checking a 10,000-step result may take (issue 14)."""
TARGET_RSS_MB = 300.0
"""Most peak resident memory, MB, of the process that checks it (issue 14)."""


def synthetic_measurement(steps: int, seed: int = 14, warmup: int = 1) -> dict[str, Any]:
    """A complete one-rank measurement of one repeat: ``warmup`` warm-up steps then ``steps`` measured steps.

    Step times are log-normal around 0.1 s (sigma 0.05), data waits 2% of that; readings
    every 0.5 s of the measurement window, from a quiet two-core machine.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    times = 0.1 * rng.lognormal(0.0, 0.05, steps + warmup)
    records: list[dict[str, Any]] = []
    windows: list[dict[str, Any]] = []
    t = 0.0
    for phase, chunk in (("warmup", times[:warmup]), ("measurement", times[warmup:])):
        start = t
        for i, step in enumerate(chunk):
            wait = float(step) * 0.02
            records.append(
                {
                    "repeat": 0,
                    "phase": phase,
                    "index": i,
                    "start_s": t,
                    "data_wait_s": wait,
                    "compute_s": float(step) - wait,
                    "samples": 16,
                }
            )
            t += float(step)
        windows.append(
            {
                "repeat": 0,
                "phase": phase,
                "start_s": start,
                "seconds": t - start,
                "steps": len(chunk),
                "samples": 16 * len(chunk),
            }
        )
    first = windows[1]["start_s"]
    readings = [
        {
            "t_s": first + 0.5 * (k + 1),
            "cpu_percent": [97.0, 96.0],
            "rss_bytes": 900_000_000,
            "machine_cpu_s": 1.0,
            "run_cpu_s": 0.98,
            "others_cpu_s": 0.0,
            "steal_s": 0.0,
        }
        for k in range(int(windows[1]["seconds"] / 0.5))
    ]
    return {
        "complete": True,
        "steps": records,
        "windows": windows,
        "utilization": readings,
        "run_uid": uuid.uuid4().hex,
        "origin_unix_s": time.time(),
        "workload_info": {},
    }


def write_large_result(steps: int, directory: Path) -> Path:
    """A sealed result of ``steps`` measured steps written to ``directory/result.json``."""
    from suite.launchers import LaunchPlan
    from suite.results import write_result
    from suite.run.assemble import build_result
    from suite.run.options import RunOptions
    from suite.specs import resolve
    from workloads.measurement import RankMeasurement

    config = resolve(
        "resnet50-cpu",
        "quick",
        ["warmup_steps=1", "warmup_seconds=0", f"measure_steps={steps}", "measure_seconds=0", "repeats=1"],
    )
    measurement = RankMeasurement.model_validate(synthetic_measurement(steps))
    opts = RunOptions(output_dir=directory, tracking_uri=None, system="bench-box", price_per_hour=1.0)
    result = build_result(config, opts, measurement, LaunchPlan(command=["python"]), uuid.uuid4().hex)
    return write_result(result, directory / "result.json")


def check_one(path: Path) -> dict[str, Any]:
    """Check ``path`` as the validator does; returns seconds, peak RSS and the error codes found.

    Run it in a fresh process (``python -m suite.bench.validation PATH``): the RSS figure is
    the process's peak (``getrusage``), imports included.
    """
    from suite.files import read_json
    from suite.rules import load_rules
    from suite.validation.findings import Findings, Severity
    from suite.validation.result_checks import CheckContext, check_result, parse_result

    ctx = CheckContext(load_rules())
    before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    findings = Findings()
    result = parse_result(read_json(path), str(path), findings)
    if result is not None:
        check_result(result, str(path), findings, ctx)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_after_imports_mb": before_mb,
        "errors": sorted(findings.codes(Severity.ERROR)),
        "steps": result.summary.measured_steps if result is not None and result.summary is not None else None,
    }


def main(steps: int, keep: Path | None = None) -> dict[str, Any]:
    """Write a ``steps``-step result, check it in a fresh process, print and return the figures."""
    from suite.console import console

    with tempfile.TemporaryDirectory() as tmp:
        directory = keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        path = write_large_result(steps, directory)
        proc = subprocess.run(
            [sys.executable, "-m", "suite.bench.validation", str(path)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"the checking process failed:\n{proc.stderr[-2000:]}")
        figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        figures["file_bytes"] = path.stat().st_size
    ok = figures["seconds"] <= TARGET_SECONDS and figures["rss_peak_mb"] <= TARGET_RSS_MB
    console.print(
        f"validate one result of {figures['steps']:,} measured steps ({figures['file_bytes'] / 1e6:.1f} MB): "
        f"{figures['seconds']:.2f} s, peak RSS {figures['rss_peak_mb']:.0f} MB "
        f"({figures['rss_after_imports_mb']:.0f} MB after imports); errors found: {figures['errors'] or 'none'}; "
        f"target <= {TARGET_SECONDS:g} s and <= {TARGET_RSS_MB:g} MB: {'met' if ok else 'MISSED'}",
        highlight=False,
    )
    return figures


if __name__ == "__main__":
    print(json.dumps(check_one(Path(sys.argv[1]))))
