"""A comparison for people and machines: a rich table for the terminal, Markdown, and JSON.

Strings from result files (system names, settings, paths) are untrusted: the terminal
gets them as plain ``Text`` (never parsed as rich markup) without control characters,
and Markdown gets them escaped (:mod:`suite.markdown`), with links only to http(s).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from suite.compare.analysis import Comparison, to_dict
from suite.markdown import escape, link, plain


def _n(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _ci(low: float | None, high: float | None) -> str:
    if low is None:
        return "-"
    return f"{_n(low)}–{_n(high)}" if high is not None else f"{_n(low)}–unbounded"


def _r(x: float) -> str:
    return f"{x:#.3g}".rstrip(".")


def headline(c: Comparison) -> str:
    """The answer in one line, e.g. ``B is 1.42x A (95% CI 1.38–1.46): significantly faster``."""
    e = c.estimate
    ci = f"95% CI {_r(e.low)}–{_r(e.high)}" if e.low is not None and e.high is not None else "no interval"
    if not c.comparable:
        return f"INCOMPARABLE ({'; '.join(c.reasons)}): B/A = {_r(e.ratio)} is shown for reference only"
    if e.significant is None:
        return f"B/A = {_r(e.ratio)} ({ci}): undetermined, too few repeats to tell"
    if not e.significant:
        return f"no significant difference: B/A = {_r(e.ratio)} ({ci})"
    if e.ratio >= 1:
        return f"B is {_r(e.ratio)}x A ({ci}): significantly faster"
    return f"B is {_r(e.ratio)}x A, {c.slowdown_pct:.3g}% slower ({ci}): significantly slower"


def gate_line(c: Comparison) -> str | None:
    """What ``--fail-above`` decided, or None without it."""
    if c.fail_above_pct is None:
        return None
    pct = f"--fail-above {c.fail_above_pct:g}%"
    if not c.comparable:
        return f"{pct}: refused, the results are incomparable"
    if c.regression is None:
        return f"{pct}: undetermined (no interval), not counted as a regression"
    if c.regression:
        return f"{pct}: REGRESSION, B is {c.slowdown_pct:.3g}% slower than A and the slowdown is significant"
    return f"{pct}: pass"


def method_line(c: Comparison) -> str:
    """How the interval was computed, in words."""
    return f"method: {c.estimate.description}; significant when the 95% CI of B/A excludes 1"


def rich_view(c: Comparison) -> Group:
    """The comparison for a terminal: headline, gate, one ``A | B`` table (the sides, then the settings that
    differ), notes and method.

    The table has a row per fact and a column per side, so it narrows with the
    console: long values fold instead of being cut.
    """
    bad = not c.comparable or bool(c.regression)
    parts: list[Text | Table] = [Text(headline(c), style="bold red" if bad else "bold")]
    gate = gate_line(c)
    if gate:
        parts.append(Text(gate, style="bold red" if bad else "green"))
    table = Table(expand=False, show_lines=False)
    table.add_column("", style="bold", overflow="fold")
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")
    rows = [
        ("config", c.a.name, c.b.name),
        ("samples/s", _n(c.a.throughput), _n(c.b.throughput)),
        ("run's 95% CI", _ci(c.a.ci_low, c.a.ci_high), _ci(c.b.ci_low, c.b.ci_high)),
        ("runs, windows", f"{c.a.results}, {c.a.windows}", f"{c.b.results}, {c.b.windows}"),
        ("hardware", c.a.hardware, c.b.hardware),
        ("source", ", ".join(c.a.sources), ", ".join(c.b.sources)),
    ]
    for i, (key, va, vb) in enumerate(rows):
        table.add_row(Text(key), Text(plain(va)), Text(plain(vb)), end_section=i == len(rows) - 1)
    for k in c.knobs:
        table.add_row(Text(plain(k.key), style="yellow"), Text(plain(k.a or "-")), Text(plain(k.b or "-")))
    parts.append(table)
    if not c.knobs:
        parts.append(Text("settings: identical"))
    for note in c.notes:
        parts.append(Text(f"note: {plain(note)}", style="yellow"))
    parts.append(Text(method_line(c), style="dim"))
    return Group(*parts)


def print_comparison(c: Comparison, console: Console) -> None:
    """Print :func:`rich_view` on ``console`` (its width decides the layout)."""
    console.print(rich_view(c))


def to_markdown(c: Comparison) -> str:
    """The comparison as a Markdown document; every string from the inputs is escaped."""
    lines = ["# trainbench compare", "", f"**{escape(headline(c))}**", ""]
    gate = gate_line(c)
    if gate:
        lines += [escape(gate), ""]
    lines += [
        "| | config | samples/s | 95% CI | runs | windows | hardware | source |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in (c.a, c.b):
        sources = ", ".join(link(src, src) for src in s.sources)
        lines.append(
            f"| {s.label} | {escape(s.name)} | {_n(s.throughput)} | {_ci(s.ci_low, s.ci_high)} | {s.results} "
            f"| {s.windows} | {escape(s.hardware)} | {sources} |"
        )
    lines += ["", "## Settings that differ", ""]
    if c.knobs:
        lines += ["| setting | A | B |", "| --- | --- | --- |"]
        lines += [f"| {escape(k.key)} | {escape(k.a or '-')} | {escape(k.b or '-')} |" for k in c.knobs]
    else:
        lines.append("None: the two configs are identical.")
    if c.notes:
        lines += ["", "## Notes", ""] + [f"- {escape(n)}" for n in c.notes]
    lines += ["", "## Method", "", escape(method_line(c)), ""]
    return "\n".join(lines)


def write_json(c: Comparison, path: Path) -> Path:
    """Write the comparison as indented JSON (NaN never appears: absent values are null)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_dict(c), indent=1, allow_nan=False) + "\n")
    return path
