"""The GPU ladder (resnet50-gpu-horovod): its rungs, when each can run here, and the batch-size search.

Cumulative, each rung on top of those below it that ran: fp32 -> + bf16 autocast -> +
channels_last -> + torch.compile (inductor, default mode) -> + autotuned kernels
(``max-autotune-no-cudagraphs``) -> + CUDA graphs (``reduce-overhead``, or ``max-autotune``
on top of autotuned kernels) -> + a fused optimizer step (``SGD(fused=True)``: one kernel for
the whole update) -> the batch-size search. The bare loop that trainbench is held against
reaches 5,600 images/s on one H100 with compile at batch 256; MLPerf v4.0's ResNet-50 used
CUDA graphs and batch 400 per H100 (issue 37).

A rung that cannot run here is skipped with the reason: ``bf16`` on a GPU before Ampere
(compute capability 8.0) or on a CPU that would emulate it; the compile rungs without a C
compiler (Triton builds its kernels' launchers with one) on a GPU, or a C++ compiler on the
CPU; CUDA graphs without a GPU (``device=cpu``, the path CI runs).

The batch-size search runs the top rung's config at 128, 256, 512, ... 4096 per GPU (the
base batch, already measured by the rungs below, left out), smallest first, and stops at the
first that does not fit in the GPU's memory. With ``device=cpu`` it is a tiny range: twice
the base batch. Every batch size trains the same model in the loss-trajectory check
(``workloads/trajectory.py``: its batch is ``trajectory_batch`` distinct samples repeated).
"""

from __future__ import annotations

from suite.ladder.cpu_rungs import bf16_on_cpu, compile_on_cpu
from suite.ladder.host import Context, Ladder

SEARCH = (128, 256, 512, 1024, 2048, 4096)
"""The batch-size search's candidates per GPU (the largest that fits is the search's answer)."""

BF16_CAPABILITY = (8, 0)
"""Compute capability of the first GPUs with bf16 tensor cores (Ampere, A100)."""


def _capability(text: str | None) -> tuple[int, int] | None:
    try:
        major, minor = (text or "").split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def _bf16(ctx: Context) -> tuple[list[str], str | None]:
    if ctx.device == "cpu":
        return bf16_on_cpu(ctx)
    old = [g for g in ctx.host.gpus if (c := _capability(g.compute_capability)) is not None and c < BF16_CAPABILITY]
    if old:
        return [], (
            f"{old[0].name} (compute capability {old[0].compute_capability}) has no bf16 tensor cores; "
            "they start at 8.0 (A100)"
        )
    return ["precision=bf16"], None


def _compiled(ctx: Context, adds: list[str]) -> tuple[list[str], str | None]:
    if ctx.device == "cpu":
        return compile_on_cpu(ctx, adds)
    if ctx.host.cc is None:
        return [], (
            "torch.compile (inductor) builds its GPU kernels with Triton, which needs a C compiler "
            "($CC, cc, gcc, clang); install one (Debian: apt-get install gcc)"
        )
    return adds, None


def _graphs(ctx: Context) -> tuple[list[str], str | None]:
    if ctx.device == "cpu":
        return [], "CUDA graphs need a GPU (device=cpu here)"
    tuned = ctx.ran.get("compile_mode") == "compile_mode=max-autotune-no-cudagraphs"
    return _compiled(ctx, ["compile=inductor", f"compile_mode={'max-autotune' if tuned else 'reduce-overhead'}"])


def batch_sizes(base: int, device: str) -> list[int]:
    """The batch-size search's candidates, smallest first: :data:`SEARCH` on a GPU, twice ``base`` on the CPU;
    ``base`` itself (measured by the rungs below) is left out."""
    if device == "cpu":
        return [2 * base]
    return [b for b in SEARCH if b != base]


GPU = Ladder(
    title="GPU ladder",
    rungs=("fp32", "bf16", "channels_last", "compile", "max_autotune", "cudagraphs", "fused", "batch"),
    labels={
        "fp32": "fp32",
        "bf16": "+ bf16",
        "channels_last": "+ channels_last",
        "compile": "+ torch.compile",
        "max_autotune": "+ max-autotune",
        "cudagraphs": "+ CUDA graphs",
        "fused": "+ fused SGD",
        "batch": "+ batch",
    },
    managed=("precision", "channels_last", "compile", "compile_mode", "optimizer_impl"),
    adds={
        "fp32": lambda ctx: (
            ["precision=fp32", "channels_last=false", "compile=off", "compile_mode=default", "optimizer_impl=default"],
            None,
        ),
        "bf16": _bf16,
        "channels_last": lambda ctx: (["channels_last=true"], None),
        "compile": lambda ctx: _compiled(ctx, ["compile=inductor"]),
        "max_autotune": lambda ctx: _compiled(ctx, ["compile=inductor", "compile_mode=max-autotune-no-cudagraphs"]),
        "cudagraphs": _graphs,
        "fused": lambda ctx: (["optimizer_impl=fused"], None),
    },
    batch_sizes=batch_sizes,
    min_trajectory_samples=16,  # with its SGD (lr 0.01, momentum 0.9), 8 samples let fp32's trajectory oscillate
)
"""The GPU ladder."""
