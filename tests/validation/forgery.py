"""A careful forger's tools: edit a real result's fields, recompute every derived figure with the project's own
code (:func:`harness.stats.summarize`, :func:`harness.sampler.summarize_utilization`, the cost) and seal it
again (:func:`suite.results.seal`), so that the file is consistent with itself and only physics is left to
give it away. Used by ``test_physical.py`` and ``tests/faults/test_fuzz_physical.py``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from harness.records import StepRecord, WindowRecord
from harness.sampler import UtilizationSample, summarize_utilization
from harness.stats import summarize
from suite.cost import samples_per_dollar_or_none
from suite.results import Result, seal
from suite.rules import load_rules
from suite.specs import SPECS_DIR
from suite.validation.findings import Finding, Findings, Severity
from suite.validation.result_checks import CheckContext, check_result, parse_result


def resealed(doc: dict[str, Any]) -> Result:
    """``doc`` (a result as JSON, edited) with its summary, utilization summary and cost recomputed, sealed."""
    out = copy.deepcopy(doc)
    steps = [StepRecord.from_dict(s) for s in out["steps"]]
    windows = [WindowRecord.from_dict(w) for w in out["windows"]]
    summary = summarize(steps, windows)
    out["summary"] = summary.to_dict()
    readings = [UtilizationSample(**u) for u in out["utilization"]]
    out["utilization_summary"] = summarize_utilization(readings, windows).to_dict()
    if out.get("cost"):
        spd = samples_per_dollar_or_none(summary.throughput, out["cost"]["usd_per_hour"])
        out["cost"] = {**out["cost"], "samples_per_dollar": spd}
    out.pop("digest", None)
    return seal(out)


def errors(result: Result | dict[str, Any], where: str = "r.json", specs_dir: Path = SPECS_DIR) -> list[Finding]:
    """The validator's error findings on one result (as ``trainbench validate`` checks each file)."""
    findings = Findings()
    doc = result.model_dump(mode="json") if isinstance(result, Result) else result
    parsed = parse_result(doc, where, findings)
    if parsed is not None:
        check_result(parsed, where, findings, CheckContext(load_rules(), specs_dir))
    return [f for f in findings if f.severity is Severity.ERROR]


def codes(result: Result | dict[str, Any]) -> set[str]:
    """The error codes of :func:`errors`."""
    return {f.code for f in errors(result)}


def scale_windows(doc: dict[str, Any], factor: float) -> dict[str, Any]:
    """Every step and window shortened (or lengthened) by ``factor``: the claim becomes 1/factor times faster."""
    out = copy.deepcopy(doc)
    for s in out["steps"]:
        for key in ("start_s", "data_wait_s", "compute_s"):
            s[key] *= factor
    for w in out["windows"]:
        w["start_s"] *= factor
        w["seconds"] *= factor
    ev = out["workload_info"].get("evaluation")
    if isinstance(ev, dict):
        ev["start_s"] *= factor
    return out


def scale_sampler(doc: dict[str, Any], factor: float) -> dict[str, Any]:
    """The sampler's timestamps scaled by ``factor`` (with :func:`scale_windows`: one consistent clock edit)."""
    out = copy.deepcopy(doc)
    for u in out["utilization"]:
        u["t_s"] *= factor
    return out


def downgrade_isa(doc: dict[str, Any], keep: frozenset[str]) -> dict[str, Any]:
    """The recorded CPU made one with only the matrix features ``keep`` (ISA record and CPU flags alike),
    its decision and the rest left as they were."""
    out = copy.deepcopy(doc)
    isa = out["environment"]["isa"]
    for table in ("features", "effective"):
        isa[table] = {k: k in keep for k in isa[table]}
    native = bool(keep & {"avx512_bf16", "amx_bf16"})
    isa["bf16_native"] = isa["bf16_native_cpu"] = native
    tracked = set(isa["features"])
    flags = out["environment"]["cpu"]["flags"]
    out["environment"]["cpu"]["flags"] = [f for f in flags if f not in tracked or f in keep]
    if isa.get("torch_cpu_capability") == "AVX512" and "avx512f" not in keep:
        isa["torch_cpu_capability"] = "AVX2"
        out["environment"]["torch"]["cpu_capability"] = "AVX2"
    return out


def relabel_gpu(doc: dict[str, Any], name: str, device: str = "cuda:0") -> dict[str, Any]:
    """The run said to have trained on GPU ``name`` (``workload_info.device`` and ``device_name``)."""
    out = copy.deepcopy(doc)
    out["workload_info"]["device"] = device
    out["workload_info"]["device_name"] = name
    return out


def disturb(reading: dict[str, Any], share: float) -> dict[str, Any]:
    """``reading`` as if other processes had used at least ``share`` of the machine's CPU time: taken from the
    idle time first, then from the run (which then got less CPU), in whole ticks, with the cores as busy as that
    makes them (spread evenly): an honest disturbed reading."""
    machine = reading["machine_cpu_s"]
    want = round(max(0.0, share * machine - reading["others_cpu_s"]), 2)
    idle = max(0.0, machine - reading["run_cpu_s"] - reading["others_cpu_s"] - reading["steal_s"])
    from_idle = min(idle, want)
    from_run = min(reading["run_cpu_s"], round(want - from_idle, 2))
    run = round(reading["run_cpu_s"] - from_run, 2)
    others = round(reading["others_cpu_s"] + from_idle + from_run, 2)
    busy = run + others + reading["steal_s"]
    n = len(reading["cpu_percent"])
    cores = [round(100 * busy / machine, 1)] * n if machine > 0 else reading["cpu_percent"]
    return {**reading, "run_cpu_s": run, "others_cpu_s": others, "cpu_percent": cores}
