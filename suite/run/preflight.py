"""What is checked before a run starts: prices, the runtime's own checks, the output directory."""

from __future__ import annotations

import shutil
import uuid

from suite.config import RunConfig
from suite.cost import compute_cost
from suite.errors import PreflightError
from suite.run.options import RunOptions

MIN_FREE_BYTES = 200 * 1024 * 1024
"""Free space the output directory needs before a run starts."""


def preflight(config: RunConfig, opts: RunOptions) -> None:
    """Check what can be checked before anything runs; ``config`` is the runtime's (``Runtime.job_config``).

    Raises:
        suite.cost.PriceTableError: the price options are invalid.
        PreflightError: the output directory is not writable or has too little space, or the
            runtime cannot host the run (no GPU for a GPU workload, no sbatch, ...).
        suite.launchers.LaunchError: the allocator, a binding or a launcher's tool is missing.
        suite.containers.errors.ContainerError: no engine or no image (``--runtime docker``).
    """
    compute_cost(
        1.0,
        price_per_hour=opts.price_per_hour,
        instance_type=opts.instance_type,
        pricing=opts.pricing,
        region=opts.region,
    )
    opts.runtime.preflight(config, opts.output_dir)
    out = opts.output_dir
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".trainbench-write-test-{uuid.uuid4().hex[:8]}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise PreflightError(f"output directory {out} is not writable ({exc}); pass --output-dir DIR") from exc
    free = shutil.disk_usage(out).free
    if free < MIN_FREE_BYTES:
        raise PreflightError(
            f"output directory {out} has {free // 2**20} MiB free; a run needs {MIN_FREE_BYTES // 2**20} MiB"
        )
