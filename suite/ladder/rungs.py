"""The rungs of the CPU optimization ladder, and which of them can help on this machine.

The seed study's ladder (C. Rand, "Training AI Models on CPU", Sep 2024; shared/CONTEXT.md),
cumulative: fp32 -> + bf16 autocast -> + channels_last -> + torch.compile -> + a faster
allocator (jemalloc, else tcmalloc) -> + OpenMP pinning. Each rung adds its settings to
those of the rungs below it that ran. A rung that cannot help here is skipped with the
reason, never run:

- ``bf16`` without native bf16 matrix instructions (it would measure the emulation,
  about 14x slower than fp32 on an AVX2-only Zen 1);
- ``compile`` without a C++ compiler (inductor compiles C++ kernels on the CPU);
- ``allocator`` with neither libjemalloc2 nor libgoogle-perftools4 installed;
- ``omp`` with a single CPU (nothing to pin).

Every rung's config is resolved before anything runs, so a bad ``--set`` fails first.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.isa import IsaInfo
from harness.precision import EMULATION_COST, choose_precision
from suite.config import RunConfig
from suite.launchers.allocators import allocator_library
from suite.launchers.base import LaunchError
from suite.specs import ConfigError, get_spec, resolve
from workloads import registry

RUNGS = ("fp32", "bf16", "channels_last", "compile", "allocator", "omp")
"""Every rung, bottom to top."""

LABELS = {
    "fp32": "fp32",
    "bf16": "+ bf16",
    "channels_last": "+ channels_last",
    "compile": "+ torch.compile",
    "allocator": "+ allocator",
    "omp": "+ OpenMP pinning",
}
"""How each rung is named in the table and the plot."""

MANAGED = ("precision", "channels_last", "compile", "allocator", "omp_num_threads", "omp_proc_bind", "omp_places")
"""Settings the ladder sets itself; ``--set`` may not set them too."""

NEEDED_PARAMS = ("precision", "channels_last", "compile")
"""Workload params a ladder needs (the CPU workloads: resnet50-cpu, numa-ddp)."""


@dataclass(frozen=True)
class Host:
    """What this machine offers the rungs (injectable, so every skip is testable anywhere).

    Attributes:
        isa: the effective ISA (:func:`harness.system.read_isa`).
        cxx: the C++ compiler found, or None.
        allocator: ``jemalloc`` or ``tcmalloc`` when its library is installed, else None.
        cpus: CPUs this process may use.
    """

    isa: IsaInfo
    cxx: str | None
    allocator: str | None
    cpus: int


def find_cxx(environ: Mapping[str, str] | None = None) -> str | None:
    """The C++ compiler inductor would use: ``$CXX`` when it exists, else g++, c++ or clang++ on the PATH."""
    env = os.environ if environ is None else environ
    for name in (env.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return name
    return None


def find_allocator() -> str | None:
    """``jemalloc`` when libjemalloc.so.2 is installed, else ``tcmalloc`` when libtcmalloc.so.4 is, else None."""
    for name in ("jemalloc", "tcmalloc"):
        try:
            allocator_library(name)
        except LaunchError:
            continue
        return name
    return None


def this_host() -> Host:
    """This machine's :class:`Host`."""
    from harness.system import read_isa

    return Host(read_isa(), find_cxx(), find_allocator(), len(os.sched_getaffinity(0)))


def _bf16(host: Host) -> tuple[list[str], str | None]:
    choice = choose_precision("bf16", host.isa)
    if choice.bf16_emulated:
        why = choice.reason.removeprefix("bf16: requested, emulated: ")
        return [], f"bf16 is not native here ({why}): it would be emulated, {EMULATION_COST}"
    return ["precision=bf16"], None


def _compile(host: Host) -> tuple[list[str], str | None]:
    if host.cxx is None:
        return [], (
            "torch.compile (inductor) builds C++ kernels on the CPU and no C++ compiler was found "
            "($CXX, g++, c++, clang++); install one (Debian: apt-get install g++)"
        )
    return ["compile=inductor"], None


def _allocator(host: Host) -> tuple[list[str], str | None]:
    if host.allocator is None:
        return [], (
            "neither jemalloc (libjemalloc.so.2: apt-get install libjemalloc2) nor tcmalloc "
            "(libtcmalloc.so.4: apt-get install libgoogle-perftools4) is installed"
        )
    return [f"allocator={host.allocator}"], None


def _omp(host: Host) -> tuple[list[str], str | None]:
    if host.cpus < 2:
        return [], "a single CPU: there are no OpenMP threads to pin"
    return [f"omp_num_threads={host.cpus}", "omp_proc_bind=close", "omp_places=cores"], None


_ADDS: dict[str, Callable[[Host], tuple[list[str], str | None]]] = {
    "fp32": lambda host: (["precision=fp32", "channels_last=false", "compile=off", "allocator=default"], None),
    "bf16": _bf16,
    "channels_last": lambda host: (["channels_last=true"], None),
    "compile": _compile,
    "allocator": _allocator,
    "omp": _omp,
}


@dataclass
class RungPlan:
    """One rung as it will run here.

    Attributes:
        name: the rung (:data:`RUNGS`); label: its name in the table.
        adds: the settings this rung adds (empty when skipped).
        overrides: every ``--set`` of its config: the user's, then each ran rung's additions.
        skip: why it is skipped, or None when it runs.
        config: the resolved config (None when skipped).
    """

    name: str
    label: str
    adds: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    skip: str | None = None
    config: RunConfig | None = None


def parse_rungs(text: str | None) -> list[str]:
    """The rungs to climb, bottom to top (default: all).

    Raises:
        ConfigError: an unknown or repeated rung, or a list that does not start with fp32
            (the baseline every ratio is taken against).
    """
    if not text:
        return list(RUNGS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in RUNGS]
    if unknown:
        raise ConfigError(f"--rungs: unknown rung(s) {', '.join(unknown)}; rungs: {', '.join(RUNGS)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"--rungs {text!r}: a rung appears twice")
    if not names or names[0] != "fp32":
        raise ConfigError(f"--rungs {text!r}: the ladder starts at fp32, the baseline of every ratio (e.g. fp32,bf16)")
    return sorted(names, key=RUNGS.index)


def plan_ladder(
    workload: str, profile: str | None, overrides: list[str], names: list[str], host: Host
) -> list[RungPlan]:
    """Every rung's plan: skipped with a reason, or its resolved config.

    Raises:
        ConfigError: the workload has no precision/channels_last/compile params, an override
            sets what the ladder sets, or a rung's config is invalid (the message names the rung).
    """
    spec = get_spec(workload)
    fields = registry.get(spec.workload).params_model.model_fields
    missing = [p for p in NEEDED_PARAMS if p not in fields]
    if missing:
        raise ConfigError(
            f"workload {workload} has no {', '.join(missing)} setting, so it has no CPU optimization ladder "
            "(try resnet50-cpu or numa-ddp)"
        )
    clash = [o for o in overrides if o.partition("=")[0].strip().split(".")[-1] in MANAGED]
    if clash:
        raise ConfigError(f"--set {clash[0]}: the ladder sets {', '.join(MANAGED)} itself, rung by rung; drop it")
    plans: list[RungPlan] = []
    ran: dict[str, str] = {}  # key -> "key=value", a later rung's value replacing an earlier one's
    for name in names:
        adds, skip = _ADDS[name](host)
        plan = RungPlan(name, LABELS[name], adds, skip=skip)
        if skip is None:
            ran.update((a.partition("=")[0], a) for a in adds)
            plan.overrides = [*overrides, *ran.values()]
            try:
                plan.config = resolve(workload, profile, plan.overrides)
            except ConfigError as exc:
                raise ConfigError(f"ladder rung {name}: {exc}") from exc
        plans.append(plan)
    return plans
