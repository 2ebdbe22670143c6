"""Claims about the hardware that the recorded environment must support: the ISA record, the precision
decision, bf16 emulation and the device trained on.

Each stored decision is recomputed from what decides it, as the run decided it, and a stored value
that disagrees is an error:

- the ISA record's ``effective`` flags and ``bf16_native`` follow from its ``features`` and caps
  (:func:`harness.precision.isa_from_record`); the CPU flags (``cpu.flags``) list the same features;
  torch cannot dispatch to an ISA the CPU lacks (``AVX512`` needs ``avx512f``, ``AVX2`` ``avx2``); the
  ISA record's model is the CPU's;
- the rank's precision decision (``workload_info.precision``) is :func:`harness.precision.choose_precision`
  of the configured precision on that ISA, and the result's ``bf16_emulated`` is
  :func:`suite.labels.bf16_emulated` (the one rule);
- a GPU named by the workload (``device_name``, a ``cuda:N`` or ``gpu`` device) is one of the recorded
  GPUs; a CPU workload names no GPU device; a GPU run carries its device telemetry
  (:func:`check_device_telemetry`).
"""

from __future__ import annotations

from typing import Any

from harness.precision import isa_from_record, recorded_choice
from suite import labels
from suite.results import Result
from suite.validation.findings import Findings

FIX = "submit the result as trainbench wrote it on the machine it describes"
TORCH_NEEDS = {"AVX512": "avx512f", "AVX2": "avx2", "SVE128": "sve", "SVE256": "sve", "SVE512": "sve"}
"""The CPU feature each ISA torch dispatches to needs (``torch.backends.cpu.get_cpu_capability()``)."""
GPU_DEVICES = ("cuda", "gpu")
"""Prefixes of a workload's ``device`` that name a GPU (torch ``cuda:N``, TensorFlow ``gpu``)."""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _isa_record(result: Result, where: str, findings: Findings) -> None:
    """The stored ISA record against its own features and caps, the CPU flags and torch's capability."""
    env = result.environment
    isa = env.get("isa")
    rebuilt = isa_from_record(env)
    if not isinstance(isa, dict) or rebuilt is None:
        return
    stored_eff = isa.get("effective")
    if isinstance(stored_eff, dict) and isinstance(isa.get("features"), dict):
        for name in sorted(rebuilt.effective):
            if bool(stored_eff.get(name)) != rebuilt.effective[name]:
                findings.error(
                    "isa-inconsistent",
                    f"{where}#environment/isa/effective/{name}",
                    f"the ISA record says {name} is {'usable' if stored_eff.get(name) else 'not usable'}, but its "
                    f"own features and caps ({'; '.join(rebuilt.caps) or 'no cap'}) say the opposite",
                    FIX,
                )
                return
    for key in ("bf16_native", "bf16_native_cpu"):
        if isinstance(isa.get(key), bool) and isa[key] != getattr(rebuilt, key):
            findings.error(
                "isa-inconsistent",
                f"{where}#environment/isa/{key}",
                f"the ISA record says {key} is {isa[key]}, but its own features and caps give {getattr(rebuilt, key)}",
                FIX,
            )
            return
    cpu = _dict(env.get("cpu"))
    flags = cpu.get("flags")
    if isinstance(flags, list) and flags and not cpu.get("error") and isinstance(isa.get("features"), dict):
        present = set(map(str, flags))
        for name, has in rebuilt.features.items():
            if (name in present) != has:
                findings.error(
                    "isa-inconsistent",
                    f"{where}#environment/isa/features/{name}",
                    f"the CPU flags list {name} {'' if name in present else 'not '}but the ISA record says the CPU "
                    f"{'has' if has else 'lacks'} it: both are read from the same /proc/cpuinfo",
                    FIX,
                )
                return
    models = [m.strip() for m in (cpu.get("model"), isa.get("model")) if isinstance(m, str)]
    if len(models) == 2 and not cpu.get("error") and models[0] != models[1]:
        findings.error(
            "isa-inconsistent",
            f"{where}#environment/cpu/model",
            f"the CPU is recorded as {cpu['model'][:80]!r} and its ISA record as {isa['model'][:80]!r}",
            FIX,
        )
    torch_caps = [isa.get("torch_cpu_capability"), (env.get("torch") or {}).get("cpu_capability")]
    for cap in (str(c).upper() for c in torch_caps if isinstance(c, str)):
        need = TORCH_NEEDS.get(cap)
        if need is not None and need in rebuilt.features and not rebuilt.features[need]:
            findings.error(
                "isa-inconsistent",
                f"{where}#environment/isa/torch_cpu_capability",
                f"torch dispatched to {cap}, which needs {need}, but the recorded CPU lacks {need}",
                FIX,
            )
            return


def _precision(result: Result, where: str, findings: Findings) -> None:
    """The rank's precision decision and the result's ``bf16_emulated`` against the one rule."""
    choice = labels.precision_choice(result)
    configured = result.config.params.get("precision")
    if choice is not None and labels.device_class(result) == "cpu":
        requested = str(choice.get("requested"))
        if isinstance(configured, str) and requested != configured:
            findings.error(
                "precision-impossible",
                f"{where}#workload_info/precision/requested",
                f"the rank decided for precision={requested}, but the config asked for {configured}",
                FIX,
            )
        try:
            again = recorded_choice(requested, result.environment)
        except ValueError:
            again = None
        if again is not None and (
            again.chosen != choice.get("chosen")
            or again.bf16_emulated != choice.get("bf16_emulated")
            or again.bf16_native != choice.get("bf16_native")
        ):
            isa = labels.isa_summary(result.environment) or "no matrix extensions"
            said = "native" if choice.get("bf16_native") else "emulated"
            findings.error(
                "precision-impossible",
                f"{where}#workload_info/precision",
                f"the run claims {choice.get('chosen')} with bf16 {said} (precision={requested}), but on the ISA it "
                f"recorded ({isa}) precision={requested} gives {again.chosen} "
                f"({'native bf16' if again.bf16_native else 'no native bf16'}): the hardware cannot run what the "
                "result claims",
                FIX,
            )
            return
    judged, stated = labels.bf16_emulated(result), labels.bf16_emulated_stated(result)
    one_host = len({str((r or {}).get("hostname")) for r in result.environment.get("ranks") or [{}]}) <= 1
    if judged is not None and stated is not None and judged != stated and (one_host or judged):
        findings.error(
            "precision-impossible",
            f"{where}#bf16_emulated",
            f"the result says bf16_emulated is {stated}, but its recorded ISA features and caps make it {judged}",
            FIX,
        )


def _gpu_names(env: dict[str, Any]) -> list[str]:
    devices = (env.get("gpus") or {}).get("devices") if isinstance(env.get("gpus"), dict) else None
    names = [str(d.get("name")) for d in devices or [] if isinstance(d, dict) and d.get("name")]
    torch = _dict(env.get("torch"))
    return names + [str(n) for n in torch.get("devices") or [] if isinstance(n, str)]


def _device(result: Result, where: str, findings: Findings) -> bool:
    """The device the workload names against the recorded GPUs; True when the run trained on a GPU."""
    info = result.workload_info
    device = str(info.get("device") or "").lower()
    name = info.get("device_name") if isinstance(info.get("device_name"), str) else None
    tf_gpu = any("GPU" in str(d) for d in info.get("devices") or [] if isinstance(info.get("devices"), list))
    on_gpu = device.startswith(GPU_DEVICES) or (name is not None and name.lower() != "cpu") or tf_gpu
    if not on_gpu:
        return False
    gpus = _gpu_names(result.environment)
    named = name if name is not None and name.lower() != "cpu" else device
    if labels.device_class(result) == "cpu":
        findings.error(
            "device-impossible",
            f"{where}#workload_info/device",
            f"a CPU workload (its config needs no GPU) says it trained on {named[:80]!r}",
            FIX,
        )
    if not gpus:
        findings.error(
            "device-impossible",
            f"{where}#workload_info",
            f"the run says it trained on {named[:80]!r}, but its environment records no GPU",
            FIX,
        )
    elif name is not None and name.lower() != "cpu" and name not in gpus:
        findings.error(
            "device-impossible",
            f"{where}#workload_info/device_name",
            f"the run says it trained on {name[:80]!r}, which is not one of the GPUs it recorded "
            f"({', '.join(sorted(set(gpus)))[:200]})",
            FIX,
        )
    return True


def check_device_telemetry(result: Result, where: str, findings: Findings) -> None:
    """A run that trained on a GPU carries its device telemetry (issue 37): every measured step timed on
    the GPU (CUDA events, ``device_s``), and NVML readings in every measurement window, or the reason
    NVML could not be read (``gpu_error``) recorded by the sampler. The figures themselves are held
    against the windows elsewhere: device times against their window (:mod:`suite.validation.record_checks`),
    the energy and samples per joule against the readings (:func:`suite.validation.conditions.check_energy`).
    """
    if result.status != "complete":
        return
    measured = [s for s in result.steps if s.phase.value == "measurement" and s.rank == 0]
    untimed = sum(s.device_s is None for s in measured)
    if measured and untimed:
        findings.error(
            "device-telemetry-missing",
            f"{where}#steps",
            f"the run trained on a GPU, but {untimed} of its {len(measured)} measured steps have no device time "
            "(trainbench times every step of a GPU run with CUDA events)",
            FIX,
        )
    if any(u.gpu_error for u in result.utilization):
        return  # the sampler recorded why NVML could not be read: the result says so, and has no energy
    windows = [w for w in result.windows if w.phase.value == "measurement" and w.rank == 0]
    every = result.config.windows.sampler_interval_s  # a window shorter than it may fall between two readings
    unread = [
        w.repeat
        for w in windows
        if not any(u.gpus and w.start_s - every <= u.t_s <= w.start_s + w.seconds + every for u in result.utilization)
    ]
    if unread:
        findings.error(
            "device-telemetry-missing",
            f"{where}#utilization",
            f"the run trained on a GPU, but measurement window(s) of repeat(s) {unread[:10]} have no NVML reading "
            "and no reason is recorded",
            FIX,
        )


def check_hardware_claims(result: Result, where: str, findings: Findings) -> None:
    """The ISA record, the precision decision, bf16 emulation and the device against what was recorded."""
    _isa_record(result, where, findings)
    _precision(result, where, findings)
    if _device(result, where, findings):
        check_device_telemetry(result, where, findings)
    cpu = _dict(result.environment.get("cpu"))
    logical = cpu.get("logical_cores")
    readings = {len(r.cpu_percent) for r in result.utilization}
    allowed = (result.environment.get("binding") or {}).get("cpus_allowed")
    in_container = bool((result.environment.get("container") or {}).get("in_container"))
    # lxcfs shows a container only its cpuset in /proc/stat, but not in the online-CPU count psutil reads
    if (
        isinstance(logical, int)
        and readings
        and readings != {logical}
        and not (in_container and max(readings) < logical)
    ):
        findings.error(
            "environment-inconsistent",
            f"{where}#environment/cpu/logical_cores",
            f"the machine is recorded with {logical} logical cores, but the sampler read {sorted(readings)} cores "
            "from /proc/stat",
            FIX,
        )
    if isinstance(logical, int) and isinstance(allowed, list) and len(set(allowed)) > logical:
        findings.error(
            "environment-inconsistent",
            f"{where}#environment/binding/cpus_allowed",
            f"the rank was allowed {len(set(allowed))} CPUs on a machine of {logical} logical cores",
            FIX,
        )
