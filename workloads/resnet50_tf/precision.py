"""Whether TensorFlow can train bf16 on this host's CPU, decided before the first step.

TensorFlow 2.15 picks its oneDNN bf16 kernels from the CPU's own flags (``avx512_bf16``,
``amx_bf16``), not from oneDNN's ISA cap. With ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``)
below the CPU's bf16 ISA, the capped oneDNN cannot create those kernels, and the first step
dies with ``could not create a primitive descriptor for a convolution forward propagation
primitive`` (seen with ``ONEDNN_MAX_CPU_ISA=AVX2`` on an avx512_bf16 Zen 4, 2026-11-25).
``ATEN_CPU_CAPABILITY`` is torch's and does not concern TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.isa import ONEDNN_CAP_VARS, IsaInfo


def onednn_only(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` reduced to oneDNN's ISA caps: what TensorFlow's CPU kernels obey."""
    return {k: env[k] for k in ONEDNN_CAP_VARS if env.get(k)}


def bf16_refusal(isa: IsaInfo) -> str | None:
    """Why precision=bf16 cannot train in TensorFlow here, with the fix; None when it can.

    bf16 is refused only where the CPU has bf16 matrix instructions and a oneDNN cap hides
    them: the combination TensorFlow 2.15 cannot run. A CPU without them at all runs
    TensorFlow's non-oneDNN bf16 kernels (slow, but it trains), as without a cap.

    Args:
        isa: the host's ISA with only oneDNN's caps applied
            (``harness.system.read_isa(env=onednn_only(os.environ))``, or
            :func:`harness.isa.detect_isa` in tests).
    """
    if not isa.bf16_native_cpu or isa.bf16_native:
        return None
    return (
        f"precision=bf16 cannot train in TensorFlow on this CPU: {'; '.join(isa.caps)}, and TensorFlow picks its "
        "oneDNN bf16 kernels from the CPU's own flags, which the capped oneDNN cannot create (the first "
        "convolution would fail). Fix: --set precision=fp32 to measure the capped ISA, or run without "
        f"the cap ({' / '.join(ONEDNN_CAP_VARS)}) to measure bf16"
    )
