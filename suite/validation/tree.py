"""Walking a submission tree: its layout, its system descriptions and each result file in it.

Layout (modelled on MLPerf's)::

    <root>/<submitter>/systems/<system>.json
    <root>/<submitter>/results/<system>/<workload>/result_<n>.json

``<root>`` may also be a single submitter's directory. Every file is read with the one
bounded reader and without following links (:mod:`suite.files`); every problem is a
finding. :func:`validate_tree` walks the tree, then scores its runs
(:mod:`suite.validation.scoring`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from suite.files import MAX_FILES, FileProblem, link_problem, read_json
from suite.results import Result
from suite.rules import Rules
from suite.specs import SPECS_DIR, ConfigError, load_specs
from suite.systems import (
    SYSTEM_NAME_PATTERN,
)
from suite.validation.bands import BandsFile
from suite.validation.findings import Findings
from suite.validation.outcomes import CheckedTree, RunEntry, TreeRuns, ValidatorSetupError
from suite.validation.result_checks import CheckContext, check_result, parse_result
from suite.validation.scoring import attribute, score_runs
from suite.validation.system_files import check_against_system, load_system

RESULT_NAME = re.compile(r"^result_([1-9][0-9]{0,5})\.json$")
"""Result files are ``result_<n>.json``, n = 1, 2, ..."""
ROOT_FILES = frozenset({"bands.yaml", "README.md", ".gitkeep"})
"""Files that may sit at the top of the submissions tree."""


@dataclass(kw_only=True)
class _Walk(TreeRuns):
    """A walk in progress: what it found so far (:class:`TreeRuns`) and where it stands."""

    root: Path
    workloads: dict[str, str]
    files: int = 0
    stopped: bool = False

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    def children(self, directory: Path) -> list[Path]:
        """Entries of ``directory``, sorted; links are reported and skipped."""
        if self.stopped:
            return []
        out: list[Path] = []
        try:
            names = sorted(Path(e.path) for e in os.scandir(directory))
        except OSError as exc:
            self.findings.error(
                "unreadable", self.rel(directory), f"cannot list the directory: {exc.strerror}", "make it readable"
            )
            return out
        for entry in names:
            self.files += 1
            if self.files > MAX_FILES:
                self.findings.error(
                    "too-many-files",
                    self.rel(directory),
                    f"more than {MAX_FILES} files; the rest were not checked",
                    "a submission holds a few result files per workload; remove the rest",
                )
                self.stopped = True
                return out
            problem = link_problem(entry, self.root)
            if problem is not None:
                self.findings.error(problem.code, self.rel(entry), problem.message, problem.fix)
                continue
            out.append(entry)
        return out


def _check_run_file(walk: _Walk, path: Path, submitter: str, system: str, workload: str) -> None:
    where = walk.rel(path)
    local = Findings()
    try:
        doc = read_json(path)
    except FileProblem as exc:
        walk.findings.error(exc.code, where, exc.message, exc.fix)
        return
    try:
        result = parse_result(doc, where, local)
        if result is not None:
            check_result(result, where, local, walk.ctx)
            _check_place(walk, result, where, local, submitter, system, workload)
    except Exception as exc:  # a validator bug must be a finding, never a crash on hostile input
        local.error(
            "validator-error",
            where,
            f"the validator failed on this file: {type(exc).__name__}: {exc}",
            "report this as a trainbench bug, with the file",
        )
        result = None
    walk.findings.extend(local)
    if result is not None:
        walk.entries.append(RunEntry(where, result, submitter, system, workload, valid=not local.has_errors()))


def _check_place(
    walk: _Walk, result: Result, where: str, local: Findings, submitter: str, system: str, workload: str
) -> None:
    if result.system != system:
        local.error(
            "system-mismatch",
            f"{where}#system",
            f"the run was recorded on system {result.system!r} but is filed under {system!r}",
            f"file it under results/{result.system}/, or re-run with --system {system}",
        )
    if result.workload not in (workload, walk.workloads.get(workload)):
        local.error(
            "workload-mismatch",
            f"{where}#workload",
            f"a {result.workload!r} run filed under workload {workload!r}",
            f"file it under {result.workload}/",
        )
    check_against_system(walk, result, where, submitter, system)


def _walk_submitter(walk: _Walk, directory: Path) -> None:
    submitter = directory.name
    parts = {p.name: p for p in walk.children(directory)}
    for name, p in parts.items():
        if name not in ("systems", "results"):
            walk.findings.error(
                "unexpected-file",
                walk.rel(p),
                "not part of a submission (only systems/ and results/ belong in a submitter's directory)",
                "remove it",
            )
    systems_dir, results_dir = parts.get("systems"), parts.get("results")
    for d, what in ((systems_dir, "systems"), (results_dir, "results")):
        if d is None or not d.is_dir():
            walk.findings.error(
                "layout",
                f"{walk.rel(directory)}/{what}",
                f"the submitter has no {what}/ directory",
                f"create {what}/ (see submissions/README.md)",
            )
    if systems_dir is not None and systems_dir.is_dir():
        for p in walk.children(systems_dir):
            if p.is_file() and p.suffix == ".json":
                load_system(walk, p, walk.rel(p), submitter)
            else:
                walk.findings.error(
                    "unexpected-file", walk.rel(p), "only <system>.json files belong in systems/", "remove it"
                )
    if results_dir is None or not results_dir.is_dir():
        return
    for sys_dir in walk.children(results_dir):
        if not sys_dir.is_dir() or not re.match(SYSTEM_NAME_PATTERN, sys_dir.name):
            walk.findings.error(
                "layout",
                walk.rel(sys_dir),
                "results/ holds one directory per system",
                "move it to results/<system>/<workload>/result_<n>.json",
            )
            continue
        if (submitter, sys_dir.name) not in walk.system_files:
            walk.findings.error(
                "system-missing",
                walk.rel(sys_dir),
                f"no system description systems/{sys_dir.name}.json for these results",
                "add it (`trainbench submit --describe-system` writes one from a result)",
            )
        for wl_dir in walk.children(sys_dir):
            if not wl_dir.is_dir() or wl_dir.name not in walk.workloads:
                walk.findings.error(
                    "layout",
                    walk.rel(wl_dir),
                    f"not a workload directory; workloads: {', '.join(sorted(walk.workloads))}",
                    "results go in results/<system>/<workload>/result_<n>.json",
                )
                continue
            for f in walk.children(wl_dir):
                if not RESULT_NAME.match(f.name):
                    walk.findings.error(
                        "unexpected-file",
                        walk.rel(f),
                        "only result_<n>.json files belong here",
                        "remove it (trainbench submit copies only the result JSON)",
                    )
                    continue
                _check_run_file(walk, f, submitter, sys_dir.name, wl_dir.name)


def validate_tree(
    path: Path,
    rules: Rules,
    bands: BandsFile,
    specs_dir: Path = SPECS_DIR,
    strict: bool = False,
) -> CheckedTree:
    """Check every file of a submissions tree and every set of runs in it.

    Args:
        path: the submissions root (one directory per submitter) or one submitter's directory.
        rules: the submission rules (:func:`suite.rules.load_rules`).
        bands: the reference bands (:func:`suite.validation.bands.load_bands`).
        specs_dir: the workload specs that define the official configs.
        strict: report warnings as errors.

    Raises:
        ValidatorSetupError: ``path`` is not a directory, or the workload specs cannot be loaded.
    """
    if not path.is_dir():
        raise ValidatorSetupError(f"{path}: not a directory; pass the submissions directory (e.g. submissions/)")
    try:
        specs = load_specs(specs_dir)
    except ConfigError as exc:
        raise ValidatorSetupError(f"cannot load the workload specs: {exc}") from exc
    root = path.resolve()
    walk = _Walk(
        root=root,
        ctx=CheckContext(rules, specs_dir),
        bands=bands,
        workloads={name: s.workload for name, s in specs.items()},
    )
    if (root / "results").is_dir() or (root / "systems").is_dir():
        _walk_submitter(walk, root)
    else:
        for entry in walk.children(root):
            if entry.is_dir():
                _walk_submitter(walk, entry)
            elif entry.name not in ROOT_FILES:
                walk.findings.warning(
                    "unexpected-file",
                    walk.rel(entry),
                    "not a submitter directory or a known top-level file",
                    "remove it",
                )
    if not walk.entries:
        walk.findings.warning(
            "empty-submission",
            ".",
            "no result files were found",
            "submit results with trainbench submit (layout: <submitter>/results/<system>/<workload>/result_<n>.json)",
        )
    groups = score_runs(walk)
    findings = walk.findings.promoted() if strict else walk.findings
    attribute(groups, findings, walk.system_files)
    return CheckedTree(root, findings, groups, walk.systems, walk.files, strict)
