"""What the result records about a Slurm job: its identity, and one system description per node.

Every rank captures its own system description where it runs (``harness.system.capture_system``
in ``workloads.rank``), and rank 0 gathers them (``measurement["ranks"]``). Here they are
grouped by node: one description per node (its lowest rank's), the ranks it ran, and
whether the nodes differ in hardware or software that changes throughput (a heterogeneous
allocation, as in seed 001's clusters of GPU and CPU instances), with the differing
fields listed node by node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from suite.slurm.client import JobInfo

COMPARED = (
    "cpu_model",
    "cpu_flags",
    "logical_cores",
    "cpus_allowed",
    "numa_nodes",
    "memory_bytes",
    "transparent_hugepages",
    "gpus",
    "libraries",
)
"""The fields of a node's fingerprint whose difference marks the nodes heterogeneous."""


def job_identity(info: JobInfo, nodes: list[str], cluster: str | None = None) -> dict[str, Any]:
    """The job's identity for the result (and MLflow tags).

    Args:
        info: the job's final state.
        nodes: the expanded node list (``scontrol show hostnames``), in Slurm's order.
        cluster: the cluster's name, when known.

    Returns:
        ``{"job_id", "cluster", "nodelist", "nodes", "num_nodes", "partition", "batch_host", "state", "exit_code"}``.
    """
    return {
        "job_id": info.job_id,
        "cluster": cluster,
        "nodelist": info.nodelist,
        "nodes": list(nodes),
        "num_nodes": info.num_nodes if info.num_nodes is not None else len(nodes),
        "partition": info.partition,
        "batch_host": info.batch_host,
        "state": info.state,
        "exit_code": info.exit_code,
    }


def _get(doc: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)  # type: ignore[assignment]
    return doc


def fingerprint(system: Mapping[str, Any]) -> dict[str, Any]:
    """The throughput-relevant facts of one node's system description (the :data:`COMPARED` fields)."""
    devices = _get(system, "gpus", "devices") or []
    allowed = _get(system, "binding", "cpus_allowed")
    return {
        "cpu_model": _get(system, "cpu", "model"),
        "cpu_flags": sorted(_get(system, "cpu", "flags") or []),
        "logical_cores": _get(system, "cpu", "logical_cores"),
        "cpus_allowed": len(allowed) if isinstance(allowed, list) else None,
        "numa_nodes": len(system.get("numa_nodes") or []),
        "memory_bytes": _get(system, "memory", "total_bytes"),
        "transparent_hugepages": _get(system, "memory", "transparent_hugepages", "enabled"),
        "gpus": [f"{d.get('name')} ({d.get('memory_bytes')} B)" for d in devices if isinstance(d, Mapping)],
        "libraries": dict(sorted((system.get("libraries") or {}).items())),
    }


def node_systems(ranks: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Group the ranks' system descriptions (and utilization readings) by node.

    Args:
        ranks: the gathered rank measurements (each with ``rank`` and ``system``, optionally
            ``utilization``: the sampler's readings).

    Returns:
        ``{"nodes": [{"hostname", "ranks", "system", "utilization"}...], "heterogeneous": bool,
        "differences": {field: {hostname: value}}}``, nodes in order of their lowest rank, each
        with its lowest rank's description and readings (the result's ``nodes``,
        :class:`suite.results.Nodes`). A rank without a system description (it died before
        capturing one) is listed under ``"unknown"``.
    """
    by_host: dict[str, dict[str, Any]] = {}
    for m in sorted(ranks, key=lambda r: int(r.get("rank") or 0)):
        system = m.get("system") or {}
        host = str(_get(system, "host", "hostname") or "unknown")
        entry = by_host.setdefault(
            host, {"hostname": host, "ranks": [], "system": system, "utilization": list(m.get("utilization") or [])}
        )
        entry["ranks"].append(m.get("rank"))
    prints = {host: fingerprint(e["system"]) for host, e in by_host.items() if e["system"]}
    differences: dict[str, dict[str, Any]] = {}
    for key in COMPARED:
        values = {host: fp[key] for host, fp in prints.items()}
        if len({repr(v) for v in values.values()}) > 1:
            differences[key] = values
    return {"nodes": list(by_host.values()), "heterogeneous": bool(differences), "differences": differences}
