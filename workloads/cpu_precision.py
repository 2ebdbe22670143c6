"""The precision of a CPU workload, decided on the host that runs it.

``precision=auto`` (the default of the CPU workloads) becomes bf16 where the effective ISA
has native bf16 matrix instructions and fp32 elsewhere (:func:`harness.precision.choose_precision`
over :func:`harness.system.read_isa`). The rank decides before it builds the workload, on
its own host, so a docker container or a Slurm node decides for itself; the workload
then only ever sees ``fp32`` or ``bf16``. An explicit precision is kept, and an explicit
``bf16`` without native support is marked emulated, with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from harness.precision import PrecisionChoice, choose_precision
from harness.system import read_isa

P = TypeVar("P", bound=BaseModel)


def decide(requested: str, env: Mapping[str, str] | None = None) -> PrecisionChoice:
    """The precision this host runs ``requested`` with (``auto``, ``fp32`` or ``bf16``).

    Args:
        requested: the configured precision.
        env: the environment whose ``ONEDNN_MAX_CPU_ISA``/``ATEN_CPU_CAPABILITY`` cap the ISA
            (default ``os.environ``: the rank's own).

    Raises:
        ValueError: ``requested`` is not a precision :func:`choose_precision` knows.
    """
    return choose_precision(requested, read_isa(env=os.environ if env is None else env))


def resolve_params(params: P, env: Mapping[str, str] | None = None) -> tuple[P, PrecisionChoice | None]:
    """``params`` with ``precision`` decided for this host, and the decision.

    Params without a ``precision`` field are returned unchanged with None. Otherwise the
    decision is made for every value (so an explicit ``bf16`` on a CPU without native bf16
    is marked emulated), and ``precision`` is replaced by the chosen value.

    Raises:
        ValueError: the precision is not one :func:`choose_precision` knows.
    """
    requested: Any = getattr(params, "precision", None)
    if not isinstance(requested, str):
        return params, None
    choice = decide(requested, env)
    if choice.chosen == requested:
        return params, choice
    return params.model_copy(update={"precision": choice.chosen}), choice
