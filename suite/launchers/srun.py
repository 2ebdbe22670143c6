"""The words a launcher's Slurm plan is written in: batch-script tokens that the shell expands
(:class:`Shell`), the nodes' interpreter (:data:`PY`), and a line of tokens quoted for bash."""

from __future__ import annotations

import shlex


class Shell(str):
    """A script token that the shell must expand (written as is, never quoted)."""

    __slots__ = ()


PY = Shell('"$PY"')
"""The nodes' Python interpreter in a command (the batch script sets PY once)."""


def line(tokens: list[str]) -> str:
    """``tokens`` as one line of bash: :class:`Shell` tokens as they are, every other token quoted."""
    return " ".join(t if isinstance(t, Shell) else shlex.quote(t) for t in tokens)
