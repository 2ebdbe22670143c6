"""Checks every workload applies to its own training step."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the TensorFlow image has no torch; the error class is shared by every workload
    import torch


class WorkloadRefused(RuntimeError):
    """The workload cannot run this configuration on this host; raised before the first step.

    The message says why and gives the fix; the rank records it as the run's error and exits
    2 without a traceback.
    """


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the run cannot give a valid result."""


def check_loss(loss: torch.Tensor) -> None:
    """Raise :class:`NonFiniteLossError` if the scalar ``loss`` is NaN or infinite.

    Reads the value back to the host (a device sync on GPU; free on CPU).
    """
    value = float(loss.detach())
    if not math.isfinite(value):
        raise NonFiniteLossError(f"training loss is {value}; the run is invalid")
