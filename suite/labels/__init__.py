"""Short words for what a result measured and where: its config's knobs, precision, device and hardware.

One home for the labels the MLflow run page (``suite.tracking``), ``trainbench compare``
(``suite.compare``) and the run's own tables print, so all name a config and a machine the
same way. Every value is read from the result as written: ``environment["isa"]`` (the
:class:`harness.isa.IsaInfo` record: ``features``/``effective`` flag -> bool, ``caps``,
``torch_cpu_capability``), ``workload_info["precision"]`` (the
:class:`harness.precision.PrecisionChoice` record: ``requested``, ``chosen``, ``reason``,
``bf16_emulated``) and ``bf16_emulated``; results written before those fall back to the
CPU flags and the configured precision (``auto`` resolved on the recorded hardware). Whether bf16
ran emulated is decided here once (:func:`bf16_emulated`), from the recorded ISA features and caps.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel

from harness.precision import recorded_bf16_emulated
from suite.labels.isa import MATRIX_FEATURES as MATRIX_FEATURES
from suite.labels.isa import isa_caps as isa_caps
from suite.labels.isa import isa_features as isa_features
from suite.labels.isa import isa_summary as isa_summary
from suite.labels.isa import torch_capability as torch_capability
from suite.markdown import plain
from suite.results import Result
from suite.rules import auto_precision
from suite.specs import RunConfig

NOT_KNOBS = frozenset({"params.batch_size", "params.precision"}) | frozenset(  # both are in the name
    {"launch.startup_timeout_s", "launch.stall_timeout_s", "launch.rdzv_id", "launch.rdzv_endpoint"}
)
"""Settings that never appear among a run name's knobs (already named, or no effect on speed)."""
KNOB_SECTIONS = ("params.", "launch.")
"""A knob is a setting of the trained config; windows only change how long it is measured."""


def value_text(value: Any) -> str | None:
    """A setting as the CLI spells it: ``true``/``false``, no ``None``, numbers without float noise.

    Floats keep 6 significant digits (``0.001``, ``1800``, ``1e-05``); lists and
    mappings are compact JSON. Returns None for None (a setting left unset).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}"
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return str(value)


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = value


def flat_settings(config: RunConfig) -> dict[str, Any]:
    """Every setting of ``config`` as ``section.key -> value`` (params, windows, launch; nested keys dotted)."""
    doc = config.model_dump(mode="json")
    out: dict[str, Any] = {}
    for section in ("params", "windows", "launch"):
        _flatten(section, doc.get(section) or {}, out)
    return out


def setting_name(config: RunConfig, key: str) -> str | None:
    """The full name (``section.setting``) of the setting that ``key`` names, as ``--set`` reads it
    (``num_workers`` -> ``params.num_workers``; a qualified name is kept), or None when ``config``
    has no such setting."""
    flat = flat_settings(config)
    if "." in key:
        return key if key in flat else None
    return next((k for k in flat if k.split(".", 1)[1] == key), None)


def _profile_defaults(result: Result) -> dict[str, Any] | None:
    """The settings of the result's profile without overrides, or None when the spec is not at hand."""
    from suite.specs import resolve

    try:
        return flat_settings(resolve(result.workload, result.profile))
    except Exception:  # spec renamed, removed or invalid here: fall back to the recorded overrides
        return None


def knobs(result: Result) -> list[str]:
    """The trained config's settings that differ from its profile's defaults, as ``key=value``.

    Compares with the profile as this checkout defines it; where the spec or profile
    is not found, the keys of the recorded ``--set`` overrides are used instead. Batch
    size and precision are left out (the run name carries them), and so are windows
    and timeouts. A distributed run adds ``N ranks``.
    """
    actual = flat_settings(result.config)
    defaults = _profile_defaults(result)
    if defaults is not None:
        keys = [k for k, v in actual.items() if value_text(v) != value_text(defaults.get(k))]
    else:
        named = {o.partition("=")[0].strip() for o in result.config.overrides}
        keys = [k for k in actual if k in named or k.split(".", 1)[-1] in named]
    out = [
        f"{k.split('.', 1)[1]}={value_text(actual[k])}"
        for k in keys
        if k.startswith(KNOB_SECTIONS) and k not in NOT_KNOBS and actual[k] is not None
    ]
    if result.world_size > 1:
        out.append(f"{result.world_size} ranks")
    return out


def name(result: Result, max_len: int = 250) -> str:
    """``<workload> <precision> bs<N> [<knobs>] @ <system>``, at most ``max_len`` characters.

    Knobs (:func:`knobs`) that do not fit are counted as ``+N more``; control
    characters become spaces.
    """
    head = [result.workload]
    prec = precision(result)
    if prec:
        head.append(prec)
    batch = result.config.params.get("batch_size")
    if batch is not None:
        head.append(f"bs{batch}")
    tail = f" @ {plain(result.system)}"
    base = plain(" ".join(head))
    found = [plain(k) for k in knobs(result)]
    for shown in range(len(found), -1, -1):
        more = len(found) - shown
        inner = ", ".join(found[:shown] + ([f"+{more} more"] if more else []))
        text = f"{base} [{inner}]{tail}" if inner else f"{base}{tail}"
        if len(text) <= max_len:
            return text
    return (base + tail)[:max_len]


def precision_choice(result: Result) -> dict[str, Any] | None:
    """The precision decision the rank recorded (``PrecisionChoice.to_dict``), or None."""
    info = result.workload_info.get("precision")
    return info if isinstance(info, dict) and isinstance(info.get("chosen"), str) else None


def precision(result: Result) -> str | None:
    """The precision the run computed in (``fp32``, ``bf16``, ...), never ``auto``; None when unknown.

    The rank's decision (``precision=auto`` resolved on its own host) where recorded, else
    the configured precision. A result that says ``auto`` but recorded no decision (written
    before ranks recorded it) gets what ``auto`` chooses on the hardware it recorded
    (:func:`suite.rules.auto_precision`, the rule the closed division judges it by), or None
    when it recorded neither an ISA record nor CPU flags.
    """
    choice = precision_choice(result)
    if choice is not None:
        return str(choice["chosen"])
    info = result.workload_info.get("precision")
    value = info if isinstance(info, str) and info else result.config.params.get("precision")
    if value == "auto":
        return auto_precision(result.environment)
    return str(value) if value is not None else None


def device_class(result: Result) -> str:
    """``gpu`` when the run needed a GPU (the resolved config says so), else ``cpu``."""
    device = str(result.config.params.get("device", ""))
    return "gpu" if result.config.requires_gpu or device.startswith("cuda") else "cpu"


def bf16_emulated(result: Result) -> bool | None:
    """Whether the run's bf16 was emulated: the one home of this decision, for every reader.

    Recomputed from what the result recorded (:func:`harness.precision.recorded_bf16_emulated`: the
    CPU's own ISA features and the caps in ``environment``, never a stored ``bf16_native`` or
    ``bf16_emulated``) for the precision the run computed in (:func:`precision`). Returns None when
    the run did not compute in bf16 or ran on a GPU. Only a result that recorded neither an ISA
    record nor CPU flags falls back to what it states (:func:`bf16_emulated_stated`). The validator
    reports a stated flag that disagrees with this (``suite.validation.hardware_claims``).
    """
    if device_class(result) != "cpu" or precision(result) != "bf16":
        return None
    judged = recorded_bf16_emulated("bf16", result.environment)
    return judged if judged is not None else bf16_emulated_stated(result)


def bf16_emulated_stated(result: Result) -> bool | None:
    """What the result says about bf16 emulation, not a decision: its top-level ``bf16_emulated``, else
    the rank's precision record's, else an older ``bf16_emulated`` key in ``workload_info`` or
    ``environment``; None where it says nothing. Compare it with :func:`bf16_emulated`."""
    if isinstance(result.bf16_emulated, bool):
        return result.bf16_emulated
    choice = precision_choice(result)
    if choice is not None and isinstance(choice.get("bf16_emulated"), bool):
        return bool(choice["bf16_emulated"]) if choice["chosen"] == "bf16" else None
    for where in (result.workload_info, result.environment):
        if isinstance(where.get("bf16_emulated"), bool):
            return bool(where["bf16_emulated"])
    return None


def gpu_text(env: dict[str, Any]) -> str:
    """``none``, or ``<count>x <model>`` per model, with the driver."""
    devices = (env.get("gpus") or {}).get("devices") or []
    names = [str(d.get("name")) for d in devices if isinstance(d, dict)]
    if not names:
        names = [str(n) for n in ((env.get("torch") or {}).get("devices") or [])]
    if not names:
        return "none"
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    text = ", ".join(f"{c}x {n}" for n, c in counts.items())
    driver = (env.get("gpus") or {}).get("driver")
    return f"{text} (driver {driver})" if driver else text


def cores_text(env: dict[str, Any]) -> str | None:
    """``<logical> logical, <physical> physical`` and, when fewer, how many the run was allowed to use."""
    cpu = env.get("cpu") or {}
    logical, physical = cpu.get("logical_cores"), cpu.get("physical_cores")
    if logical is None:
        return None
    text = f"{logical} logical" + (f", {physical} physical" if physical is not None else "")
    allowed = (env.get("binding") or {}).get("cpus_allowed")
    if isinstance(allowed, list) and 0 < len(allowed) < int(logical):
        text += f", {len(allowed)} allowed"
    return text


def slurm_job(result: Result) -> dict[str, str]:
    """The Slurm job the run ran in (``job_id``, ``nodelist``, ``partition``), or {} where none is recorded."""
    raw: Any = getattr(result.runtime, "slurm", None) or result.environment.get("slurm")
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        return {}
    out = {}
    for key in ("job_id", "nodelist", "partition"):
        if raw.get(key) is not None:
            out[key] = str(raw[key])
    return out
