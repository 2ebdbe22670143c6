"""The CLI's consoles and its one way to fail: a clear message and a non-zero exit."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import NoReturn

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


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` (see :func:`error`) and exit with ``code``."""
    error(message)
    sys.exit(code)


def warn(message: str) -> None:
    """Print ``warning: message`` to stderr (escaped)."""
    err.print(f"[yellow]warning:[/yellow] {escape(message)}", highlight=False, soft_wrap=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM stop this command the way Ctrl-C does (a KeyboardInterrupt in the main thread),
    so a run or benchmark stopped by a supervisor keeps what it measured and cleans up."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
