"""The CLI's consoles: results on stdout, errors and warnings on stderr, and the one sanitizer of
untrusted text on its way to a terminal.

Result files, system descriptions, bands and paths may be hostile (DESIGN.md, "Untrusted
input"): before such text is printed, :func:`plain` removes escape sequences (ANSI CSI,
OSC, DCS and the rest, 7- and 8-bit: ECMA-48 section 5) and every other C0/C1 control and
bidirectional override character, and :func:`markup` also escapes rich markup, so a string
can neither drive the terminal (clear it, retitle it, forge a hyperlink) nor restyle or
break the output.

Commands do not exit on errors themselves: they raise a :class:`suite.errors.TrainbenchError`,
which ``suite.commands`` prints with :func:`error` and maps to its exit status.
"""

from __future__ import annotations

import re
import signal
from types import FrameType
from typing import Any

from rich.console import Console
from rich.markup import escape

console = Console()
err = Console(stderr=True)

_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC ... BEL or ST (titles, hyperlinks)
    r"|\x1b[P^_X][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, PM, APC, SOS ... ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI (colours, cursor moves, screen clears)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|[\x90\x9d\x9e\x9f][^\x07\x9c]*(?:\x07|\x9c)?"  # 8-bit DCS, OSC, PM, APC
    r"|\x1b[ -/]*[0-~]?"  # any other escape sequence
)
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def plain(text: object) -> str:
    """``text`` as one line of inert characters: escape sequences removed, other controls (newlines,
    tabs, bidirectional overrides) replaced by spaces. Rich markup is left as it is."""
    return _CONTROLS.sub(" ", _ESCAPES.sub("", str(text)))


def markup(text: object) -> str:
    """:func:`plain` ``text`` with rich markup escaped: safe inside a string that rich renders as markup."""
    return escape(plain(text))


def plain_tree(value: Any) -> Any:
    """``value`` (parsed JSON) with every string, keys included, passed through :func:`plain`."""
    if isinstance(value, str):
        return plain(value)
    if isinstance(value, dict):
        return {plain(k): plain_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_tree(v) for v in value]
    return value


def error(message: str) -> None:
    """Print ``error: message`` to stderr.

    The message is sanitized (:func:`markup`): it carries paths, log lines and user input,
    where ``[...]`` is text, not rich markup, and escape sequences are never passed on.
    """
    err.print(f"[bold red]error:[/bold red] {markup(message)}", highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    """Print ``warning: message`` to stderr (sanitized: :func:`markup`)."""
    err.print(f"[yellow]warning:[/yellow] {markup(message)}", highlight=False, soft_wrap=True)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM stop this command the way Ctrl-C does (a KeyboardInterrupt in the main thread),
    so a run or benchmark stopped by a supervisor keeps what it measured and cleans up."""
    signal.signal(signal.SIGTERM, _raise_interrupt)
