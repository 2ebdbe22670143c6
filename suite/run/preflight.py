"""What is checked before a run starts: prices, launch plan, GPU, Horovod, output directory."""

from __future__ import annotations

import importlib.util
import shutil
import uuid
from pathlib import Path

from harness.gpus import gpu_devices
from suite.config import RunConfig
from suite.cost import compute_cost
from suite.run.launch import plan_launch
from suite.run.options import PreflightError, RunOptions

MIN_FREE_BYTES = 200 * 1024 * 1024
"""Free space the output directory needs before a run starts."""


def preflight(config: RunConfig, opts: RunOptions) -> None:
    """Check what can be checked before anything runs.

    Raises:
        PreflightError: the output directory is not writable or has too little space, the
            workload needs a GPU and none is visible, or it needs horovodrun and Horovod is
            not installed for a local run.
        suite.cost.PriceTableError: the price options are invalid.
        suite.run.launch.LaunchError: the requested allocator is missing.

    A Slurm run (``opts.slurm``) checks the job instead (:func:`suite.slurm.plan.check`):
    its settings, the Slurm client, and an output directory the nodes share.
    """
    compute_cost(
        1.0,
        price_per_hour=opts.price_per_hour,
        instance_type=opts.instance_type,
        pricing=opts.pricing,
        region=opts.region,
    )
    if opts.slurm is not None:  # the ranks run on the job's nodes: their GPUs and Horovod are not this host's
        from suite.slurm.plan import check

        check(config, opts.slurm, opts.output_dir)
    else:
        _local(config, opts)
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


def _local(config: RunConfig, opts: RunOptions) -> None:
    """The checks of ranks started from this host: the launch plan, a GPU, Horovod."""
    plan_launch(config.launch, Path("job.json"), Path("out.json"))
    if config.requires_gpu:
        gpus = gpu_devices()
        if not gpus["devices"]:
            raise PreflightError(
                f"workload {config.workload} needs an NVIDIA GPU, but none is visible "
                f"({gpus.get('note', 'NVML lists no device')}); run it on a GPU host, or choose a CPU workload"
            )
    if config.launch.launcher == "horovodrun" and opts.wrap is None and importlib.util.find_spec("horovod") is None:
        raise PreflightError(
            f"workload {config.workload} is launched by horovodrun, but Horovod is not installed in this environment; "
            "run it in its image (--runtime docker; build it with `make images`), or use --set engine=ddp"
        )
