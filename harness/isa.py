"""The CPU's matrix instruction set, as torch and oneDNN will really use it, and the precision it supports.

Detection is a pure function of ``/proc/cpuinfo``'s text, the machine architecture and the
environment (:func:`detect_isa`), so every CPU class can be tested on any machine;
:func:`harness.system.read_isa` feeds it from this machine. The *effective* ISA is the CPU's flags capped
by the two switches that limit what torch dispatches to:

- ``ONEDNN_MAX_CPU_ISA`` (older name ``DNNL_MAX_CPU_ISA``): oneDNN's CPU dispatcher control,
  which runs convolutions and matmuls (oneDNN developer guide, "CPU Dispatcher Control").
  Values are case-insensitive; an unknown value is ignored by oneDNN (checked with torch 2.14.1).
- ``ATEN_CPU_CAPABILITY``: ATen's own vectorized kernels (``default``, ``avx2``, ``avx512`` on
  x86; ``default``, ``sve128``/``sve256``/``sve512`` on aarch64; exact lower-case, anything
  else is ignored with a warning, as torch 2.14.1's ``DispatchStub`` does). It does not change
  oneDNN, but a run capped this way is treated as capped: the decision errs towards fp32.

bf16 is *native* where the effective ISA has bf16 matrix instructions: ``avx512_bf16`` or
``amx_bf16`` on x86, ``bf16`` (FEAT_BF16, BFMMLA/BFDOT) on aarch64. Elsewhere torch emulates
bf16 through fp32 conversions: measured on a 2-vCPU Zen 1 (AVX2 only), ResNet-50 bf16 +
channels_last ran about 14x slower than fp32 (shared/ENVIRONMENT.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

X86_FEATURES: tuple[str, ...] = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni")
X86_FEATURES += ("amx_tile", "amx_bf16", "amx_int8")
"""Matrix-relevant x86 flags, spelled as Linux prints them in /proc/cpuinfo."""

ARM_FEATURES = ("bf16", "sve", "sve2", "i8mm")
"""Matrix-relevant aarch64 features, spelled as Linux prints them in /proc/cpuinfo."""

_CORE = "avx2 avx512f"
_BF16 = f"{_CORE} avx512_vnni avx512_bf16"
_FP16 = f"{_BF16} avx512_fp16 avx_vnni"
_AMX = f"{_FP16} amx_tile amx_bf16 amx_int8"
_ONEDNN_X86_CAPS = {
    name: frozenset(features.split())
    for name, features in {
        "SSE41": "",
        "AVX": "",
        "AVX2": "avx2",
        "AVX2_VNNI": "avx2 avx_vnni",
        "AVX2_VNNI_2": "avx2 avx_vnni",  # bf16 conversions, no bf16 dot products
        "AVX512_CORE": _CORE,
        "AVX512_CORE_VNNI": f"{_CORE} avx512_vnni",
        "AVX512_CORE_BF16": _BF16,
        "AVX10_1_512": _FP16,
        "AVX512_CORE_FP16": _FP16,
        "AVX10_1_512_AMX": _AMX,
        "AVX512_CORE_AMX": _AMX,
        "AVX10_1_512_AMX_FP16": _AMX,
        "AVX512_CORE_AMX_FP16": _AMX,
    }.items()
}
"""Features each documented ``ONEDNN_MAX_CPU_ISA`` value still lets oneDNN use (``DEFAULT``: all)."""

_ONEDNN_ARM_CAPS = {"ASIMD": frozenset({"bf16", "i8mm"})}
"""On aarch64 oneDNN's SVE_128/256/512 keep SVE; ASIMD drops it (bf16 stays: BFMMLA is Advanced SIMD)."""

_ATEN_X86_CAPS = {"default": frozenset(), "avx2": frozenset({"avx2", "avx_vnni"}), "avx512": frozenset(X86_FEATURES)}
_ATEN_ARM_CAPS = {
    "default": frozenset({"bf16", "i8mm"}),
    **{f"sve{n}": frozenset(ARM_FEATURES) for n in (128, 256, 512)},
}


@dataclass(frozen=True)
class IsaInfo:
    """What the CPU offers for matrix math and what the run may use of it.

    Attributes:
        arch: ``"x86_64"``, ``"aarch64"`` or whatever the machine reports.
        model: CPU model name (x86 ``model name``; aarch64 ``CPU implementer/part``), or None.
        features: the CPU's own matrix-relevant flags for its arch, name -> present
            (:data:`X86_FEATURES` or :data:`ARM_FEATURES`; empty for other arches).
        effective: the same flags after the caps below.
        caps: one sentence per cap that removed a feature, e.g.
            ``"ONEDNN_MAX_CPU_ISA=AVX2 hides avx512f, avx512_bf16"``; or a note that a value was ignored.
        onednn_max_cpu_isa: the value of ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``), or None.
        aten_cpu_capability: the value of ``ATEN_CPU_CAPABILITY``, or None.
        bf16_native_cpu: the CPU itself has bf16 matrix instructions.
        bf16_native: the effective ISA has them (what the precision decision uses).
        torch_cpu_capability: ``torch.backends.cpu.get_cpu_capability()`` when torch was
            already imported (e.g. ``"AVX512"``), else None.
        onednn_isa: oneDNN's own ISA line (e.g. ``"Intel AVX2"``) from :func:`harness.system.probe_onednn_isa`,
            None when not probed.
        source: where the flags came from (``"/proc/cpuinfo"``) or why there are none.
    """

    arch: str
    model: str | None
    features: dict[str, bool]
    effective: dict[str, bool]
    caps: list[str]
    onednn_max_cpu_isa: str | None
    aten_cpu_capability: str | None
    bf16_native_cpu: bool
    bf16_native: bool
    torch_cpu_capability: str | None = None
    onednn_isa: str | None = None
    source: str = "/proc/cpuinfo"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def parse_cpuinfo(text: str) -> tuple[str | None, set[str]]:
    """The first processor's model and flags from ``/proc/cpuinfo`` text.

    x86 prints ``flags`` and ``model name``; aarch64 prints ``Features`` and ``CPU implementer``/
    ``CPU part`` (no model name). Returns ``(model or None, set of lower-case flags)``.
    """
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    flags = set((fields.get("flags") or fields.get("features") or "").lower().split())
    model = fields.get("model name")
    if model is None and "cpu implementer" in fields:
        model = f"implementer {fields['cpu implementer']} part {fields.get('cpu part', '?')}"
    return model or None, flags


def _arch(machine: str) -> str:
    m = machine.lower()
    if m in ("x86_64", "amd64", "x64"):
        return "x86_64"
    if m in ("aarch64", "arm64", "armv8l"):
        return "aarch64"
    return m


ONEDNN_CAP_VARS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")
"""The environment variables oneDNN reads its ISA cap from, in its order (``ONEDNN_`` first)."""


def _onednn_cap(env: Mapping[str, str]) -> str | None:
    for name in ONEDNN_CAP_VARS:
        if env.get(name):
            return env[name]
    return None


def _apply_caps(
    arch: str, flags: dict[str, bool], onednn: str | None, aten: str | None
) -> tuple[dict[str, bool], list[str]]:
    x86 = arch == "x86_64"
    allowed: set[str] = set(flags)
    notes: list[str] = []
    if onednn is not None:
        key = onednn.strip().upper()
        table = _ONEDNN_X86_CAPS if x86 else _ONEDNN_ARM_CAPS
        if key == "DEFAULT" or (not x86 and key.startswith("SVE_")):
            pass
        elif key in table:
            hidden = sorted(f for f in flags if flags[f] and f not in table[key])
            allowed &= table[key]
            if hidden:
                notes.append(f"ONEDNN_MAX_CPU_ISA={onednn} hides {', '.join(hidden)} from oneDNN")
        else:
            notes.append(f"ONEDNN_MAX_CPU_ISA={onednn} is not a value oneDNN knows; it is ignored")
    if aten is not None:
        table = _ATEN_X86_CAPS if x86 else _ATEN_ARM_CAPS
        if aten in table:
            hidden = sorted(f for f in flags if flags[f] and f not in table[aten])
            allowed &= table[aten]
            if hidden:
                notes.append(f"ATEN_CPU_CAPABILITY={aten} hides {', '.join(hidden)} from ATen")
        else:
            notes.append(f"ATEN_CPU_CAPABILITY={aten} is not a value ATen knows; it is ignored")
    return {f: present and f in allowed for f, present in flags.items()}, notes


def _bf16(arch: str, flags: dict[str, bool]) -> bool:
    if arch == "x86_64":
        return flags.get("avx512_bf16", False) or flags.get("amx_bf16", False)
    return flags.get("bf16", False)


def _onednn_says_bf16(line: str) -> bool:
    """oneDNN's ISA line names bf16 matrix support (AVX-512/AVX10/AMX with bfloat16; aarch64 lines pass)."""
    lowered = line.lower()
    if "intel" not in lowered:
        return True
    return "bfloat16" in lowered and ("avx-512" in lowered or "avx10" in lowered or "amx" in lowered)


def detect_isa(
    cpuinfo: str | None,
    machine: str,
    env: Mapping[str, str],
    *,
    torch_cpu_capability: str | None = None,
    onednn_isa: str | None = None,
) -> IsaInfo:
    """The ISA record of a CPU, from its ``/proc/cpuinfo`` text (pure: no I/O).

    Args:
        cpuinfo: the text of ``/proc/cpuinfo``, or None where it could not be read.
        machine: ``platform.machine()`` (``"x86_64"``, ``"aarch64"``, ``"arm64"``...).
        env: environment variables (only the two caps are read).
        torch_cpu_capability: what torch reports, recorded as is.
        onednn_isa: oneDNN's ISA line; when given and it names no bf16 matrix support,
            bf16 is not native whatever the flags say (oneDNN is what runs the math).
    """
    arch = _arch(machine)
    names = X86_FEATURES if arch == "x86_64" else ARM_FEATURES if arch == "aarch64" else ()
    model, flags = parse_cpuinfo(cpuinfo or "")
    features = {f: f in flags for f in names}
    onednn_cap = _onednn_cap(env)
    aten_cap = env.get("ATEN_CPU_CAPABILITY") or None
    effective, caps = _apply_caps(arch, features, onednn_cap, aten_cap)
    native = _bf16(arch, effective)
    if onednn_isa is not None and native and not _onednn_says_bf16(onednn_isa):
        native = False
        caps.append(f"oneDNN reports {onednn_isa!r}, without bf16 matrix support")
    if cpuinfo is None:
        source = "unavailable: /proc/cpuinfo could not be read"
    elif not names:
        source = f"/proc/cpuinfo (no matrix features are tracked for arch {arch!r})"
    else:
        source = "/proc/cpuinfo"
    return IsaInfo(
        arch=arch,
        model=model,
        features=features,
        effective=effective,
        caps=caps,
        onednn_max_cpu_isa=onednn_cap,
        aten_cpu_capability=aten_cap,
        bf16_native_cpu=_bf16(arch, features),
        bf16_native=native,
        torch_cpu_capability=torch_cpu_capability,
        onednn_isa=onednn_isa,
        source=source,
    )
