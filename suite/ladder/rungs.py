"""A workload's optimization ladder, and its rungs as they will run on this machine.

Each workload with a ladder has one (:data:`LADDERS`): the CPU ladder
(:mod:`suite.ladder.cpu_rungs`) or the GPU ladder (:mod:`suite.ladder.gpu_rungs`). The rungs
are cumulative: each adds its settings to those of the rungs below it that ran. A rung that
cannot help here is skipped with the reason, never run. Every rung also runs the
loss-trajectory pass (``trajectory_steps``, :mod:`suite.ladder.numerics`), at one batch of
distinct samples that divides every batch size the ladder runs.

Every rung's config is resolved before anything runs, so a bad ``--set`` fails first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from suite.config import RunConfig
from suite.ladder.cpu_rungs import CPU
from suite.ladder.gpu_rungs import GPU
from suite.ladder.host import Context, Host, Ladder, find_allocator, find_cc, find_cxx, this_host
from suite.specs import ConfigError, get_spec, resolve
from workloads import registry

__all__ = [
    "LADDERS",
    "RUNGS",
    "Host",
    "Ladder",
    "RungPlan",
    "find_allocator",
    "find_cc",
    "find_cxx",
    "ladder_for",
    "parse_rungs",
    "plan_ladder",
    "this_host",
]

LADDERS: dict[str, Ladder] = {"resnet50-cpu": CPU, "numa-ddp": CPU, "resnet50-gpu-horovod": GPU}
"""Each registered workload's ladder (by its registry name)."""

RUNGS = CPU.rungs
"""The CPU ladder's rungs, bottom to top."""

NEEDED_PARAMS = ("precision", "channels_last", "compile", "trajectory_steps")
"""Workload params every ladder needs."""

TRAJECTORY_SETTINGS = ("trajectory_steps", "trajectory_batch")
"""Settings of the loss-trajectory pass, which the ladder sets on every rung."""


@dataclass
class RungPlan:
    """One rung as it will run here.

    Attributes:
        name: the rung (``batch-512`` for a size of the batch-size search); label: its name in the table.
        adds: the settings this rung adds (empty when skipped).
        overrides: every ``--set`` of its config: the user's, the trajectory's, then each ran rung's additions.
        skip: why it is skipped, or None when it runs.
        config: the resolved config (None when skipped).
        family: ``batch`` for a size of the batch-size search, else the rung's name.
    """

    name: str
    label: str
    adds: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    skip: str | None = None
    config: RunConfig | None = None
    family: str = ""


def ladder_for(workload: str) -> Ladder:
    """The ladder of the workload spec ``workload``.

    Raises:
        ConfigError: an unknown spec, or a workload without a ladder.
    """
    spec = get_spec(workload)
    fields = registry.get(spec.workload).params_model.model_fields
    missing = [p for p in NEEDED_PARAMS[:3] if p not in fields]
    if missing or spec.workload not in LADDERS:
        why = f"has no {', '.join(missing)} setting, so it " if missing else ""
        raise ConfigError(
            f"workload {workload} {why}has no optimization ladder (try resnet50-cpu, numa-ddp or resnet50-gpu-horovod)"
        )
    return LADDERS[spec.workload]


def parse_rungs(text: str | None, ladder: Ladder = CPU) -> list[str]:
    """The rungs of ``ladder`` to climb, bottom to top (default: all).

    Raises:
        ConfigError: an unknown or repeated rung, or a list that does not start with fp32
            (the baseline every ratio is taken against).
    """
    if not text:
        return list(ladder.rungs)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ladder.rungs]
    if unknown:
        raise ConfigError(f"--rungs: unknown rung(s) {', '.join(unknown)}; rungs: {', '.join(ladder.rungs)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"--rungs {text!r}: a rung appears twice")
    if not names or names[0] != ladder.rungs[0]:
        raise ConfigError(f"--rungs {text!r}: the ladder starts at fp32, the baseline of every ratio (e.g. fp32,bf16)")
    return sorted(names, key=ladder.rungs.index)


def _device(config: RunConfig, host: Host) -> str:
    device = str(config.params.get("device", "cpu"))
    return ("cuda" if host.gpus else "cpu") if device == "auto" else device


def _search(ladder: Ladder, names: list[str], base: int, device: str, sizes: list[int] | None) -> list[int]:
    """The batch-size search's sizes (none without the ``batch`` rung).

    Raises:
        ConfigError: sizes without the batch rung, a size below 1, or no common divisor of 2 or more.
    """
    if "batch" not in names or ladder.batch_sizes is None:
        if sizes:
            raise ConfigError("--batch-sizes needs the batch rung (the GPU ladder's batch-size search)")
        return []
    chosen = sorted(set(sizes)) if sizes else ladder.batch_sizes(base, device)
    chosen = [b for b in chosen if b != base]
    if min(chosen, default=1) < 1:
        raise ConfigError(f"--batch-sizes: batch sizes are at least 1, got {min(chosen)}")
    if math.gcd(base, *chosen) < 2:
        raise ConfigError(
            f"--batch-sizes {','.join(map(str, chosen))} with batch_size={base}: the loss trajectory trains one set "
            "of samples at every batch size, so they need a common divisor of at least 2 (e.g. even sizes)"
        )
    return chosen


def plan_ladder(
    workload: str,
    profile: str | None,
    overrides: list[str],
    names: list[str],
    host: Host,
    batch_sizes: list[int] | None = None,
    trajectory_steps: int | None = None,
) -> list[RungPlan]:
    """Every rung's plan: skipped with a reason, or its resolved config.

    Args:
        batch_sizes: the batch-size search's sizes (default: the ladder's).
        trajectory_steps: steps of every rung's loss-trajectory pass (default:
            :data:`suite.ladder.numerics.TRAJECTORY_STEPS`).

    Raises:
        ConfigError: the workload has no ladder, an override sets what the ladder sets, the
            batch sizes share no divisor of 2 or more, the trajectory would have fewer distinct
            samples than the ladder needs, or a rung's config is invalid (the message names the rung).
    """
    from suite.ladder.numerics import TRAJECTORY_STEPS

    ladder = ladder_for(workload)
    managed = (*ladder.managed, *TRAJECTORY_SETTINGS)
    clash = [o for o in overrides if o.partition("=")[0].strip().split(".")[-1] in managed]
    if clash:
        raise ConfigError(f"--set {clash[0]}: the ladder sets {', '.join(managed)} itself, rung by rung; drop it")
    try:
        base = resolve(workload, profile, overrides)
    except ConfigError as exc:
        raise ConfigError(f"ladder rung {names[0]}: {exc}") from exc
    batch = int(base.params.get("batch_size", 1))
    device = _device(base, host)
    sizes = _search(ladder, names, batch, device, batch_sizes)
    steps = TRAJECTORY_STEPS if trajectory_steps is None else trajectory_steps
    distinct = math.gcd(batch, *sizes)
    if steps and distinct < ladder.min_trajectory_samples:
        raise ConfigError(
            f"the loss trajectory would train on {distinct} distinct samples (batch_size={batch}"
            + (f" and the search's {','.join(map(str, sizes))}" if sizes else "")
            + f"); this ladder needs at least {ladder.min_trajectory_samples}, as with fewer honest rungs "
            f"deviated beyond the tolerance (suite/ladder/numerics.py). Fix: --set batch_size="
            f"{ladder.min_trajectory_samples} or more" + (", and --batch-sizes that it divides" if sizes else "")
        )
    fixed = [f"trajectory_steps={steps}"] + ([f"trajectory_batch={distinct}"] if sizes else [])
    plans: list[RungPlan] = []
    ran: dict[str, str] = {}  # key -> "key=value", a later rung's value replacing an earlier one's
    for name in names:
        steps_up: list[tuple[str, str, list[str], str | None]]
        if name == "batch":
            steps_up = [(f"batch-{b}", f"+ batch {b}", [f"batch_size={b}"], None) for b in sizes]
        else:
            adds, skip = ladder.adds[name](Context(host, device, dict(ran)))
            steps_up = [(name, ladder.labels[name], adds, skip)]
        for rung, label, adds, skip in steps_up:
            plan = RungPlan(rung, label, adds, skip=skip, family=name)
            if skip is None:
                settings = {**ran, **{a.partition("=")[0]: a for a in adds}}
                if name != "batch":
                    ran = settings
                plan.overrides = [*overrides, *fixed, *settings.values()]
                try:
                    plan.config = resolve(workload, profile, plan.overrides)
                except ConfigError as exc:
                    raise ConfigError(f"ladder rung {rung}: {exc}") from exc
            plans.append(plan)
    return plans
