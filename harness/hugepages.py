"""Transparent huge pages (THP): the kernel's policy, and whether torch asks for them.

A training step reads and writes gigabytes of activations. Mapped in 4 KiB pages, that costs
translation-lookaside-buffer misses, dearer still in a virtual machine, where each miss walks two
page tables. Measured here (2-vCPU Xeon with AMX, torch 2.14, ResNet-50 batch 16, bf16 +
channels_last, glibc's malloc with trainbench's pinned thresholds): 0.92-0.93 s per step in
4 KiB pages, 0.85-0.88 s with torch's huge-page switch on, 1.2 GiB of a 2.3 GiB resident set
then in huge pages. So whether a run got huge pages moves its throughput by some 7%, and a
result has to say so.

The kernel's policy, ``/sys/kernel/mm/transparent_hugepage/enabled`` (Linux,
Documentation/admin-guide/mm/transhuge.rst):

- ``always``: any large enough anonymous mapping may get huge pages (the default of RHEL and
  of the kernel's own config);
- ``madvise``: only mappings the program marks with ``madvise(MADV_HUGEPAGE)`` (the default
  of Debian and Ubuntu);
- ``never``.

torch marks its CPU tensors of 2 MiB and more, aligned to 2 MiB, when the variable
:data:`TORCH_THP_ENV` is ``1`` (``c10/core/alloc_cpu.cpp``, ``is_thp_alloc_enabled``; read once,
when the process starts). Under ``madvise`` that is the only way a run gets huge pages; under
``always`` it gets them anyway; under ``never`` not at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

TORCH_THP_ENV = "THP_MEM_ALLOC_ENABLE"
"""torch's switch for huge-page-backed CPU tensors (``1``: on; unset or ``0``: off)."""

THP_ROOT = Path("/sys/kernel/mm/transparent_hugepage")
"""Where Linux shows its THP policy."""

MAX_SYSFS_BYTES = 4096
"""A sysfs policy file is one short line; reads stop here."""

_CHOSEN = re.compile(r"\[([a-z+_-]+)\]")


def _chosen(path: Path) -> str | None:
    """The bracketed word of a sysfs choice file (``always [madvise] never`` -> ``madvise``)."""
    try:
        with path.open("rb") as f:
            text = f.read(MAX_SYSFS_BYTES).decode("ascii", "replace")
    except OSError:
        return None
    m = _CHOSEN.search(text)
    return m.group(1) if m else None


def thp_policy(root: Path = THP_ROOT) -> dict[str, str | None]:
    """The kernel's THP policy: ``{"enabled": "always"|"madvise"|"never", "defrag": ...}``.

    ``defrag`` says whether a fault in a huge-page mapping stalls to compact memory
    (``always``, ``defer``, ``defer+madvise``, ``madvise``, ``never``). A value is None where the
    file cannot be read (a kernel without THP, not Linux).
    """
    return {name: _chosen(root / name) for name in ("enabled", "defrag")}


def torch_requests_thp(env_value: str | None, policy: str | None) -> bool | None:
    """Whether torch's large CPU tensors are backed by huge pages, from the variable's value
    (:data:`TORCH_THP_ENV`, None when unset) and the kernel's ``enabled`` policy.

    torch reads the variable with ``c10::utils::check_env``: ``"1"`` is on, ``"0"`` off, and any
    other value is ignored with a warning (off).

    Returns:
        True under ``always``, or under ``madvise`` with the variable ``"1"``; False under
        ``never``, or ``madvise`` without it; None when the policy is unknown.
    """
    if policy is None:
        return None
    if policy == "always":
        return True
    if policy == "never":
        return False
    return env_value == "1"


def thp_facts(root: Path = THP_ROOT, env: Mapping[str, str] | None = None) -> dict[str, str | bool | None]:
    """What a system description records: :func:`thp_policy` plus ``torch_tensors``,
    :func:`torch_requests_thp` for this process's environment (``env``, default ``os.environ``)."""
    policy: dict[str, str | bool | None] = dict(thp_policy(root))
    value = (os.environ if env is None else env).get(TORCH_THP_ENV)
    enabled = policy["enabled"]
    policy["torch_tensors"] = torch_requests_thp(value, enabled if isinstance(enabled, str) else None)
    return policy
