"""What a run page says in words: its name, its description, its tags and its params.

The MLflow run page shows, top to bottom, the run name, "About this run" (with the
Duration), the tags, the description (``mlflow.note.content``, rendered as Markdown)
and the metrics. So the name says which config ran where, the description answers
the question (throughput, 95% CI, verdicts, hardware), and the tags carry the
hardware facts that MLflow's search and compare views filter on.
"""

from __future__ import annotations

import math
import re
from typing import Any

from suite import labels
from suite.markdown import escape, plain
from suite.results import Result
from suite.tracking.store import PARAM_MAX

NAME_MAX = 250
"""MLflow's limit on a run name (characters)."""
TAG_MAX = 5000
"""Longest tag value written (MLflow accepts 8000)."""


def number(x: float) -> str:
    """A figure for people: 4 significant digits, thousands separated, no exponent between 1e-4 and 1e9."""
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if x == 0 or abs(x) >= 1e-4:
        return f"{x:.4g}"
    return f"{x:.3e}"


def run_name(result: Result) -> str:
    """``<workload> <precision> bs<N> [<knobs>] @ <system>`` in NAME_MAX characters (:func:`suite.labels.name`)."""
    return labels.name(result, NAME_MAX)


def interval_words(result: Result) -> tuple[str, str]:
    """(short form for a tag, Markdown sentence) about the throughput's 95% CI, for every case.

    Bounded: the interval with its relative half-width and method. Unbounded above:
    the lower bound and why. Not computed: why, and what gives one.
    """
    s = result.summary
    if s is None:
        return "none: the run did not finish", "no throughput: the run did not finish"
    ci = s.throughput_ci95
    if ci is None:
        why = s.throughput_ci95_reason or "too few repeats and steps (2+ repeats, or 4+ measured steps, give one)"
        if s.throughput_ci95_status == "unbounded":
            return "unbounded: too few repeats to bound", f"no 95% CI: {escape(why)}"
        return "none: too few repeats and steps", f"no 95% CI: {escape(why)}"
    method = plain(ci.method)
    if ci.high is None:
        return (
            f"[{number(ci.low)}, unbounded): too few repeats",
            f"95% CI {number(ci.low)} to unbounded ({escape(method)}): too few repeats to bound it; "
            "add repeats or measured steps",
        )
    rel = relative_half_width(result)
    pm = f"±{rel:.1%}, " if rel is not None else ""
    return (
        f"[{number(ci.low)}, {number(ci.high)}]",
        f"95% CI {number(ci.low)}–{number(ci.high)} ({pm}{escape(method)})",
    )


def relative_half_width(result: Result) -> float | None:
    """The CI's half-width over the throughput: the summary's ``throughput_ci95_rel`` when it has one.

    Otherwise (high - low) / 2 / throughput for a bounded interval; None when unbounded or absent.
    """
    s = result.summary
    if s is None:
        return None
    ci = s.throughput_ci95
    if ci is None or ci.high is None or s.throughput <= 0:
        return None
    given = s.throughput_ci95_rel
    if given is not None and math.isfinite(given):
        return float(given)
    return (ci.high - ci.low) / 2 / s.throughput


def steady_words(result: Result) -> str | None:
    """The steady-state verdict in a few words (``steady``, ``TRENDING``, ``not checked``, ``undetermined``)."""
    if result.summary is None:
        return None
    st = result.summary.steady_state
    drift = f"drift {st.worst_drift:+.1%}" if st.worst_drift is not None else None
    p = f", p={st.worst_p_value:.2g}" if st.worst_p_value is not None else ""
    if st.status == "steady":
        return f"steady ({drift})" if drift else "steady"
    if st.status == "trending":
        return f"TRENDING ({drift}{p}): step time still drifts; lengthen the warm-up"
    if st.status == "insufficient":
        return "not checked (< 8 steps per window)"
    if st.status == "undetermined":
        return "undetermined (too little data to decide)" if not drift else f"undetermined ({drift}{p})"
    return plain(st.status)


def verdict_words(result: Result) -> str | None:
    """The input-bound verdict in a few words, e.g. ``compute-bound (0% data wait, CPU 98% busy)``."""
    d, s = result.diagnosis, result.summary
    if d is None or s is None:
        return None
    cpu = f", CPU {d.cpu_mean_percent:.0f}% busy" if d.cpu_mean_percent is not None else ""
    return f"{d.verdict} ({s.input_bound_fraction:.0%} data wait{cpu})"


def hardware_words(result: Result) -> str:
    """CPU model, cores, ISA, GPU, torch version and runtime in one line."""
    env = result.environment
    parts = [str((env.get("cpu") or {}).get("model") or "unknown CPU")]
    cores = labels.cores_text(env)
    if cores:
        parts.append(f"{cores} cores")
    isa = labels.isa_summary(env)
    if isa:
        parts.append(isa)
    parts.append(f"GPU {labels.gpu_text(env)}")
    torch = (env.get("torch") or {}).get("version")
    if torch:
        parts.append(f"torch {torch}")
    parts.append(result.runtime.kind + (f" {result.runtime.image}" if result.runtime.image else ""))
    return " · ".join(plain(p) for p in parts)


def description(result: Result) -> str:
    """The run's description (Markdown): four short lines that fit the UI's 150-pixel preview.

    MLflow's UI renders it with showdown and ``simpleLineBreaks``, so each newline is a line break.

    Throughput and its 95% CI; the verdicts (input-bound, steady state); the
    hardware; the config (workload, system, profile, division, windows) and cost.
    """
    w = result.config.windows
    repeats = f"{w.repeats} repeat{'s' if w.repeats != 1 else ''} of ≥ {w.measure_steps} steps"
    config = (
        f"{escape(result.workload)} on {escape(result.system)} · profile {escape(result.profile)} · "
        f"{result.division} division · {repeats}"
    )
    if result.cost is not None:
        config += f" · {number(result.cost.samples_per_dollar)} samples/$ at {number(result.cost.usd_per_hour)} USD/h"
    gpu = result.utilization_summary.gpu if result.utilization_summary is not None else None
    if gpu is not None and gpu.samples_per_joule is not None:
        config += f" · {number(gpu.samples_per_joule)} samples/J (GPU energy, NVML)"
    s = result.summary
    if s is None:
        steps = sum(1 for r in result.steps if r.phase.value == "measurement")
        head = f"**incomplete run**: {escape(result.error or 'no summary')}"
        verdicts = f"{steps} measured steps kept in the result file; no throughput is reported"
    else:
        head = f"**{number(s.throughput)} samples/s** · {interval_words(result)[1]}"
        verdict = verdict_words(result)
        verdicts = (f"{escape(verdict)} · " if verdict else "") + f"steady state: {escape(steady_words(result))}"
    return "\n".join([head, verdicts, escape(hardware_words(result)), config])


def tags(result: Result) -> dict[str, str]:
    """Tags of the run: identity, verdicts, and the hardware and software it ran on.

    Hardware tags: ``trainbench.cpu_model``, ``.cores``, ``.isa`` (the effective matrix ISA),
    ``.isa_features``, ``.isa_caps`` (what ``ONEDNN_MAX_CPU_ISA``/``ATEN_CPU_CAPABILITY`` hid),
    ``.torch_cpu_capability``, ``.precision`` (the rank's decision and its reason), ``.gpu``, ``.torch``,
    ``.cuda``, ``.runtime`` (``local``/``docker``), ``.image`` and ``.image_id`` (the
    image digest) in a container, ``.slurm_job`` (and ``.slurm_nodelist``,
    ``.slurm_partition``) where the run recorded a Slurm job, and the nodes of a
    multi-node run (:func:`node_tags`).
    """
    env = result.environment
    torch = env.get("torch") or {}
    out: dict[str, Any] = {  # the UI lists tags in this order: hardware, then verdicts, then identity
        "trainbench.cpu_model": str((env.get("cpu") or {}).get("model")),
        "trainbench.cores": labels.cores_text(env),
        "trainbench.isa": labels.isa_summary(env),
        "trainbench.isa_features": " ".join(labels.isa_features(env)) or None,
        "trainbench.isa_caps": "; ".join(labels.isa_caps(env)) or None,
        "trainbench.torch_cpu_capability": labels.torch_capability(env),
        "trainbench.gpu": labels.gpu_text(env),
        "trainbench.torch": torch.get("version"),
        "trainbench.cuda": torch.get("cuda_version") or ("none" if torch else None),
        "trainbench.runtime": result.runtime.kind,
        "trainbench.image": result.runtime.image,
        "trainbench.image_id": result.runtime.image_id,
    }
    for key, value in labels.slurm_job(result).items():
        out[f"trainbench.slurm_{key}"] = value
    out.update(node_tags(result))
    if result.summary is not None:
        out["trainbench.throughput_ci95"] = interval_words(result)[0]
        out["trainbench.steady_state"] = result.summary.steady_state.status
    if result.diagnosis is not None:
        out["trainbench.verdict"] = result.diagnosis.verdict
    emulated = labels.bf16_emulated(result)
    if emulated is not None:
        out["trainbench.bf16_emulated"] = labels.value_text(emulated)
    choice = labels.precision_choice(result)
    if choice is not None:
        requested = choice.get("requested")
        out["trainbench.precision"] = f"{choice['chosen']} (requested {requested}): {choice.get('reason')}"
    out.update(
        {
            "trainbench.system": result.system,
            "trainbench.workload": result.workload,
            "trainbench.profile": result.profile,
            "trainbench.division": result.division,
            "trainbench.status": result.status,
            "trainbench.launcher": result.runtime.launcher,
            "trainbench.result_id": result.run_id,
            "trainbench.digest": result.digest,
            "trainbench.suite_version": result.provenance.suite_version,
            "trainbench.git_commit": result.provenance.git_commit,
            "mlflow.source.git.commit": result.provenance.git_commit,
            "mlflow.note.content": description(result),
        }
    )
    if result.world_size > 1:
        out["trainbench.world_size"] = str(result.world_size)
    prep = result.workload_info.get("preprocessing") or {}
    if isinstance(prep, dict) and prep.get("location"):
        out["trainbench.preprocessing"] = f"{prep.get('engine', '')}: {prep['location']}"
    if result.error:
        out["trainbench.error"] = result.error
    return {k: plain(v)[:TAG_MAX] if k != "mlflow.note.content" else str(v)[:TAG_MAX] for k, v in out.items() if v}


def node_id(hostname: str) -> str:
    """A node's id in metric and tag names (``system/<node id>/...``): its host name, other characters ``_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", hostname)[:64] or "unknown"


MAX_NODE_TAGS = 64
"""Nodes that get a hardware tag of their own (a larger job lists the count only)."""


def node_tags(result: Result) -> dict[str, str]:
    """The nodes of a multi-node run: ``trainbench.nodes`` (count and names), ``trainbench.nodes_heterogeneous``
    (``false``, or the differing fields), and ``trainbench.node.<host>`` (CPU, cores, GPUs) for each node."""
    if result.nodes is None or len(result.nodes.nodes) < 2:
        return {}
    nodes = result.nodes
    names = [n.hostname for n in nodes.nodes]
    out = {
        "trainbench.nodes": f"{len(names)}: {', '.join(names)}",
        "trainbench.nodes_heterogeneous": "true: " + ", ".join(nodes.differences) if nodes.heterogeneous else "false",
    }
    for n in nodes.nodes[:MAX_NODE_TAGS]:
        cpu = str((n.system.get("cpu") or {}).get("model"))
        out[f"trainbench.node.{node_id(n.hostname)}"] = (
            f"{cpu}; {labels.cores_text(n.system)}; GPU {labels.gpu_text(n.system)}"
        )
    return out


def params(result: Result) -> dict[str, str]:
    """The config as MLflow params, as the CLI spells them: no ``None``, ``true``/``false``, 6 digits at most.

    Keys: ``profile``, ``params.*``, ``windows.*``, ``launch.*``, ``overrides`` (the
    ``--set`` list, space-separated), ``division``, ``system``.
    """
    out: dict[str, str] = {"profile": result.profile}
    for key, value in labels.flat_settings(result.config).items():
        text = labels.value_text(value)
        if text is not None:
            out[key] = text
    if result.config.overrides:
        out["overrides"] = " ".join(result.config.overrides)
    out["division"] = result.division
    out["system"] = result.system
    return {k: plain(v)[:PARAM_MAX] for k, v in out.items()}
