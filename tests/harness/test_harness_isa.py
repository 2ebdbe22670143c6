"""ISA detection (harness.isa) and the precision decision (harness.precision) for every CPU class.

The fixtures under ``cpuinfo/`` are /proc/cpuinfo as a 2-vCPU guest of each class prints it:
the Zen 4 one is this project's machine, copied; the others carry the flags lines those CPUs
print (shared/ENVIRONMENT.md lists what each class has).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.isa import ARM_FEATURES, X86_FEATURES, detect_isa, parse_cpuinfo
from harness.precision import PRECISIONS, choose_precision
from harness.system import probe_onednn_isa, read_isa

FIXTURES = Path(__file__).parent / "cpuinfo"


def cpuinfo(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


ZEN1 = "zen1-epyc-7551-2vcpu"
ZEN4 = "zen4-epyc-2vcpu"
SPR = "sapphire-rapids-8488c-2vcpu"
GRAVITON2 = "graviton2-neoverse-n1-2vcpu"
GRAVITON3 = "graviton3-neoverse-v1-2vcpu"
GRAVITON4 = "graviton4-neoverse-v2-2vcpu"


def test_parse_cpuinfo_reads_the_first_processor() -> None:
    model, flags = parse_cpuinfo(cpuinfo(ZEN1))
    assert model == "AMD EPYC 7551 32-Core Processor"
    assert {"avx2", "fma", "sha_ni"} <= flags
    assert "avx512f" not in flags
    model, flags = parse_cpuinfo(cpuinfo(GRAVITON3))
    assert model == "implementer 0x41 part 0xd40"
    assert {"bf16", "sve", "i8mm", "svebf16"} <= flags
    assert parse_cpuinfo("") == (None, set())


# (fixture, arch) -> flags present, bf16 native
CLASSES = {
    ZEN1: ("x86_64", {"avx2"}, False),
    ZEN4: ("x86_64", {"avx2", "avx512f", "avx512_bf16", "avx512_vnni"}, True),
    SPR: (
        "x86_64",
        set(X86_FEATURES),
        True,
    ),
    GRAVITON2: ("aarch64", set(), False),
    GRAVITON3: ("aarch64", {"bf16", "sve", "i8mm"}, True),
    GRAVITON4: ("aarch64", {"bf16", "sve", "sve2", "i8mm"}, True),
}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_cpu_class_is_detected(name: str) -> None:
    arch, present, native = CLASSES[name]
    isa = detect_isa(cpuinfo(name), arch, {})
    assert isa.arch == arch
    names = X86_FEATURES if arch == "x86_64" else ARM_FEATURES
    assert isa.features == {f: f in present for f in names}
    assert isa.effective == isa.features  # no caps set
    assert (isa.bf16_native_cpu, isa.bf16_native) == (native, native)
    assert isa.caps == []
    assert isa.source == "/proc/cpuinfo"
    json.dumps(isa.to_dict())


@pytest.mark.parametrize(
    ("name", "chosen", "words"),
    [
        (ZEN1, "fp32", ["no avx512_bf16 or amx_bf16", "avx2", "emulated"]),
        (ZEN4, "bf16", ["avx512_bf16", "natively"]),
        (SPR, "bf16", ["avx512_bf16 and amx_bf16", "natively"]),
        (GRAVITON2, "fp32", ["no bf16", "emulated"]),
        (GRAVITON3, "bf16", ["bf16", "natively"]),
    ],
)
def test_auto_picks_bf16_only_where_native(name: str, chosen: str, words: list[str]) -> None:
    arch = CLASSES[name][0]
    choice = choose_precision("auto", detect_isa(cpuinfo(name), arch, {}))
    assert (choice.requested, choice.chosen, choice.bf16_emulated, choice.warning) == ("auto", chosen, False, None)
    assert choice.bf16_native is (chosen == "bf16")
    for w in words:
        assert w in choice.reason


def test_onednn_cap_to_avx2_on_zen4_makes_bf16_emulated() -> None:
    isa = detect_isa(cpuinfo(ZEN4), "x86_64", {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert isa.features["avx512_bf16"]
    assert isa.effective == {f: f == "avx2" for f in X86_FEATURES}
    assert isa.bf16_native_cpu and not isa.bf16_native
    assert isa.caps == ["ONEDNN_MAX_CPU_ISA=AVX2 hides avx512_bf16, avx512_vnni, avx512f from oneDNN"]
    auto = choose_precision("auto", isa)
    assert auto.chosen == "fp32"
    assert "ONEDNN_MAX_CPU_ISA=AVX2" in auto.reason
    explicit = choose_precision("bf16", isa)
    assert (explicit.chosen, explicit.bf16_native, explicit.bf16_emulated) == ("bf16", False, True)
    assert explicit.warning is not None
    assert "emulated" in explicit.warning
    assert "Fix: --set precision=auto" in explicit.warning


@pytest.mark.parametrize(
    ("env", "native", "amx"),
    [
        ({"ONEDNN_MAX_CPU_ISA": "avx512_core_bf16"}, True, False),  # oneDNN accepts any case
        ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, False, False),
        ({"ONEDNN_MAX_CPU_ISA": "AVX10_1_512_AMX"}, True, True),
        ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX_FP16"}, True, True),
        ({"ONEDNN_MAX_CPU_ISA": "AVX2_VNNI_2"}, False, False),  # bf16 conversions only, no dot products
        ({"ONEDNN_MAX_CPU_ISA": "DEFAULT"}, True, True),
        ({"DNNL_MAX_CPU_ISA": "AVX2"}, False, False),  # the older name still works
        ({"ONEDNN_MAX_CPU_ISA": "DEFAULT", "DNNL_MAX_CPU_ISA": "AVX2"}, True, True),  # ONEDNN_ wins
        ({"ATEN_CPU_CAPABILITY": "avx2"}, False, False),
        ({"ATEN_CPU_CAPABILITY": "avx512"}, True, True),
        ({"ATEN_CPU_CAPABILITY": "default"}, False, False),
    ],
)
def test_caps_on_sapphire_rapids(env: dict[str, str], native: bool, amx: bool) -> None:
    isa = detect_isa(cpuinfo(SPR), "x86_64", env)
    assert isa.bf16_native is native
    assert isa.effective["amx_bf16"] is amx
    assert isa.bf16_native_cpu
    assert choose_precision("auto", isa).chosen == ("bf16" if native else "fp32")


@pytest.mark.parametrize("env", [{"ONEDNN_MAX_CPU_ISA": "AVX3000"}, {"ATEN_CPU_CAPABILITY": "AVX2"}])
def test_unknown_cap_values_are_ignored_and_said_so(env: dict[str, str]) -> None:
    # oneDNN ignores unknown values; ATen compares exact lower-case strings (torch 2.14.1, checked here)
    isa = detect_isa(cpuinfo(ZEN4), "x86_64", env)
    assert isa.bf16_native
    assert len(isa.caps) == 1
    assert "ignored" in isa.caps[0]


def test_aarch64_caps() -> None:
    asimd = detect_isa(cpuinfo(GRAVITON4), "aarch64", {"ONEDNN_MAX_CPU_ISA": "ASIMD"})
    assert not asimd.effective["sve"]
    assert not asimd.effective["sve2"]
    assert asimd.bf16_native  # BFMMLA is Advanced SIMD: bf16 stays
    sve = detect_isa(cpuinfo(GRAVITON4), "aarch64", {"ONEDNN_MAX_CPU_ISA": "SVE_256", "ATEN_CPU_CAPABILITY": "sve256"})
    assert sve.effective == sve.features
    assert sve.caps == []
    default = detect_isa(cpuinfo(GRAVITON3), "arm64", {"ATEN_CPU_CAPABILITY": "default"})
    assert default.arch == "aarch64"
    assert not default.effective["sve"]
    assert default.bf16_native


def test_onednn_probe_line_overrides_flags() -> None:
    isa = detect_isa(cpuinfo(ZEN4), "x86_64", {}, onednn_isa="Intel AVX2")
    assert isa.bf16_native_cpu and not isa.bf16_native
    assert "oneDNN reports 'Intel AVX2'" in isa.caps[0]
    ok = detect_isa(cpuinfo(ZEN4), "x86_64", {}, onednn_isa="Intel AVX-512 with Intel DL Boost and bfloat16 support")
    assert ok.bf16_native
    amx = "Intel AVX10.1/512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 and 8-bit"
    assert detect_isa(cpuinfo(SPR), "x86_64", {}, onednn_isa=amx).bf16_native
    vnni2 = "Intel AVX2 with Intel DL Boost with 8-bit integer, float16 and bfloat16 support"
    assert not detect_isa(cpuinfo(SPR), "x86_64", {}, onednn_isa=vnni2).bf16_native


def test_unreadable_cpuinfo_is_fp32_with_the_reason() -> None:
    isa = detect_isa(None, "x86_64", {})
    assert not any(isa.features.values())
    assert isa.source.startswith("unavailable")
    choice = choose_precision("auto", isa)
    assert choice.chosen == "fp32"
    other = detect_isa("flags : whatever", "riscv64", {})
    assert other.features == {} and not other.bf16_native
    assert "could not be read" in choose_precision("auto", other).reason


def test_explicit_precisions() -> None:
    zen4 = detect_isa(cpuinfo(ZEN4), "x86_64", {})
    assert choose_precision("fp32", zen4).to_dict() == {
        "requested": "fp32",
        "chosen": "fp32",
        "reason": "fp32: requested",
        "bf16_native": True,
        "bf16_emulated": False,
        "warning": None,
    }
    bf16 = choose_precision("bf16", zen4)
    assert (bf16.chosen, bf16.bf16_emulated, bf16.warning) == ("bf16", False, None)
    fp16 = choose_precision("fp16", zen4)
    assert fp16.chosen == "fp16"
    assert fp16.warning is not None and "avx512_fp16" in fp16.warning
    assert choose_precision("fp16", detect_isa(cpuinfo(SPR), "x86_64", {})).warning is None
    zen1 = choose_precision("bf16", detect_isa(cpuinfo(ZEN1), "x86_64", {}))
    assert zen1.bf16_emulated
    assert zen1.warning is not None and "the CPU has no avx512_bf16 or amx_bf16" in zen1.warning


@pytest.mark.parametrize("bad", ["", "BF16", "int8", "float32"])
def test_unknown_precision_is_refused_with_the_valid_values(bad: str) -> None:
    with pytest.raises(ValueError, match="auto, fp32, bf16, fp16"):
        choose_precision(bad, detect_isa(cpuinfo(ZEN4), "x86_64", {}))
    assert PRECISIONS == ("auto", "fp32", "bf16", "fp16")


def test_read_isa_on_this_machine_does_not_import_torch() -> None:
    had_torch = "torch" in sys.modules
    isa = read_isa()
    assert ("torch" in sys.modules) is had_torch
    if isa.arch in ("x86_64", "aarch64"):
        assert isa.source == "/proc/cpuinfo"
        assert isa.features
    if not had_torch:
        assert isa.torch_cpu_capability is None
    assert isa.onednn_isa is None


def test_onednn_probe_reports_the_capped_isa_on_this_machine() -> None:
    """A real torch in a fresh process: ONEDNN_MAX_CPU_ISA=AVX2 makes oneDNN announce AVX2, and bf16 not native."""
    pytest.importorskip("torch")
    if read_isa().arch != "x86_64" or not read_isa().features["avx2"]:
        pytest.skip("needs an x86 CPU with AVX2")
    import os

    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    line = probe_onednn_isa(env=env)
    assert line == "Intel AVX2"
    isa = read_isa(probe_onednn=True, env=env)
    assert isa.onednn_isa == "Intel AVX2"
    assert not isa.bf16_native
    assert choose_precision("auto", isa).chosen == "fp32"
