"""Rich tables that fit the terminal they are printed on.

A table whose columns all fit is printed without wrapping anything, however wide the
terminal. When the terminal is narrower than the table, the columns that matter least
are left out, one at a time, until the rest fit; only free-text columns (a system name,
a config) may then wrap, and never below :data:`MIN_WRAP` characters. Output that goes
to a file or a pipe has no terminal width: it is laid out at the table's own width (at
most :data:`PIPE_WIDTH`), not at rich's 80-column default, unless ``COLUMNS`` says
otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

MIN_WRAP = 16
"""Narrowest a wrapping column may become, in characters."""
PIPE_WIDTH = 240
"""Widest layout for output that is not a terminal (a log file, a pipe), in characters."""


@dataclass(frozen=True)
class Col:
    """A column of a fitted table.

    Attributes:
        header: the column's heading.
        drop: 0 for a column that is always shown; columns with higher numbers are left
            out first when the terminal is too narrow.
        wrap: free text that may wrap (folding words longer than the column); other
            columns never wrap.
        justify: ``left`` or ``right`` (numbers).
    """

    header: str
    drop: int = 0
    wrap: bool = False
    justify: Literal["left", "right"] = "left"


def _cell_len(markup: str) -> int:
    return max((Text.from_markup(line).cell_len for line in markup.split("\n")), default=0)


def needed_width(cols: Sequence[Col], rows: Sequence[Sequence[str]]) -> int:
    """Characters the table needs with every no-wrap column at full width and wrapping columns at
    most :data:`MIN_WRAP` wide (borders and padding included: 3 per column, plus 1)."""
    total = 3 * len(cols) + 1
    for i, c in enumerate(cols):
        natural = max([_cell_len(c.header), *(_cell_len(r[i]) for r in rows)])
        total += min(natural, MIN_WRAP) if c.wrap else natural
    return total


def fitted_table(title: str, cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> Table:
    """A table of ``rows`` (rich markup; untrusted text must be escaped by the caller) that fits ``width``.

    Columns are left out, the highest ``drop`` first (the rightmost among equals),
    while the table needs more than ``width`` characters; columns with ``drop == 0``
    always stay. The title names the columns left out.
    """
    kept = list(range(len(cols)))
    while needed_width([cols[i] for i in kept], [[r[i] for i in kept] for r in rows]) > width:
        candidates = [i for i in kept if cols[i].drop > 0]
        if not candidates:
            break
        kept.remove(max(candidates, key=lambda i: (cols[i].drop, i)))
    left_out = [cols[i].header for i in range(len(cols)) if i not in kept]
    if left_out:
        title += f" (narrow terminal: {', '.join(left_out)} left out)"
    table = Table(title=title, title_justify="left")
    for i in kept:
        c = cols[i]
        table.add_column(c.header, justify=c.justify, no_wrap=not c.wrap, overflow="fold" if c.wrap else "ellipsis")
    for r in rows:
        table.add_row(*(r[i] for i in kept))
    return table


def layout_width(console: Console) -> int:
    """The width to lay tables out at: the terminal's (or ``COLUMNS``), else :data:`PIPE_WIDTH`."""
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console.width
    return PIPE_WIDTH


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` at :func:`layout_width`: a terminal's width, or, for a file or a pipe, the
    table's own width (rich alone would wrap it at 80 columns there)."""
    width = layout_width(console)
    if width <= console.width:
        console.print(table)
        return
    wide = Console(file=console.file, width=width, color_system=None, highlight=False)
    wide.print(table, width=min(width, wide.measure(table).maximum))
