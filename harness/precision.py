"""``precision=auto``: bf16 where the effective ISA runs it natively, fp32 otherwise.

A pure decision over :class:`harness.isa.IsaInfo`, so the run header, the result and the
tests all see the same choice and the same reason. An explicit ``bf16`` on a CPU without
native bf16 still runs (a user may want to see the emulation), but is marked
``bf16_emulated`` and carries a warning with the fix: a result that measures the emulation
must never pass for the machine's throughput.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from harness.isa import ONEDNN_CAP_VARS, IsaInfo, detect_isa

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
"""Values ``choose_precision`` accepts."""

EMULATION_COST = "about 14x slower than fp32 for ResNet-50 on an AVX2-only Zen 1"
"""Measured on a 2-vCPU Zen 1, batch 16: fp32 1.86 vs bf16 + channels_last 0.13 samples/s (shared/ENVIRONMENT.md)."""


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision a run uses and why.

    Attributes:
        requested: what the config asked for (``auto``, ``fp32``, ``bf16`` or ``fp16``).
        chosen: what runs (``fp32``, ``bf16`` or ``fp16``; never ``auto``).
        reason: one sentence a user understands, naming the flags or caps that decided it.
        bf16_native: the effective ISA has bf16 matrix instructions.
        bf16_emulated: bf16 runs without them (an explicit ``bf16`` on such a CPU).
        warning: what to print before the first step when the choice will measure an
            emulation (with the fix), else None.
    """

    requested: str
    chosen: str
    reason: str
    bf16_native: bool
    bf16_emulated: bool
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _have(isa: IsaInfo) -> str:
    """The bf16-relevant flags the CPU has, and what capped them, in words."""
    names = ("avx512_bf16", "amx_bf16") if isa.arch == "x86_64" else ("bf16",)
    own = [n for n in names if isa.features.get(n)]
    if isa.bf16_native:
        return f"the CPU has {' and '.join(n for n in own if isa.effective.get(n))}"
    if own:
        capped = "; ".join(isa.caps) if isa.caps else "a cap"
        return f"the CPU has {' and '.join(own)}, but {capped}"
    if not isa.features:
        return f"the CPU's flags could not be read ({isa.source})"
    best = [n for n in ("amx_tile", "avx512f", "avx2", "sve", "i8mm") if isa.effective.get(n)]
    has = f" (it has {', '.join(best)})" if best else ""
    want = "avx512_bf16 or amx_bf16" if isa.arch == "x86_64" else "bf16"
    return f"the CPU has no {want}{has}"


def choose_precision(requested: str, isa: IsaInfo) -> PrecisionChoice:
    """Decide the training precision of a CPU run.

    ``auto`` picks bf16 where the effective ISA has native bf16 matrix instructions (x86:
    ``avx512_bf16`` or ``amx_bf16`` after the caps; aarch64: ``bf16``), fp32 otherwise. An
    explicit precision is kept; ``bf16`` without native support is marked emulated and
    warned about; ``fp16`` on an x86 CPU without ``avx512_fp16`` gets a warning too.

    Args:
        requested: ``auto``, ``fp32``, ``bf16`` or ``fp16``.
        isa: the machine's ISA record (:func:`harness.isa.read_isa`).

    Raises:
        ValueError: ``requested`` is not one of :data:`PRECISIONS` (the message lists them).
    """
    if requested not in PRECISIONS:
        raise ValueError(f"precision {requested!r} is not one of {', '.join(PRECISIONS)}; set precision=auto")
    native = isa.bf16_native
    why = _have(isa)
    if requested == "auto":
        if native:
            return PrecisionChoice("auto", "bf16", f"bf16: {why}, so bf16 runs natively", True, False)
        return PrecisionChoice(
            "auto", "fp32", f"fp32: {why}, so bf16 would be emulated, {EMULATION_COST}", False, False
        )
    if requested == "fp32":
        return PrecisionChoice("fp32", "fp32", "fp32: requested", native, False)
    if requested == "bf16":
        if native:
            return PrecisionChoice("bf16", "bf16", f"bf16: requested; {why}", True, False)
        emulated = (
            f"precision=bf16 without native bf16 matrix instructions: {why}. bf16 is emulated, "
            f"{EMULATION_COST}, so this run measures the emulation, not the machine. "
            "Fix: --set precision=auto (or fp32)"
        )
        return PrecisionChoice("bf16", "bf16", f"bf16: requested, emulated: {why}", False, True, emulated)
    warning = None
    if isa.arch == "x86_64" and not isa.effective.get("avx512_fp16"):
        warning = (
            "precision=fp16 on a CPU without native fp16 matrix instructions (avx512_fp16): fp16 is "
            "emulated and slow on CPU. Fix: --set precision=auto"
        )
    return PrecisionChoice("fp16", "fp16", "fp16: requested", native, False, warning)


def _recorded_flags(isa: Mapping[str, Any]) -> list[str] | None:
    """The CPU's own flags in an ISA record (``features``: name -> bool, or a list of names), else None."""
    features = isa.get("features")
    if isinstance(features, Mapping):
        return [str(k) for k, v in features.items() if v is True]
    if isinstance(features, list):
        return [str(f) for f in features]
    return None


def isa_from_record(environment: Mapping[str, Any]) -> IsaInfo | None:
    """The ISA a result recorded, rebuilt from what decides it: the CPU's own flags and the caps.

    The inverse of :func:`harness.system.capture_system`'s ``isa`` (pure: reads only ``environment``,
    never this host). From the ISA record it takes ``features`` (name -> bool, or a list of names),
    ``arch``, ``model``, the caps ``onednn_max_cpu_isa`` and ``aten_cpu_capability``, ``onednn_isa`` and
    ``torch_cpu_capability``, and recomputes ``effective``, ``caps``, ``bf16_native_cpu`` and
    ``bf16_native`` by :func:`harness.isa.detect_isa`: the stored ones follow from these, so a record
    whose stored values disagree with them is inconsistent, and the stored ones are never trusted.
    Results written before the ISA record give ``environment["cpu"]["flags"]`` and ``arch`` instead,
    capped by the ``ONEDNN_MAX_CPU_ISA``/``DNNL_MAX_CPU_ISA`` their ``env`` recorded.

    Args:
        environment: a result's ``environment`` (what the rank read back about its host).

    Returns:
        The rebuilt record, or None when the result recorded neither an ISA record nor CPU flags.
    """
    isa = environment.get("isa")
    cpu = environment.get("cpu")
    env = environment.get("env")
    caps: dict[str, str] = {}
    if isinstance(isa, Mapping) and (flags := _recorded_flags(isa)) is not None:
        machine = str(isa.get("arch") or "x86_64")
        model = isa.get("model")
        for key, name in (("onednn_max_cpu_isa", "ONEDNN_MAX_CPU_ISA"), ("aten_cpu_capability", "ATEN_CPU_CAPABILITY")):
            if isinstance(isa.get(key), str) and isa[key]:
                caps[name] = str(isa[key])
        probe = isa.get("onednn_isa") if isinstance(isa.get("onednn_isa"), str) else None
        torch_cap = isa.get("torch_cpu_capability") if isinstance(isa.get("torch_cpu_capability"), str) else None
    elif isinstance(cpu, Mapping) and isinstance(cpu.get("flags"), list) and cpu["flags"]:
        flags = [str(f) for f in cpu["flags"]]
        arch = str(cpu.get("arch") or "x86_64").lower()  # py-cpuinfo spells it X86_64, ARM_8
        machine = "aarch64" if arch.startswith(("arm", "aarch64")) else arch
        model, probe, torch_cap = cpu.get("model"), None, None
        if isinstance(env, Mapping):
            caps.update({k: str(env[k]) for k in (*ONEDNN_CAP_VARS, "ATEN_CPU_CAPABILITY") if env.get(k)})
    else:
        return None
    text = "flags\t: " + " ".join(flags) + (f"\nmodel name\t: {model}" if isinstance(model, str) and model else "")
    return detect_isa(text, machine, caps, torch_cpu_capability=torch_cap, onednn_isa=probe)


def recorded_choice(requested: str, environment: Mapping[str, Any]) -> PrecisionChoice | None:
    """What :func:`choose_precision` decides for ``requested`` on the hardware a result recorded
    (:func:`isa_from_record`), or None when it recorded none.

    Raises:
        ValueError: ``requested`` is not one of :data:`PRECISIONS`.
    """
    isa = isa_from_record(environment)
    return None if isa is None else choose_precision(requested, isa)


def recorded_bf16_emulated(precision: str | None, environment: Mapping[str, Any]) -> bool | None:
    """Whether bf16 ran emulated on the hardware a result recorded: the one rule, from the recorded
    features and caps (:func:`isa_from_record`), never from a stored flag.

    Args:
        precision: what the run computed in (``bf16``, ``fp32``...; never ``auto``).
        environment: the result's ``environment``.

    Returns:
        None when ``precision`` is not ``bf16`` or nothing was recorded to judge by; else True
        where the effective ISA has no bf16 matrix instructions.
    """
    if precision != "bf16":
        return None
    isa = isa_from_record(environment)
    return None if isa is None else not isa.bf16_native
