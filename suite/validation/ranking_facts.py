"""What a ranked figure is, beyond its value: its device class, its precision (bf16 native or
emulated), its 95% CI, and its name in MLflow.

Used by :mod:`suite.validation.ranking`, so only like-for-like figures share a ranking:
same workload, same device class (:func:`suite.labels.device_class`), same precision,
with bf16 that ran emulated (:func:`suite.labels.bf16_emulated`) apart from native bf16.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from suite import labels
from suite.markdown import plain
from suite.results import Result, ResultError, read_result
from suite.specs import SPECS_DIR, ConfigError, get_spec, resolve
from suite.validation.bands import Citation, ReferenceBand
from suite.validation.outcomes import GroupOutcome

GPU_WORDS = re.compile(r"\b(GPUs?|CUDA)\b")
"""A cited setup that names a GPU was measured on one (e.g. "1x NVIDIA A10G GPU")."""
KEY_MAX = 250
"""MLflow's limit on a metric key (characters)."""
_KEY_BAD = re.compile(r"[^A-Za-z0-9_. -]+")
"""Characters an MLflow metric key may hold, besides the ``/`` that separates its parts."""


@dataclass(frozen=True)
class Facts:
    """A figure's device class (``cpu``/``gpu``), precision (``fp32``, ``bf16``, ...; "" unknown), and
    whether its bf16 ran emulated."""

    device: str
    precision: str
    emulated: bool = False


@dataclass(frozen=True)
class Interval95:
    """A 95% CI of a throughput in samples/s, and how it was computed, in words."""

    low: float
    high: float
    method: str


def _first_readable(root: Path, group: GroupOutcome) -> Result | None:
    for where in group.runs:
        try:
            return read_result(root / where)
        except ResultError:
            continue
    return None


def submission_facts(root: Path, group: GroupOutcome) -> tuple[Facts, Result | None]:
    """The facts of a scored group, read from its first readable result file (bounded reader), and
    that result; without one, CPU and the group's recorded precision."""
    result = _first_readable(root, group)
    recorded = str(group.computed.get("precision") or "")  # what the group's runs ran in (scoring)
    if result is None:
        return Facts("cpu", recorded), None
    emulated = labels.bf16_emulated(result) is True
    return Facts(labels.device_class(result), labels.precision(result) or recorded, emulated), result


def published_facts(band: ReferenceBand, specs_dir: Path = SPECS_DIR) -> Facts:
    """The facts of a cited figure.

    Device: the band's ``params.device`` condition when it pins one; else GPU when the
    workload's spec requires a GPU, or when the citation's setup names a GPU or CUDA
    (a published figure says in words what it ran on); else CPU. Precision: the band's
    ``params.precision`` condition, else the workload's official profile (a closed
    figure) where that names one; unknown ("") where the profile leaves it to the hardware
    (``auto``) and the band does not say what the figure ran in. A published figure records
    no emulation: it counts as native.
    """
    device = band.conditions.get("params.device")
    gpu = isinstance(device, str) and device.startswith(("cuda", "gpu"))
    if not isinstance(device, str) or device == "auto":
        try:
            gpu = get_spec(band.workload, specs_dir).requires_gpu
        except ConfigError:
            gpu = False
        gpu = gpu or (isinstance(band.source, Citation) and GPU_WORDS.search(band.source.setup) is not None)
    precision = band.conditions.get("params.precision")
    if precision is None and band.division == "closed":
        try:
            precision = resolve(band.workload, "official", directory=specs_dir).params.get("precision")
        except ConfigError:
            precision = None
    return Facts("gpu" if gpu else "cpu", "" if precision in (None, "auto") else str(precision))


def runs_interval(throughputs: Sequence[float], single: Result | None = None) -> Interval95 | None:
    """95% CI of a submission's throughput.

    Two or more runs: a Student-t interval over the runs' seconds per sample, inverted
    into samples/s (as the harness does for repeats; averaging rates would over-weight
    fast runs). One run: that run's own interval (``single``). None when neither exists
    or the interval reaches zero.
    """
    n = len(throughputs)
    if n >= 2:
        spp = [1.0 / t for t in throughputs if t > 0]
        if len(spp) < 2:
            return None
        mean = sum(spp) / len(spp)
        sd = math.sqrt(sum((x - mean) ** 2 for x in spp) / (len(spp) - 1))
        from scipy import stats as sps  # 0.5 s to import: only where an interval is computed

        half = float(sps.t.ppf(0.975, len(spp) - 1)) * sd / math.sqrt(len(spp))
        if mean - half <= 0:
            return None
        return Interval95(1.0 / (mean + half), 1.0 / (mean - half), f"Student t over the {len(spp)} runs")
    if n == 1 and single is not None and single.summary is not None:
        ci = single.summary.throughput_ci95
        if ci is not None and ci.high is not None:
            return Interval95(ci.low, ci.high, f"the run's own interval ({plain(ci.method)})")
    return None


def key_part(text: str) -> str:
    """``text`` as one part of an MLflow metric key: letters, digits, ``_ . -`` and spaces only
    (others become ``-``), no leading or trailing dots or spaces (so never ``.`` or ``..``)."""
    s = re.sub(r"\s+", " ", _KEY_BAD.sub("-", plain(text))).strip(" .")
    return s or "-"


def class_slug(facts: Facts, division: str, computed: dict[str, object]) -> str:
    """The short, key-safe name of a ranking's class, e.g. ``cpu closed bf16``, ``cpu open bs128 fp32 224px
    synthetic``, ``cpu closed bf16-emulated``: the precision is the one the figure ran in."""
    parts = [facts.device, division]
    prec = str(facts.precision or computed.get("precision") or "?")
    if division == "open":
        parts += [f"bs{computed.get('batch_size', '?')}", prec + ("-cl" if computed.get("channels_last") else "")]
        parts += [f"{computed.get('image_size', '?')}px", str(computed.get("data", "?"))]
        if facts.emulated:
            parts.append("bf16-emulated")
    else:
        parts.append((facts.precision or "unknown-precision") + ("-emulated" if facts.emulated else ""))
    return key_part(" ".join(str(p) for p in parts))


def metric_keys(items: Sequence[tuple[str, str, str, str, str]]) -> list[str]:
    """One readable, unique MLflow key stem per figure: ``<workload>/<class>/<system> <kind>``.

    Args:
        items: (workload, class slug, system, kind word, tie-breaker) per figure; the
            tie-breaker (a band name, a config id) is appended only where two figures
            would share a key.
    """
    stems = [f"{key_part(w)}/{c}/{key_part(s)[:80]} {k}" for w, c, s, k, _ in items]
    seen = Counter(stems)
    out = []
    for stem, item in zip(stems, items, strict=True):
        out.append(f"{stem} {key_part(item[4])[:60]}" if seen[stem] > 1 else stem)
    return [k[: KEY_MAX - len("samples_per_dollar/")] for k in out]
