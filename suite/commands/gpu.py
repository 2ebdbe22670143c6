"""``trainbench gpu-check`` (``make gpu-check``): every GPU figure of issues 34 and 37 in one table."""

from __future__ import annotations

from pathlib import Path

import click

from suite.console import console, stop_on_sigterm
from suite.errors import BadInput, Interrupted


@click.command("gpu-check")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
              help="cpu: the same check, tiny, on the CPU (how CI tests it).")  # fmt: skip
@click.option("--rows", help="Tasks to run, comma-separated (rungs fp32,bf16,channels_last,compile,max_autotune,"
              "cudagraphs,fused; pipeline groups eager,compiled) [default: all].")  # fmt: skip
@click.option("--budget-s", type=click.FloatRange(min=1), default=460.0, show_default=True,
              help="Seconds the check may take; a task whose estimate does not fit is listed, not run.")  # fmt: skip
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="A setting for every row [default: batch_size=256].")  # fmt: skip
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="A JPEG class-folder tree for the pipelines [default: generate one].")  # fmt: skip
@click.option("--images", type=click.IntRange(16, 100_000), default=2048, show_default=True,
              help="JPEGs to generate when no --data-dir is given.")  # fmt: skip
@click.option("--pairs", type=click.IntRange(1, 100), default=4, show_default=True,
              help="Bare/harness block pairs per rung (two make an ABBA quad).")  # fmt: skip
@click.option("--block-steps", type=click.IntRange(1, 10_000), default=20, show_default=True)
@click.option("--warmup-steps", type=click.IntRange(1, 10_000), default=10, show_default=True)
@click.option("--trajectory-steps", type=click.IntRange(0, 1000), default=8, show_default=True,
              help="Steps of each rung's loss-trajectory pass, compared with fp32's (0: none).")  # fmt: skip
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/gpu-check"), show_default=True)
def gpu_check(
    device: str,
    rows: str | None,
    budget_s: float,
    overrides: tuple[str, ...],
    data_dir: Path | None,
    images: int,
    pairs: int,
    block_steps: int,
    warmup_steps: int,
    trajectory_steps: int,
    output_dir: Path,
) -> None:
    """Measure the GPU ladder's rungs (harness/bare in one process, the first step apart, GPU step times,
    power and samples per joule, the loss trajectory) and the input pipelines against the synthetic
    ceiling, within a time budget; print one table and each goal of issues 34 and 37 against it.

    Exit codes: 0 the check ran (goals missed are reported, not failed); 2 bad input or no GPU; 130 interrupted.
    """
    from suite.bench.gpu_check import ORDER, CheckSettings, run_check, write_rows
    from suite.bench.gpu_check_table import goals, table

    known = [name for _, name in ORDER]
    chosen = tuple(r.strip() for r in rows.split(",") if r.strip()) if rows else tuple(known)
    unknown = [r for r in chosen if r not in known]
    if unknown or not chosen:
        raise BadInput(f"--rows {rows!r}: unknown {', '.join(unknown) or 'none given'}; choose from {', '.join(known)}")
    if device == "cuda":
        from harness.gpus import gpu_devices

        found = gpu_devices()
        if not found["devices"]:
            raise BadInput(
                f"no NVIDIA GPU is visible ({found.get('note', 'NVML lists none')}); run on a GPU host, "
                "or --device cpu for the CPU path"
            )
    settings = CheckSettings(device, chosen, budget_s, overrides or ("batch_size=256",), pairs, block_steps,
                             warmup_steps, images, data_dir, trajectory_steps)  # fmt: skip
    stop_on_sigterm()
    try:
        measured = run_check(settings, output_dir, console)
    except KeyboardInterrupt:
        raise Interrupted("gpu-check interrupted") from None
    console.print(table(measured), width=max(console.width, 200))  # a wide table: one line per row
    for line in goals(measured):
        console.print(f"- {line}", highlight=False, markup=False)
    console.print(f"figures: {write_rows(measured, settings, output_dir)}")


COMMANDS = (gpu_check,)
"""This area's commands (registered by :mod:`suite.commands`)."""
