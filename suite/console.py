"""The CLI's consoles: results on stdout, errors and warnings on stderr (escaped: no rich markup
from paths, log lines or user input).

Commands do not exit on errors themselves: they raise a :class:`suite.errors.TrainbenchError`,
which ``suite.commands`` prints with :func:`error` and maps to its exit status.
"""

from __future__ import annotations

import signal
from types import FrameType

from rich.console import Console
from rich.markup import escape

console = Console()
err = Console(stderr=True)


def error(message: str) -> None:
    """Print ``error: message`` to stderr.

    The message is escaped: it carries paths, log lines and user input, where
    ``[...]`` is text, not rich markup.
    """
    err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    """Print ``warning: message`` to stderr (escaped)."""
    err.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM stop this command the way Ctrl-C does (a KeyboardInterrupt in the main thread),
    so a run or benchmark stopped by a supervisor keeps what it measured and cleans up."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
