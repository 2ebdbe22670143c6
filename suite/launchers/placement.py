"""Placement of distributed ranks: one rank per NUMA node, from sysfs or an explicit override.

A slot (:class:`workloads.job.PlacementSlot`) is a node id, a cpulist and a nodelist: the rank in slot i is
bound with ``numactl --physcpubind=cpus --membind=mems`` and runs one OpenMP thread
per CPU. The override serves machines with fewer nodes and tests (e.g. ``"0;1"``:
two pseudo-nodes of one core each, memory from the real node holding those cores).
"""

from __future__ import annotations

import os

from harness.system import numa_topology, parse_cpulist
from workloads.job import PlacementSlot


class PlacementError(ValueError):
    """The requested topology cannot be placed on this machine."""


def _fmt(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def _home_node(cpus: list[int], nodes: list[dict[str, object]]) -> int:
    for n in nodes:
        node_cpus = n["cpus"]
        assert isinstance(node_cpus, list)
        if cpus and cpus[0] in node_cpus:
            return int(str(n["node"]))
    return 0


def placement(
    topology: str | None, allowed: set[int] | None = None, nodes: list[dict[str, object]] | None = None
) -> list[PlacementSlot]:
    """One slot per (pseudo-)node.

    Args:
        topology: None for the machine's NUMA nodes (sysfs), or the override
            (cpulists separated by ';', each optionally ``@mems``).
        allowed: CPUs this process may use (default ``os.sched_getaffinity(0)``).
        nodes: the machine's NUMA nodes (default: sysfs, :func:`harness.system.numa_topology`).

    Raises:
        PlacementError: a requested CPU is not available here, slots overlap, or a node has no usable CPU.
    """
    allowed = os.sched_getaffinity(0) if allowed is None else allowed
    nodes = numa_topology() if nodes is None else nodes
    slots: list[PlacementSlot] = []
    if topology is None:
        if not nodes:
            nodes = [{"node": 0, "cpus": sorted(allowed)}]
        for n in nodes:
            node_cpus = n["cpus"]
            assert isinstance(node_cpus, list)
            cpus = sorted(set(node_cpus) & allowed)
            if cpus:
                slots.append(PlacementSlot(node=str(n["node"]), cpus=_fmt(cpus), mems=str(n["node"])))
        if not slots:
            raise PlacementError("no NUMA node has a CPU this process may use")
        return slots
    seen: set[int] = set()
    for i, part in enumerate(topology.split(";")):
        cpu_text, _, mems = part.partition("@")
        cpus = parse_cpulist(cpu_text)
        missing = sorted(set(cpus) - allowed)
        if missing:
            raise PlacementError(f"topology slot {i} asks for CPU(s) {missing}; this process may use {sorted(allowed)}")
        if seen & set(cpus):
            raise PlacementError(f"topology slot {i} overlaps another slot on CPU(s) {sorted(seen & set(cpus))}")
        seen |= set(cpus)
        known = {int(str(n["node"])) for n in nodes} or {0}
        mem_nodes = parse_cpulist(mems) if mems else [_home_node(cpus, nodes)]
        if set(mem_nodes) - known:
            raise PlacementError(
                f"topology slot {i} asks for memory node(s) {mem_nodes}; this machine has {sorted(known)}"
            )
        slots.append(PlacementSlot(node=str(i), cpus=_fmt(cpus), mems=_fmt(mem_nodes)))
    return slots
