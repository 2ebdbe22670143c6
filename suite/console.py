"""The CLI's consoles and its one way to fail: a clear message and a non-zero exit."""

from __future__ import annotations

import sys
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
