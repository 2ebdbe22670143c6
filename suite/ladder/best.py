"""The ladder's best on this device, and how far a run is from it.

``trainbench ladder`` writes ``best-config.json`` into ``OUTPUT_DIR/WORKLOAD/ladder-<time>-<id>/``
with what its best rung measured (:class:`suite.run.config_file.LadderBest`: the device's name,
the world size, the throughput). After a run, ``trainbench run`` looks in its own output tree
for the newest such file of the same workload, device and world size, and prints how far the run
is from it: the ratio of the throughputs with its 95% interval
(:func:`suite.compare.stats.ratio_interval`) when the best's result file is still there. The
device is the GPU's name (``workload_info["device_name"]``, e.g. ``NVIDIA H100 80GB HBM3``), else
the CPU's model, so a best measured on one kind of GPU is never held against another.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from suite.results import Result

MAX_LADDERS = 200
"""Most ladder directories looked at (the newest first), so a large output tree costs little."""


def device_name(result: Result) -> str:
    """The device a result ran on: the GPU's name, else the CPU's model, else ``unknown device``."""
    name = result.workload_info.get("device_name")
    if isinstance(name, str) and name and name != "cpu":
        return name
    model = (result.environment.get("cpu") or {}).get("model")
    return str(model) if model else "unknown device"


@dataclass(frozen=True)
class Distance:
    """How a run compares with the ladder's best.

    Attributes:
        config: the best-config file; rung: its rung; device, world_size: where both ran.
        best: the best's throughput, samples/s; ratio: the run's throughput / the best's.
        low, high: the ratio's 95% interval, or None when the best's result is gone or gives none.
        method: how the interval was computed (None without one).
    """

    config: Path
    rung: str
    device: str
    world_size: int
    best: float
    ratio: float
    low: float | None
    high: float | None
    method: str | None

    def text(self) -> str:
        """One line, e.g. ``ladder's best on NVIDIA H100 (1 rank): 5,890 samples/s (+ CUDA graphs): this run is
        0.66x of it (95% CI 0.65-0.67), 34% slower; its config: trainbench run --config FILE``."""
        ci = f" (95% CI {self.low:.3f}-{self.high:.3f})" if self.low is not None and self.high is not None else ""
        gap = (1 - self.ratio) * 100
        where = f"{gap:.1f}% slower" if gap >= 0 else f"{-gap:.1f}% faster"
        ranks = f"{self.world_size} rank" + ("s" if self.world_size > 1 else "")
        return (
            f"ladder's best on {self.device} ({ranks}): {self.best:,.1f} samples/s ({self.rung}); this run is "
            f"{self.ratio:.3f}x of it{ci}, {where}; its config: trainbench run --config {self.config}"
        )


def distance_to_best(result: Result, output_dir: Path) -> Distance | None:
    """How ``result`` compares with the newest ladder best of its workload, device and world size under
    ``output_dir`` (None when there is none, or the result has no throughput). Unreadable files are passed over."""
    from suite.compare.stats import ratio_interval
    from suite.results import ResultError, read_result
    from suite.run.config_file import ConfigFileError, read_config_file

    if result.summary is None:
        return None
    device = device_name(result)
    ladders = sorted((output_dir / result.workload).glob("ladder-*"), reverse=True)[:MAX_LADDERS]
    for directory in ladders:
        path = directory / "best-config.json"
        try:
            config = read_config_file(path) if path.is_file() else None
        except ConfigFileError:
            continue
        best = config.best if config is not None else None
        if best is None or best.device != device or best.world_size != result.world_size:
            continue
        ratio, low, high, method = result.summary.throughput / best.throughput_samples_per_s, None, None, None
        try:
            theirs = read_result(Path(best.result)) if best.result else None
        except (ResultError, OSError):
            theirs = None
        if theirs is not None and theirs.summary is not None:
            estimate = ratio_interval([theirs], [result])
            ratio, low, high, method = estimate.ratio, estimate.low, estimate.high, estimate.description
        return Distance(path, best.rung, device, best.world_size, best.throughput_samples_per_s, ratio, low, high,
                        method)  # fmt: skip
    return None
