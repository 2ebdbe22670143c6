"""Short words for a CPU's matrix ISA as a result recorded it (``environment["isa"]``, the
:class:`harness.isa.IsaInfo` record; results written before it fall back to the CPU flags):
the features, the caps that hid some, the ISA torch dispatches to, and a few-word summary.
Part of :mod:`suite.labels`, which re-exports them.
"""

from __future__ import annotations

from typing import Any

from harness.isa import ARM_FEATURES, X86_FEATURES

MATRIX_FEATURES: tuple[str, ...] = (*X86_FEATURES, *ARM_FEATURES)
"""CPU features that decide matrix throughput (issue 13's list: x86, then aarch64)."""


def isa_features(env: dict[str, Any], effective: bool = True) -> list[str]:
    """Matrix-relevant CPU features: the ISA record's (``effective``: after the caps; else the CPU's
    own), else the recorded CPU flags."""
    isa = env.get("isa")
    found: list[str] = []
    if isinstance(isa, dict):
        flags = isa.get("effective" if effective else "features")
        if not isinstance(flags, dict):
            flags = isa.get("features")
        if isinstance(flags, dict):
            found = [str(k) for k, v in flags.items() if v is True]
        elif isinstance(flags, list):
            found = [str(f) for f in flags]
    if not found:
        flags = (env.get("cpu") or {}).get("flags") or []
        found = [f for f in MATRIX_FEATURES if isinstance(flags, list) and f in flags]
    return [f for f in MATRIX_FEATURES if f in found] + sorted(f for f in set(found) - set(MATRIX_FEATURES))


def isa_caps(env: dict[str, Any]) -> list[str]:
    """What capped the ISA (``ONEDNN_MAX_CPU_ISA=AVX2 hides avx512f, ... from oneDNN``), as recorded."""
    isa = env.get("isa")
    caps = isa.get("caps") if isinstance(isa, dict) else None
    return [str(c) for c in caps] if isinstance(caps, list) else []


_VECTOR = (("avx512f", "AVX512"), ("avx2", "AVX2"), ("sve2", "SVE2"), ("sve", "SVE"))
_ISA_WORDS = (
    ("amx_bf16", "AMX-BF16"),
    ("amx_int8", "AMX-INT8"),
    ("avx512_bf16", "BF16"),
    ("bf16", "BF16"),
    ("avx512_fp16", "FP16"),
    ("avx512_vnni", "VNNI"),
    ("avx_vnni", "VNNI"),
    ("i8mm", "I8MM"),
)


def isa_summary(env: dict[str, Any], effective: bool = True) -> str | None:
    """The matrix ISA in a few words: the widest vector ISA, then the matrix extensions.

    E.g. ``AVX2`` (Zen 1: bf16 emulated), ``AVX512 BF16 VNNI`` (Zen 4),
    ``AVX512 AMX-BF16 AMX-INT8 BF16 FP16 VNNI`` (Sapphire Rapids), ``SVE BF16 I8MM``
    (Graviton 3). ``effective``: what the run may use after ``ONEDNN_MAX_CPU_ISA`` /
    ``ATEN_CPU_CAPABILITY``. None when nothing is recorded.
    """
    found = set(isa_features(env, effective))
    vector = next((name for flag, name in _VECTOR if flag in found), None)
    extras = list(dict.fromkeys(name for flag, name in _ISA_WORDS if flag in found))
    words = ([vector] if vector else []) + extras
    return " ".join(words) or None


def torch_capability(env: dict[str, Any]) -> str | None:
    """The ISA torch dispatches to (``AVX512``, ``AVX2``, ...), as recorded."""
    isa = env.get("isa")
    if isinstance(isa, dict):
        for key in ("torch_cpu_capability", "torch_capability", "cpu_capability"):
            if isinstance(isa.get(key), str):
                return str(isa[key])
    cap = (env.get("torch") or {}).get("cpu_capability")
    return str(cap) if cap else None
