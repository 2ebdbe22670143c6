"""``trainbench submit``: copy result files into the submission tree, checking them on the way in.

All or nothing: when any given result has an error finding, nothing is copied. The
bytes copied are the bytes checked (read once, size-limited, never through a link).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from suite.errors import BadInput
from suite.files import FileProblem, parse_json, read_bounded, read_json
from suite.results import Result, ResultError, load_document
from suite.specs import load_specs
from suite.systems import SYSTEM_NAME_PATTERN, SystemDescription, inconsistencies, price_matches
from suite.validation.duplicates import find_twins
from suite.validation.findings import Findings
from suite.validation.result_checks import CheckContext, check_result, parse_result
from suite.validation.tree import RESULT_NAME


class SubmitError(BadInput, ValueError):
    """Nothing was copied; ``findings`` says why.

    Exit status 1 when the results have error findings, 2 for bad input (a name, a
    missing or invalid system description).
    """

    def __init__(self, message: str, findings: Findings | None = None) -> None:
        self.findings = findings or Findings()
        super().__init__(message, exit_code=1 if len(self.findings) else None)


@dataclass
class SubmitOutcome:
    """What ``submit`` did.

    Attributes:
        copied: (source, destination) of each result copied.
        system_written: the system description written, if a new one was.
        findings: warnings and notes about the results (errors stop the copy).
    """

    copied: list[tuple[Path, Path]] = field(default_factory=list)
    system_written: Path | None = None
    findings: Findings = field(default_factory=Findings)


def _existing(target: Path) -> tuple[int, list[tuple[str, Result]]]:
    """(highest n, (path, result) of each readable result) already in ``target``."""
    high = 0
    found: list[tuple[str, Result]] = []
    if not target.is_dir():
        return 0, found
    for p in sorted(target.iterdir()):
        m = RESULT_NAME.match(p.name)
        if not m or p.is_symlink():
            continue
        high = max(high, int(m.group(1)))
        try:
            found.append((str(p), load_document(read_json(p), check_digest=False)))
        except (FileProblem, ResultError):
            continue  # the validator reports a broken file already in the tree
    return high, found


def _system(root: Path, submitter: str, system: str, new: SystemDescription | None) -> tuple[SystemDescription, bool]:
    path = root / submitter / "systems" / f"{system}.json"
    if path.exists() or path.is_symlink():
        if new is not None:
            raise SubmitError(f"{path} exists already; drop --describe-system or edit the file")
        try:
            return SystemDescription.model_validate(read_json(path)), False
        except (FileProblem, ValueError) as exc:
            raise SubmitError(f"{path}: invalid system description: {exc}") from exc
    if new is None:
        raise SubmitError(
            f"no system description {path}; write one with --describe-system (it is filled in from the first "
            "result's environment; give the price with --instance-type or --price-per-hour and --price-source, "
            "or --no-price REASON)"
        )
    return new, True


def submit_results(
    paths: list[Path],
    root: Path,
    submitter: str,
    system: str,
    ctx: CheckContext,
    new_system: SystemDescription | None = None,
    dry_run: bool = False,
) -> SubmitOutcome:
    """Check ``paths`` and copy them to ``root/submitter/results/system/<workload>/result_<n>.json``.

    Args:
        paths: result files as ``trainbench run`` wrote them.
        root: the submissions directory.
        submitter: the submitting organisation (a directory name).
        system: the system name; each result must have been recorded with ``--system`` equal to it.
        ctx: rules and specs for the per-result checks.
        new_system: a description to write when the system has none yet.
        dry_run: check only, copy nothing.

    Raises:
        SubmitError: a name is invalid, the system description is missing or invalid,
            or a result has error findings (then nothing is copied).
    """
    for label, value in (("submitter", submitter), ("system", system)):
        if not re.match(SYSTEM_NAME_PATTERN, value):
            raise SubmitError(f"--{label} {value!r}: use letters, digits, '.', '_' and '-' only")
    desc, is_new = _system(root, submitter, system, new_system)
    spec_for = {s.workload: name for name, s in load_specs(ctx.specs_dir).items()}
    findings = Findings()
    staged: list[tuple[Path, str, bytes, Result]] = []
    for path in paths:
        where = str(path)
        try:
            if path.is_symlink():
                path = path.resolve()
            data = read_bounded(path)
            doc = parse_json(data)
        except FileProblem as exc:
            findings.error(exc.code, where, exc.message, exc.fix)
            continue
        result = parse_result(doc, where, findings)
        if result is None:
            continue
        check_result(result, where, findings, ctx)
        if result.system != system:
            findings.error(
                "system-mismatch",
                f"{where}#system",
                f"recorded on system {result.system!r}, not {system!r}",
                f"re-run with --system {system}, or submit with --system {result.system}",
            )
        if result.workload not in spec_for:
            findings.error(
                "workload-mismatch",
                f"{where}#workload",
                f"unknown workload {result.workload!r}",
                "submit results of a workload of this suite",
            )
            continue
        for loc, message in inconsistencies(desc, result):
            findings.error("system-inconsistent", f"{where}#{loc}", message, "submit it under the system it ran on")
        if result.cost is not None and not price_matches(desc, result.cost.usd_per_hour):
            findings.error(
                "cost-mismatch",
                f"{where}#cost/usd_per_hour",
                f"priced at {result.cost.usd_per_hour} USD/hour; the system description says {desc.price.usd_per_hour}",
                "use one price for the system",
            )
        staged.append((path, spec_for[result.workload], data, result))
    targets: dict[str, tuple[int, list[tuple[str, Result]]]] = {}
    for path, workload, _, result in staged:
        targets.setdefault(workload, _existing(root / submitter / "results" / system / workload))
        targets[workload][1].append((str(path), result))
    for _, runs in targets.values():
        for twin in find_twins([r for _, r in runs]):
            findings.error(
                twin.code,
                runs[twin.index][0],
                f"the same run as {runs[twin.original][0]} ({twin.reason}): already submitted, or given twice",
                "submit each measured run once",
            )
    if findings.has_errors():
        raise SubmitError("nothing was copied: the results have error findings", findings)
    outcome = SubmitOutcome(findings=findings)
    if dry_run:
        return outcome
    if is_new:
        sys_path = root / submitter / "systems" / f"{system}.json"
        sys_path.parent.mkdir(parents=True, exist_ok=True)
        sys_path.write_text(json.dumps(desc.model_dump(mode="json"), indent=1) + "\n")
        outcome.system_written = sys_path
    for path, workload, data, _ in staged:
        target = root / submitter / "results" / system / workload
        target.mkdir(parents=True, exist_ok=True)
        high = targets[workload][0] + 1
        targets[workload] = (high, targets[workload][1])
        dest = target / f"result_{high}.json"
        with dest.open("xb") as f:  # never overwrite
            f.write(data)
        outcome.copied.append((path, dest))
    return outcome
