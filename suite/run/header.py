"""The run header: the machine, its matrix ISA, torch and the precision decision, before the first step.

The supervisor plans the header before it starts the rank (:func:`planned_header`, with
the launch plan's environment, so ``ONEDNN_MAX_CPU_ISA``/``ATEN_CPU_CAPABILITY`` set for the
rank count); the rank then reports what it decided on its own host (``workloads.events``).
The same words describe a result's recorded ISA and precision (``trainbench show``, the
summary table): :func:`isa_text`, :func:`precision_text`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from harness.hugepages import thp_facts
from harness.precision import choose_precision
from harness.system import read_isa
from suite import labels
from suite.config import RunConfig
from workloads import registry


def planned_header(config: RunConfig, environ: Mapping[str, str]) -> dict[str, Any]:
    """The header event of a run about to start on this host: ``{"event": "plan", ...}``.

    Keys: ``cpu_model``, ``logical_cores``, ``cpus_allowed`` (this process's affinity),
    ``isa`` (:meth:`harness.isa.IsaInfo.to_dict` under ``environ``'s caps), ``torch_version``
    (the installed distribution; not imported), ``precision`` (the planned
    :class:`harness.precision.PrecisionChoice` dict for a CPU workload, else None),
    ``transparent_hugepages`` (:func:`harness.hugepages.thp_facts` under ``environ``: the
    rank inherits that environment, and a container shares the host's kernel).
    """
    isa = read_isa(env=environ)
    choice = None
    requested = config.params.get("precision")
    if registry.get(config.workload).cpu_precision and isinstance(requested, str):
        with contextlib.suppress(ValueError):
            choice = choose_precision(requested, isa).to_dict()
    torch = None
    with contextlib.suppress(metadata.PackageNotFoundError):
        torch = metadata.version("torch")
    return {
        "event": "plan",
        "cpu_model": isa.model,
        "logical_cores": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "isa": isa.to_dict(),
        "torch_version": torch,
        "precision": choice,
        "transparent_hugepages": thp_facts(env=environ),
    }


def isa_text(isa: Any, torch_capability: str | None = None) -> str:
    """The ISA record in words: the effective matrix ISA, the CPU's own when caps lowered it, and the caps.

    E.g. ``AVX2 (the CPU has AVX512 BF16 VNNI; ONEDNN_MAX_CPU_ISA=AVX2 hides ... from oneDNN); torch AVX2``.
    """
    if not isinstance(isa, dict):
        return "not recorded"
    env = {"isa": isa}
    effective = labels.isa_summary(env) or "no tracked matrix features"
    own = labels.isa_summary(env, effective=False)
    text = effective
    notes = [f"the CPU has {own}"] if own and own != effective else []
    notes += labels.isa_caps(env)
    if notes:
        text += f" ({'; '.join(notes)})"
    cap = torch_capability or isa.get("torch_cpu_capability")
    if cap:
        text += f"; torch dispatches {cap}"
    bf16 = isa.get("bf16_native")
    if isinstance(bf16, bool):
        text += "; bf16 native" if bf16 else "; bf16 emulated"
    return text


def precision_text(choice: Any) -> str:
    """A precision decision in words: ``bf16 (requested auto): <reason>``, plus EMULATED when it is."""
    if not isinstance(choice, dict) or not isinstance(choice.get("chosen"), str):
        return "not recorded"
    text = f"{choice['chosen']} (requested {choice.get('requested')}): {choice.get('reason')}"
    if choice.get("bf16_emulated"):
        text += " [EMULATED: this run measures the emulation, not the machine]"
    return text


def hugepages_text(facts: Any) -> str:
    """The transparent-huge-page facts in words (:func:`harness.hugepages.thp_facts`), e.g.
    ``kernel policy madvise; torch's tensors in 4 KiB pages (THP_MEM_ALLOC_ENABLE=1 asks for huge pages)``."""
    if not isinstance(facts, dict) or facts.get("enabled") is None:
        return "not recorded"
    text = f"kernel policy {facts['enabled']}"
    if facts.get("torch_tensors") is True:
        return text + "; torch's large tensors in huge pages"
    if facts["enabled"] == "madvise":
        return text + "; torch's tensors in 4 KiB pages (THP_MEM_ALLOC_ENABLE=1 asks for huge pages)"
    return text + "; torch's tensors in 4 KiB pages"


def header_lines(event: Mapping[str, Any]) -> list[str]:
    """The header's lines (plain text) from a ``plan`` or ``environment`` event."""
    cores = event.get("logical_cores")
    allowed = event.get("cpus_allowed")
    core_text = f"{cores} logical cores" if cores else "cores unknown"
    if allowed and cores and allowed < cores:
        core_text += f", {allowed} allowed"
    lines = [
        f"CPU: {event.get('cpu_model') or 'unknown model'}, {core_text}; torch {event.get('torch_version') or '?'}",
        f"matrix ISA: {isa_text(event.get('isa'), event.get('torch_cpu_capability'))}",
    ]
    if event.get("transparent_hugepages") is not None:
        lines.append(f"transparent huge pages: {hugepages_text(event.get('transparent_hugepages'))}")
    if event.get("precision") is not None:
        lines.append(f"precision: {precision_text(event.get('precision'))}")
    return lines
