"""What a run page plots and lists: metrics with their real steps and timestamps.

The run page's metric table lists a run's metrics in the order they were first
logged, with one exception: MLflow 3.17's UI (``RunViewMetricsTable``) puts every
``system/…`` metric in a "System metrics" group above a "Model metrics" group. So the
throughput and its 95% CI are logged first, and the first model metric shown is the
headline. The sampler's CPU and memory readings go under ``system/``, where the UI's
"System metrics" tab charts them against time.

Timestamps are wall-clock: the measurement's own origin (``origin_unix_s``, recorded
by the rank) plus each record's offset. Results written before the origin was
recorded get an estimate: ``provenance.created_at`` (written right after the rank
finished, to the second) minus the last record's offset; the run's
``trainbench.clock`` tag says which.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from mlflow.entities import Metric

from harness.records import Phase
from harness.sampler import UtilizationSample
from harness.stats import combine_ranks
from suite.results import Result
from suite.tracking.page import node_id, relative_half_width

SYSTEM_PREFIX = "system/"
"""MLflow's system-metrics namespace (``mlflow.system_metrics``; the UI matches ``^system/``)."""
CPU_KEY = SYSTEM_PREFIX + "cpu_utilization_percentage"
"""Mean utilization over all logical cores, 0-100, as MLflow's own CPU monitor names it."""
RSS_KEY = SYSTEM_PREFIX + "process_tree_rss_megabytes"
"""Resident memory of the run's process tree (1 MB = 1e6 bytes, as MLflow's monitors count).
Not MLflow's ``system_memory_usage_megabytes``, which is the whole machine's used memory."""
DIGITS = 7
"""Significant digits kept in logged metrics (the result file keeps every digit)."""


def _origin_recorded(result: Result) -> float | None:
    value = result.origin_unix_s
    return float(value) if value is not None and math.isfinite(value) and value > 0 else None


def last_offset_s(result: Result) -> float:
    """Seconds from the run's origin to its last record (window edge, step end or sampler reading)."""
    ends = [w.start_s + w.seconds for w in result.windows]
    ends += [s.start_s + s.step_s for s in result.steps]
    ends += [u.t_s for u in result.utilization]
    return max(ends, default=0.0)


def clock(result: Result) -> tuple[float, str]:
    """(wall-clock Unix seconds of the run's origin, ``measured`` or ``estimated``).

    ``estimated``: ``provenance.created_at`` minus the last record's offset (see the module docstring).
    """
    origin = _origin_recorded(result)
    if origin is not None:
        return origin, "measured"
    try:
        created = datetime.fromisoformat(result.provenance.created_at).timestamp()
    except ValueError:
        created = 0.0
    return created - last_offset_s(result), "estimated"


def run_times_ms(result: Result) -> tuple[int, int]:
    """(start, end) of the measurement in Unix milliseconds: MLflow's run start and end times."""
    origin, _ = clock(result)
    first = min([w.start_s for w in result.windows] + [s.start_s for s in result.steps], default=0.0)
    return int((origin + min(first, 0.0)) * 1000), int((origin + last_offset_s(result)) * 1000)


def _round(x: float) -> float:
    return x if float(x).is_integer() else float(f"{x:.{DIGITS}g}")


def _defined(items: Iterable[tuple[str, float | int | None]], ts: int) -> list[Metric]:
    """Metrics for the values that are defined: never None, NaN or infinity."""
    out = []
    for key, value in items:
        if value is None or isinstance(value, bool) or not math.isfinite(float(value)):
            continue
        out.append(Metric(key, _round(float(value)), ts, 0))
    return out


def headline(result: Result) -> list[Metric]:
    """Throughput and its 95% CI (``throughput_ci95_low``/``_high``/``_rel``), the first metrics of the page.

    Only what is defined is logged: an interval unbounded above has no ``_high`` and
    no ``_rel`` (the ``trainbench.throughput_ci95`` tag says why), and a run without
    an interval has neither bound.
    """
    s = result.summary
    if s is None:
        return []
    _, end = run_times_ms(result)
    ci = s.throughput_ci95
    return _defined(
        [
            ("throughput_samples_per_s", s.throughput),
            ("throughput_ci95_low", ci.low if ci else None),
            ("throughput_ci95_high", ci.high if ci else None),
            ("throughput_ci95_rel", relative_half_width(result)),
        ],
        end,
    )


def summary_metrics(result: Result) -> list[Metric]:
    """Everything else the summary, cost, scaling and input pipeline give, stamped at the measurement's end."""
    s = result.summary
    if s is None:
        return []
    _, end = run_times_ms(result)
    values: list[tuple[str, float | int | None]] = []
    if result.cost is not None:
        values += [("samples_per_dollar", result.cost.samples_per_dollar), ("usd_per_hour", result.cost.usd_per_hour)]
    st = s.steady_state
    values += [
        ("input_bound_fraction", s.input_bound_fraction),
        ("steady_state_worst_drift", st.worst_drift),
        ("steady_state_p_value", st.worst_p_value),
        ("steady_state_windows_checked", st.windows_checked),
        ("step_time_median_s", s.step_time_median_s),
        ("step_time_p90_s", s.step_time_p90_s),
        ("step_time_iqr_s", s.step_time_iqr_s),
        ("step_time_cv", s.step_time_cv),
        ("repeat_spread", s.repeat_spread),
        ("repeat_cv", s.repeat_cv),
        ("warmup_seconds", s.warmup_seconds),
        ("first_step_s", s.first_step_s),
        ("measured_samples", s.measured_samples),
        ("measured_seconds", s.measured_seconds),
        ("measured_steps", s.measured_steps),
    ]
    if s.step_time_source == "device":  # the step times above are the GPU's; the host's are kept apart
        values += [
            ("host_step_time_median_s", s.host_step_time_median_s),
            ("host_step_time_p90_s", s.host_step_time_p90_s),
            ("host_step_time_cv", s.host_step_time_cv),
            ("device_busy_fraction", s.device_busy_fraction),
        ]
    if result.utilization_summary is not None:
        values += [
            ("cpu_mean_percent", result.utilization_summary.cpu_mean_percent),
            ("rss_peak_bytes", result.utilization_summary.rss_peak_bytes),
        ]
        gpu = result.utilization_summary.gpu
        if gpu is not None:  # NVML over the measurement windows: beside samples/s and samples per dollar
            values += [
                ("samples_per_joule", gpu.samples_per_joule),
                ("energy_j", gpu.energy_j),
                ("gpu_util_mean_percent", gpu.util_mean_percent),
                ("gpu_power_mean_w", gpu.power_mean_w),
            ]
    if result.scaling is not None:  # issue 6: data-parallel vs one process on the same CPUs
        sc = result.scaling
        values += [
            ("scaling_efficiency", sc.efficiency),
            ("scaling_efficiency_ci95_low", sc.efficiency_ci95_low),
            ("scaling_efficiency_ci95_high", sc.efficiency_ci95_high),
            ("single_process_throughput_samples_per_s", sc.single_throughput),
        ]
    prep = result.workload_info.get("preprocessing") or {}  # issue 5: the input pipeline's cost and placement
    if isinstance(prep, dict):
        for key in ("cpu_ms_per_sample", "workers", "cores"):
            if isinstance(prep.get(key), int | float):
                values.append((f"preprocess_{key}", prep[key]))
    return _defined(values, end)


def history(result: Result) -> list[Metric]:
    """Per-repeat throughput (step = repeat) and per-step metrics (step = measured step index), at their real times.

    Steps are the lowest rank's (every rank's are in the result file); a step is
    stamped at its start, a repeat at its window's end.
    """
    origin, _ = clock(result)
    out: list[Metric] = []
    if result.summary is not None:
        windows = [w for w in combine_ranks(result.windows) if w.phase is Phase.MEASUREMENT]
        for w, t in zip(windows, result.summary.repeat_throughputs, strict=False):
            end = int((origin + w.start_s + w.seconds) * 1000)
            out.append(Metric("repeat_throughput_samples_per_s", _round(t), end, w.repeat))
    ranks = {s.rank for s in result.steps}
    steps = [s for s in result.steps if s.phase is Phase.MEASUREMENT and s.rank == min(ranks, default=0)]
    steps.sort(key=lambda s: (s.repeat, s.index))
    for i, r in enumerate(steps):
        ts = int((origin + r.start_s) * 1000)
        rate = r.samples / r.step_s if r.step_s > 0 else 0.0
        out.append(Metric("step_throughput_samples_per_s", _round(rate), ts, i))
        out.append(Metric("step_time_s", _round(r.step_s), ts, i))
        out.append(Metric("step_data_wait_s", _round(r.data_wait_s), ts, i))
        if r.device_s is not None:
            out.append(Metric("step_device_time_s", _round(r.device_s), ts, i))
    return out


def _readings(samples: list[UtilizationSample], prefix: str, origin: float) -> list[Metric]:
    out: list[Metric] = []
    for i, u in enumerate(samples):
        ts = int((origin + u.t_s) * 1000)
        if u.cpu_percent:
            out.append(
                Metric(
                    prefix + CPU_KEY.removeprefix(SYSTEM_PREFIX), _round(sum(u.cpu_percent) / len(u.cpu_percent)), ts, i
                )
            )
        out.append(Metric(prefix + RSS_KEY.removeprefix(SYSTEM_PREFIX), _round(u.rss_bytes / 1e6), ts, i))
        for g in u.gpus or ():
            gpu_ts = int((origin + g.t_s) * 1000)
            for name, value in (
                ("utilization_percentage", g.util_percent),
                ("memory_usage_megabytes", None if g.memory_used_bytes is None else g.memory_used_bytes / 1e6),
                ("power_usage_watts", g.power_w),
                ("sm_clock_mhz", g.sm_clock_mhz),
                ("temperature_celsius", g.temperature_c),
            ):
                if value is not None:
                    out.append(Metric(f"{prefix}gpu_{g.index}_{name}", _round(float(value)), gpu_ts, i))
    return out


def system_metrics(result: Result) -> list[Metric]:
    """The sampler's readings under ``system/``: mean CPU utilization and process-tree RSS, one step per reading;
    on a GPU also each GPU's NVML readings, named as MLflow's own GPU monitor names them
    (``system/gpu_<index>_utilization_percentage``, ``_memory_usage_megabytes``, ``_power_usage_watts``)
    plus ``_sm_clock_mhz`` and ``_temperature_celsius``.

    A run on several nodes keeps each node's readings apart, with the node's id in the
    prefix as MLflow's system metrics do for distributed runs
    (``mlflow.system_metrics.set_system_metrics_node_id``): ``system/<node>/cpu_utilization_percentage``.
    """
    origin, _ = clock(result)
    nodes = result.nodes.nodes if result.nodes is not None else []
    if len(nodes) > 1:
        return [m for n in nodes for m in _readings(n.utilization, f"{SYSTEM_PREFIX}{node_id(n.hostname)}/", origin)]
    return _readings(result.utilization, SYSTEM_PREFIX, origin)
