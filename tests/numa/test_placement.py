"""Placement of ranks on NUMA nodes: sysfs discovery and the pseudo-node override."""

from __future__ import annotations

import re

import pytest

from suite.launchers.placement import PlacementError, placement
from workloads.job import PlacementSlot

TWO_SOCKETS: list[dict[str, object]] = [
    {"node": 0, "cpus": [0, 1, 2, 3], "memory_bytes": 2**34},
    {"node": 1, "cpus": [4, 5, 6, 7], "memory_bytes": 2**34},
]


def _dicts(slots: list[PlacementSlot]) -> list[dict[str, str]]:
    return [s.model_dump() for s in slots]


def test_one_slot_per_node_bound_to_its_cores_and_memory() -> None:
    assert _dicts(placement(None, allowed=set(range(8)), nodes=TWO_SOCKETS)) == [
        {"node": "0", "cpus": "0,1,2,3", "mems": "0"},
        {"node": "1", "cpus": "4,5,6,7", "mems": "1"},
    ]


def test_only_allowed_cpus_are_used_and_empty_nodes_dropped() -> None:
    assert _dicts(placement(None, allowed={1, 2}, nodes=TWO_SOCKETS)) == [{"node": "0", "cpus": "1,2", "mems": "0"}]


def test_pseudo_nodes_take_memory_from_the_real_node_of_their_cores() -> None:
    assert _dicts(placement("0-1;4-5", allowed=set(range(8)), nodes=TWO_SOCKETS)) == [
        {"node": "0", "cpus": "0,1", "mems": "0"},
        {"node": "1", "cpus": "4,5", "mems": "1"},
    ]
    assert placement("0;1@1", allowed=set(range(8)), nodes=TWO_SOCKETS)[1].mems == "1"


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ("0;0", "overlaps"),
        ("0;9", "asks for CPU(s) [9]"),
        ("0@5", "memory node(s) [5]"),
    ],
)
def test_bad_topologies(topology: str, message: str) -> None:
    with pytest.raises(PlacementError, match=re.escape(message)):
        placement(topology, allowed=set(range(8)), nodes=TWO_SOCKETS)


def test_this_machine_from_sysfs() -> None:
    slots = placement(None)
    assert slots and all(s.cpus for s in slots)
