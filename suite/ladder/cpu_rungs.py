"""The CPU optimization ladder (resnet50-cpu, numa-ddp): its rungs and when each can help.

The seed study's ladder (C. Rand, "Training AI Models on CPU", Sep 2024; shared/CONTEXT.md),
cumulative: fp32 -> + bf16 autocast -> + channels_last -> + torch.compile -> + a faster
allocator (jemalloc, else tcmalloc) -> + OpenMP pinning. A rung that cannot help here is
skipped with the reason, never run:

- ``bf16`` without native bf16 matrix instructions (it would measure the emulation,
  about 14x slower than fp32 on an AVX2-only Zen 1);
- ``compile`` without a C++ compiler (inductor compiles C++ kernels on the CPU);
- ``allocator`` with neither libjemalloc2 nor libgoogle-perftools4 installed;
- ``omp`` with a single CPU (nothing to pin).
"""

from __future__ import annotations

from harness.precision import EMULATION_COST, choose_precision
from suite.ladder.host import Context, Ladder


def bf16_on_cpu(ctx: Context) -> tuple[list[str], str | None]:
    """``precision=bf16``, or why not: this CPU would emulate it."""
    choice = choose_precision("bf16", ctx.host.isa)
    if choice.bf16_emulated:
        why = choice.reason.removeprefix("bf16: requested, emulated: ")
        return [], f"bf16 is not native here ({why}): it would be emulated, {EMULATION_COST}"
    return ["precision=bf16"], None


def compile_on_cpu(ctx: Context, adds: list[str]) -> tuple[list[str], str | None]:
    """``adds``, or why not: inductor builds C++ kernels on the CPU and there is no C++ compiler."""
    if ctx.host.cxx is None:
        return [], (
            "torch.compile (inductor) builds C++ kernels on the CPU and no C++ compiler was found "
            "($CXX, g++, c++, clang++); install one (Debian: apt-get install g++)"
        )
    return adds, None


def _allocator(ctx: Context) -> tuple[list[str], str | None]:
    if ctx.host.allocator is None:
        return [], (
            "neither jemalloc (libjemalloc.so.2: apt-get install libjemalloc2) nor tcmalloc "
            "(libtcmalloc.so.4: apt-get install libgoogle-perftools4) is installed"
        )
    return [f"allocator={ctx.host.allocator}"], None


def _omp(ctx: Context) -> tuple[list[str], str | None]:
    cpus = ctx.host.cpus
    if cpus < 2:
        return [], "a single CPU: there are no OpenMP threads to pin"
    return [f"omp_num_threads={cpus}", "omp_proc_bind=close", "omp_places=cores"], None


CPU = Ladder(
    title="CPU optimization ladder",
    rungs=("fp32", "bf16", "channels_last", "compile", "allocator", "omp"),
    labels={
        "fp32": "fp32",
        "bf16": "+ bf16",
        "channels_last": "+ channels_last",
        "compile": "+ torch.compile",
        "allocator": "+ allocator",
        "omp": "+ OpenMP pinning",
    },
    managed=("precision", "channels_last", "compile", "allocator", "omp_num_threads", "omp_proc_bind", "omp_places"),
    adds={
        "fp32": lambda ctx: (["precision=fp32", "channels_last=false", "compile=off", "allocator=default"], None),
        "bf16": bf16_on_cpu,
        "channels_last": lambda ctx: (["channels_last=true"], None),
        "compile": lambda ctx: compile_on_cpu(ctx, ["compile=inductor"]),
        "allocator": _allocator,
        "omp": _omp,
    },
    min_trajectory_samples=8,
)
"""The CPU ladder."""
