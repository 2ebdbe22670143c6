"""Validator output: a rich table for people, JSON and Markdown for CI."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from suite import __version__
from suite.console import markup
from suite.markdown import escape as md_escape
from suite.validation.findings import Finding, Findings, Severity
from suite.validation.outcomes import CheckedTree

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}
_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def _sorted(findings: Findings) -> list[Finding]:
    return sorted(findings, key=lambda f: (_ORDER[f.severity], f.where, f.code))


def verdict_line(tree: CheckedTree) -> str:
    """One line: compliant or not, with the counts."""
    f = tree.findings
    counts = (
        f"{f.count(Severity.ERROR)} error(s), {f.count(Severity.WARNING)} warning(s), "
        f"{f.count(Severity.INFO)} note(s) in {tree.files} files"
    )
    strict = " (--strict: warnings count as errors)" if tree.strict else ""
    return f"{'COMPLIANT' if tree.compliant else 'NOT COMPLIANT'}: {counts}{strict}"


def findings_table(findings: Findings, title: str, show_info: bool = True) -> Table:
    """Every finding, worst first: severity, code, where, message, fix."""
    t = Table(title=title, title_justify="left", show_lines=False)
    for col in ("severity", "code", "where", "message", "fix"):
        t.add_column(col, overflow="fold")
    for f in _sorted(findings):
        if f.severity is Severity.INFO and not show_info:
            continue
        cells = (f.code, f.where, f.message, f.fix)
        t.add_row(f"[{_STYLE[f.severity]}]{f.severity.value}[/]", *(markup(c) for c in cells))
    return t


def _fmt(v: float | None, spec: str = ".4g") -> str:
    return "-" if v is None else f"{v:{spec}}"


def groups_table(tree: CheckedTree) -> Table:
    """One row per scored configuration: runs, score, band and verdict."""
    t = Table(title="scores", title_justify="left")
    for col in ("system", "workload", "division", "profile", "runs", "score (samples/s)", "band", "verdict", "ok"):
        t.add_column(col)
    for g in tree.groups:
        band = f"{g.band.name}: {g.band.describe()}" if g.band else "none"
        t.add_row(
            *(markup(c) for c in (g.system, g.workload, g.division, g.profile)),
            f"{g.valid_runs}/{g.required_runs}",
            _fmt(g.score),
            markup(band),
            g.verdict or "-",
            "[green]yes[/]" if g.errors == 0 else f"[red]{g.errors} err[/]",
        )
    return t


def to_json(tree: CheckedTree) -> dict[str, Any]:
    """The checked tree as a JSON-ready dict (stable keys for CI)."""
    f = tree.findings
    return {
        "kind": "trainbench.validation",
        "trainbench_version": __version__,
        "root": str(tree.root),
        "strict": tree.strict,
        "compliant": tree.compliant,
        "exit_code": tree.exit_code,
        "counts": {s.value: f.count(s) for s in Severity},
        "files": tree.files,
        "bands": tree.bands_source,
        "groups": [g.to_dict() for g in tree.groups],
        "findings": [x.to_dict() for x in _sorted(tree.findings)],
    }


def _md(text: object) -> str:
    return md_escape(text)


def to_markdown(tree: CheckedTree) -> str:
    """The checked tree as Markdown (a verdict line, the scores, then every finding)."""
    lines = [f"# trainbench validation: {_md(tree.root.name)}", "", f"**{_md(verdict_line(tree))}**", ""]
    if tree.bands_source:
        lines += [f"Reference bands: {_md(tree.bands_source)}", ""]
    if tree.groups:
        lines += [
            "## Scores",
            "",
            "| system | workload | division | profile | runs | score (samples/s) | band | verdict | errors |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for g in tree.groups:
            band = f"{g.band.name}: {g.band.describe()}" if g.band else "none"
            lines.append(
                f"| {_md(g.system)} | {_md(g.workload)} | {_md(g.division)} | {_md(g.profile)} | "
                f"{g.valid_runs}/{g.required_runs} | {_fmt(g.score)} | {_md(band)} | {g.verdict or '-'} | {g.errors} |"
            )
        lines.append("")
    lines += ["## Findings", ""]
    if not len(tree.findings):
        lines.append("None.")
    else:
        lines += ["| severity | code | where | message | fix |", "| --- | --- | --- | --- | --- |"]
        lines += [
            f"| {f.severity.value} | {f.code} | {_md(f.where)} | {_md(f.message)} | {_md(f.fix)} |"
            for f in _sorted(tree.findings)
        ]
    return "\n".join(lines) + "\n"
