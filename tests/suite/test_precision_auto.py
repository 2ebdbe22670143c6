"""precision=auto across the suite: the rank's decision, the recorded hardware's, the closed division and the words.

The decision itself (harness.precision) is tested per CPU class in tests/harness/test_harness_isa.py.
Here the same /proc/cpuinfo fixtures (AVX2-only Zen 1, avx512_bf16 Zen 4, AMX Sapphire Rapids,
aarch64 Graviton 3) feed what the suite builds on it, on any machine; the run through the CLI
with the ISA capped to AVX2 on this avx512_bf16 machine is in test_precision_real_runs.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.isa import detect_isa
from harness.precision import choose_precision
from suite.rules import auto_precision, closed_deviations, division_for, load_rules
from suite.run.header import header_lines, isa_text, precision_text
from suite.specs import resolve
from workloads.cpu_precision import resolve_params
from workloads.resnet50_cpu.params import ResNet50CPUParams

FIXTURES = Path(__file__).resolve().parent.parent / "harness" / "cpuinfo"
KINDS = {  # fixture -> (machine, what auto chooses there, matrix ISA words)
    "zen1-epyc-7551-2vcpu": ("x86_64", "fp32", "AVX2"),
    "zen4-epyc-2vcpu": ("x86_64", "bf16", "AVX512 BF16 VNNI"),
    "sapphire-rapids-8488c-2vcpu": ("x86_64", "bf16", "AVX512 AMX-BF16 AMX-INT8 BF16 FP16 VNNI"),
    "graviton3-neoverse-v1-2vcpu": ("aarch64", "bf16", "SVE BF16 I8MM"),
}


def _isa(name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    machine = KINDS[name][0]
    return detect_isa((FIXTURES / f"{name}.txt").read_text(), machine, env or {}).to_dict()


def _old_environment(name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What a result written before the ISA record holds: py-cpuinfo's arch and flags, and the env vars."""
    machine = KINDS[name][0]
    flags = [*sorted(k for k, v in _isa(name)["features"].items() if v), "fma", "sse4_2"]
    return {"cpu": {"arch": "X86_64" if machine == "x86_64" else "ARM_8", "flags": flags}, "env": env or {}}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_auto_precision_of_recorded_hardware_for_every_cpu_kind(name: str) -> None:
    chosen = KINDS[name][1]
    assert auto_precision({"isa": _isa(name)}) == chosen  # the ISA record
    assert auto_precision(_old_environment(name)) == chosen  # older results: the CPU flags
    assert auto_precision({}) is None


def test_recorded_caps_count_for_the_hardware_decision() -> None:
    capped = {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert auto_precision({"isa": _isa("zen4-epyc-2vcpu", capped)}) == "fp32"
    assert auto_precision(_old_environment("zen4-epyc-2vcpu", capped)) == "fp32"
    assert auto_precision(_old_environment("sapphire-rapids-8488c-2vcpu", {"ATEN_CPU_CAPABILITY": "avx2"})) == "fp32"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_closed_division_takes_auto_or_exactly_its_choice(name: str) -> None:
    rules = load_rules()
    env = {"isa": _isa(name)}
    chosen = KINDS[name][1]
    other = "fp32" if chosen == "bf16" else "bf16"
    official = resolve("resnet50-cpu", "official")
    assert official.params["precision"] == "auto"
    assert division_for(official, rules, environment=env) == "closed"
    as_chosen = resolve("resnet50-cpu", "official", [f"precision={chosen}"])
    assert division_for(as_chosen, rules, environment=env) == "closed"
    [dev] = closed_deviations(resolve("resnet50-cpu", "official", [f"precision={other}"]), rules, environment=env)
    assert (dev.key, dev.official, dev.actual) == ("params.precision", "auto", other)


def test_an_emulated_bf16_run_is_never_closed() -> None:
    rules = load_rules()
    bf16 = resolve("resnet50-cpu", "official", ["precision=bf16"])
    zen1 = {"isa": _isa("zen1-epyc-7551-2vcpu")}
    assert [d.key for d in closed_deviations(bf16, rules, environment=zen1, bf16_emulated=True)] == [
        "params.precision",
        "bf16_emulated",
    ]
    # even where only the flag is known (a caller without the environment)
    assert division_for(bf16, rules, bf16_emulated=True) == "open"
    # without the hardware, an explicit precision auto can choose is not judged (the validator should pass it)
    assert division_for(bf16, rules) == "closed"


def test_the_rank_decides_on_its_host_with_its_caps() -> None:
    params = ResNet50CPUParams()
    assert params.precision == "auto"
    capped, choice = resolve_params(params, {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"})
    assert choice is not None and choice.requested == "auto"
    assert capped.precision == "fp32" == choice.chosen  # on every x86 machine: AVX2 has no bf16
    assert "bf16 would be emulated" in choice.reason
    explicit, choice = resolve_params(ResNet50CPUParams(precision="bf16"), {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    assert explicit.precision == "bf16"
    assert (
        choice is not None and choice.bf16_emulated and choice.warning and "Fix: --set precision=auto" in choice.warning
    )
    fp32, choice = resolve_params(ResNet50CPUParams(precision="fp32"))
    assert fp32.precision == "fp32" and choice is not None and not choice.bf16_emulated


def test_header_words_name_the_effective_isa_the_caps_and_the_decision() -> None:
    zen4_capped = _isa("zen4-epyc-2vcpu", {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    text = isa_text(zen4_capped)
    assert text.startswith("AVX2 (the CPU has AVX512 BF16 VNNI; ONEDNN_MAX_CPU_ISA=AVX2 hides")
    assert text.endswith("bf16 emulated")
    for name, (_, chosen, words) in KINDS.items():
        isa = _isa(name)
        assert isa_text(isa).startswith(words)
        choice = choose_precision("auto", detect_isa((FIXTURES / f"{name}.txt").read_text(), KINDS[name][0], {}))
        assert precision_text(choice.to_dict()).startswith(f"{chosen} (requested auto): {chosen}: ")
        lines = header_lines({"cpu_model": "m", "logical_cores": 2, "isa": isa, "precision": choice.to_dict()})
        assert [line.split(":")[0] for line in lines] == ["CPU", "matrix ISA", "precision"]
    emulated = choose_precision("bf16", detect_isa("flags\t: avx2", "x86_64", {}))
    assert "EMULATED" in precision_text(emulated.to_dict())


def test_labels_and_mlflow_tags_read_the_recorded_isa_and_decision() -> None:
    from suite import labels
    from suite.results import seal
    from suite.tracking.page import tags
    from tests.compare import synth

    isa = _isa("zen4-epyc-2vcpu", {"ONEDNN_MAX_CPU_ISA": "AVX2"})
    isa["torch_cpu_capability"] = "AVX2"
    choice = choose_precision("bf16", detect_isa((FIXTURES / "zen4-epyc-2vcpu.txt").read_text(), "x86_64", {}))
    base = synth.result([synth.jittered(0.5, 4, 1)], environment={"isa": isa}, workload_info={"precision": {}})
    emulated = {**choice.to_dict(), "bf16_native": False, "bf16_emulated": True}
    result = seal({**base.model_dump(), "workload_info": {"precision": emulated}, "bf16_emulated": True})
    assert labels.precision(result) == "bf16" and labels.bf16_emulated(result) is True
    assert labels.isa_summary(result.environment) == "AVX2"  # effective, not the CPU's own AVX512 BF16 VNNI
    assert labels.isa_summary(result.environment, effective=False) == "AVX512 BF16 VNNI"
    t = tags(result)
    assert t["trainbench.isa"] == "AVX2" and t["trainbench.torch_cpu_capability"] == "AVX2"
    assert t["trainbench.isa_caps"].startswith("ONEDNN_MAX_CPU_ISA=AVX2 hides avx512_bf16")
    assert t["trainbench.bf16_emulated"] == "true" and t["trainbench.precision"].startswith("bf16 (requested bf16)")
    assert labels.name(result).startswith("resnet50-cpu bf16 bs2")


def test_an_auto_result_without_a_recorded_decision_is_labelled_by_its_recorded_hardware() -> None:
    """A result whose config says auto but whose rank recorded no decision: its labels name what auto
    chooses on the hardware it recorded (the closed division's rule), or nothing, never 'auto'."""
    import io

    from rich.console import Console

    from suite import labels
    from suite.run.summary import summary_table
    from tests.compare import synth

    steps = [synth.jittered(0.5, 4, 1)]
    zen4 = synth.result(steps)  # the quick profile: precision auto; a Zen 4's flags
    zen1 = synth.result(steps, flags=_old_environment("zen1-epyc-7551-2vcpu")["cpu"]["flags"])
    unknown = synth.result(steps, environment={"cpu": {"model": "no flags recorded", "logical_cores": 2}})
    for r in (zen4, zen1, unknown):
        assert r.config.params["precision"] == "auto" and labels.precision_choice(r) is None
    assert labels.precision(zen4) == "bf16" and labels.bf16_emulated(zen4) is False
    assert labels.precision(zen1) == "fp32" and labels.bf16_emulated(zen1) is None
    assert labels.precision(unknown) is None
    assert labels.name(zen4).startswith("resnet50-cpu bf16 bs2") and labels.name(zen1).startswith("resnet50-cpu fp32")
    assert labels.name(unknown).startswith("resnet50-cpu bs2")
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(summary_table(zen1))
    assert "fp32 (auto; no decision recorded: what auto chooses on the recorded CPU)" in out.getvalue()
