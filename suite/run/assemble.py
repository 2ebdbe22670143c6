"""From a rank's raw measurement to a sealed :class:`suite.results.Result`.

Every statistic is derived here from the raw records (throughput over the slowest
rank's window for a distributed run: ``harness.stats.summarize``), then the
diagnosis, the cost and the division label; the result is sealed with its digest.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from harness.sampler import summarize_utilization
from harness.stats import MeasurementError, summarize
from suite.config import RunConfig
from suite.cost import compute_cost
from suite.launchers import LaunchPlan
from suite.provenance import provenance
from suite.results import Result, seal
from suite.rules import division_for
from suite.run.diagnosis import diagnose
from suite.run.options import RunOptions
from workloads.measurement import RankMeasurement


def rank_environment(m: RankMeasurement) -> dict[str, Any]:
    """What one rank read back about itself: host, CPUs/memory nodes, threads, OpenMP and allocator."""
    system = m.system
    return {
        "rank": m.rank,
        "hostname": system.get("host", {}).get("hostname"),
        "binding": system.get("binding"),
        "torch_threads": (system.get("torch") or {}).get("num_threads"),
        "omp_num_threads": system.get("env", {}).get("OMP_NUM_THREADS"),
        "loaded_libraries": system.get("loaded_libraries"),
        "origin_unix_s": m.origin_unix_s,
        "error": m.error,
    }


def bf16_emulated(ranks: list[RankMeasurement]) -> bool | None:
    """True when any rank ran bf16 without native support, False when all ran it natively,
    None when no rank recorded a bf16 decision (fp32, a GPU, or an older rank)."""
    flags = [
        bool(info.get("bf16_emulated"))
        for m in ranks
        if isinstance(info := m.workload_info.get("precision"), dict) and info.get("chosen") == "bf16"
    ]
    return any(flags) if flags else None


def _iso(unix_s: float | None) -> str | None:
    return None if unix_s is None else datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="milliseconds")


def build_result(
    config: RunConfig,
    opts: RunOptions,
    measurement: RankMeasurement,
    plan: LaunchPlan,
    run_id: str,
) -> Result:
    """Turn a rank's raw measurement into a sealed :class:`Result`.

    An incomplete measurement gives a result with status ``incomplete`` and no
    summary, diagnosis or cost: it can never pass for a score. A distributed
    measurement (``ranks``) keeps every rank's records; its environment is rank 0's
    plus, under ``ranks``, each rank's host, binding and threads as read back there.
    """
    ranks = measurement.ranks or [measurement]
    steps = [s for m in ranks for s in m.steps]
    windows = [w for m in ranks for w in m.windows]
    util = measurement.utilization
    environment = dict(measurement.system)
    if measurement.ranks:
        environment["ranks"] = [rank_environment(m) for m in ranks]
    if plan.placement:  # what each local rank was meant to get, beside the binding read back in "ranks"
        environment["placement_plan"] = [
            {"local_rank": i, **slot.model_dump()} for i, slot in enumerate(plan.placement)
        ]
    complete = measurement.complete and all(m.complete for m in ranks)
    error = measurement.error or next((m.error for m in ranks if m.error), None)
    summary = util_summary = diagnosis = cost = None
    if complete:
        try:
            summary = summarize(steps, windows)
        except MeasurementError as exc:
            complete, error = False, f"no valid measurement: {exc}"
    if complete and summary is not None:
        util_summary = summarize_utilization(util, windows)
        diagnosis = diagnose(summary.input_bound_fraction, util_summary.cpu_mean_percent, util_summary, summary)
        c = compute_cost(
            summary.throughput,
            price_per_hour=opts.price_per_hour,
            instance_type=opts.instance_type,
            pricing=opts.pricing,
            region=opts.region,
        )
        cost = c.to_dict() if c is not None else None
    emulated = bf16_emulated(ranks)
    return seal(
        {
            "run_id": run_id,
            "status": "complete" if complete else "incomplete",
            "error": error,
            "workload": config.workload,
            "profile": config.profile,
            # the closed-division rules (suite/data/division-rules.yaml), judged on the hardware the rank read back
            "division": division_for(config, environment=environment, bf16_emulated=emulated),
            "system": opts.system or environment.get("host", {}).get("hostname") or "unknown",
            "config": config,
            "runtime": {
                "kind": plan.runtime,
                "launcher": plan.launcher,
                "command": plan.command,
                "env_set": plan.env_set,
                "image": plan.image,
                "image_id": plan.image_id,
            },
            "world_size": measurement.world_size,
            "environment": environment,
            "workload_info": measurement.workload_info,
            "steps": steps,
            "windows": windows,
            "utilization": util,
            "utilization_summary": util_summary,
            "summary": summary,
            "diagnosis": diagnosis,
            "cost": cost,
            "run_uid": measurement.run_uid,
            "origin_unix_s": measurement.origin_unix_s,
            "started_at": _iso(measurement.origin_unix_s),
            "plan": measurement.plan,
            "bf16_emulated": emulated,
            "provenance": provenance(),
        }
    )
