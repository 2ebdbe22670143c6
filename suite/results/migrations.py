"""Numbered upgrade steps of the result schema, as asv's ``update_to_N``: old result files still load.

A result file is checked *as stored*: its digest over its own content, and its JSON Schema
of its own ``schema_version`` (:data:`SCHEMA_PATHS`; the schema of every version stays
committed). Only then is it upgraded, one step per version, to :data:`SCHEMA_VERSION`;
:func:`update_to_N` takes a document of version N-1 and returns one of version N. An
upgraded document keeps its stored ``digest``: it is the file's identity, which bands and
duplicate checks cite.

Each step is frozen in time: it names the fields as they were at its version and never
reads today's models, so a later change of a model cannot change what an old step does.

Adding schema version N: bump ``SCHEMA_VERSION`` in :mod:`suite.results.model`, run
``trainbench schema --write`` (writes ``result-vN.schema.json`` beside the older ones), add
its path to :data:`SCHEMA_PATHS`, write ``update_to_N`` and register it in :data:`UPGRADES`,
and test it on the committed results of version N-1.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from suite.results.model import SCHEMA_DIR, SCHEMA_VERSION

SCHEMA_PATHS: dict[int, Path] = {v: SCHEMA_DIR / f"result-v{v}.schema.json" for v in (1, 2)}
"""schema_version -> its committed JSON Schema."""

Document = dict[str, Any]

V2_LAUNCH_KEYS: dict[str, frozenset[str]] = {
    "inline": frozenset({"cpus", "numa_nodes"}),
    "run_cpu": frozenset({"cpus", "numa_nodes"}),
    "torchrun": frozenset({"topology", "nnodes", "nproc_per_node", "rdzv_endpoint", "rdzv_id", "compare_single"}),
    "horovodrun": frozenset({"nproc_per_node", "hosts"}),
}
"""Schema v2: each launcher's own launch settings (besides those every launcher has)."""
V2_COMMON_LAUNCH_KEYS = frozenset(
    {
        "launcher",
        "allocator",
        "malloc_conf",
        "omp_num_threads",
        "kmp_blocktime",
        "kmp_affinity",
        "omp_proc_bind",
        "omp_places",
        "memory_limit_mb",
        "startup_timeout_s",
        "stall_timeout_s",
    }
)
"""Schema v2: the launch settings of every launcher."""


def update_to_2(doc: Document) -> Document:
    """Version 1 -> 2: ``config.launch`` keeps only the settings of the run's launcher.

    In version 1 every launch setting of every launcher was stored (``topology: null``
    for an inline run). The settings of other launchers were never used by the run
    (launch planning ignored or refused them), so they are dropped, not translated. A
    v1 launch without ``launcher`` was an inline one.
    """
    out = copy.deepcopy(doc)
    launch = out["config"]["launch"]
    launcher = launch.get("launcher", "inline")
    keep = V2_COMMON_LAUNCH_KEYS | V2_LAUNCH_KEYS[launcher]
    out["config"]["launch"] = {"launcher": launcher, **{k: v for k, v in launch.items() if k in keep}}
    out["schema_version"] = 2
    return out


UPGRADES: dict[int, Callable[[Document], Document]] = {2: update_to_2}
"""N -> the step that upgrades a document of version N-1 to version N."""


@functools.lru_cache(maxsize=len(SCHEMA_PATHS))
def schema_validator(version: int) -> jsonschema.Draft202012Validator:
    """The JSON Schema validator of result schema ``version``.

    Raises:
        KeyError: not a version in :data:`SCHEMA_PATHS`.
    """
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATHS[version].read_text()))


def supported(version: object) -> bool:
    """True when this trainbench reads result schema ``version``."""
    return isinstance(version, int) and not isinstance(version, bool) and version in SCHEMA_PATHS


def versions_text() -> str:
    """The versions this trainbench reads, for messages (``1 and 2``)."""
    names = [str(v) for v in sorted(SCHEMA_PATHS)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def upgrade(doc: Document) -> Document:
    """``doc`` (already checked at its own version) upgraded step by step to :data:`SCHEMA_VERSION`.

    The stored ``digest`` is kept. The input is not modified.

    Raises:
        ValueError: the version is not one this trainbench reads.
    """
    version = doc.get("schema_version")
    if not supported(version):
        raise ValueError(f"result schema_version {version!r} is not supported; this trainbench reads {versions_text()}")
    assert isinstance(version, int)
    for step in range(version + 1, SCHEMA_VERSION + 1):
        doc = UPGRADES[step](doc)
    return doc
