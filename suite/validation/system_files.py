"""System description files in a submission tree: reading and checking one, and checking the
runs filed under a system against its description."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jsonschema
from pydantic import ValidationError

from suite.files import FileProblem, read_json
from suite.results import Result
from suite.systems import (
    SYSTEM_SCHEMA_PATH,
    SystemDescription,
    inconsistencies,
    price_matches,
    unit_problems,
)
from suite.validation.outcomes import TreeRuns


@functools.lru_cache(maxsize=1)
def _system_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SYSTEM_SCHEMA_PATH.read_text()))


def load_system(walk: TreeRuns, path: Path, where: str, submitter: str) -> None:
    """Read and check the system description ``path`` (shown as ``where``) of ``submitter``;
    a valid one goes into ``walk.systems``, every problem into ``walk.findings``."""
    walk.system_files[(submitter, path.stem)] = where
    try:
        doc = read_json(path)
    except FileProblem as exc:
        walk.findings.error(exc.code, where, exc.message, exc.fix)
        return
    errors = sorted(_system_validator().iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    for err in errors[:10]:
        loc = "/".join(str(p) for p in err.absolute_path) or "(top)"
        walk.findings.error(
            "system-schema",
            f"{where}#{loc}",
            f"system description: {err.message}",
            "fix the field (schema: suite/schemas/system-v1.schema.json; "
            "`trainbench submit --describe-system` writes a complete one)",
        )
    if errors:
        return
    try:
        system = SystemDescription.model_validate(doc)
    except ValidationError as exc:
        for e in exc.errors()[:10]:
            walk.findings.error(
                "system-schema",
                f"{where}#{'/'.join(str(p) for p in e['loc'])}",
                f"system description: {e['msg']}",
                "fix the field",
            )
        return
    if system.name != path.stem:
        walk.findings.error(
            "layout",
            f"{where}#name",
            f"name {system.name!r} differs from the file name {path.stem!r}",
            "make the name and the file name the same",
        )
    if system.submitter != submitter:
        walk.findings.error(
            "layout",
            f"{where}#submitter",
            f"submitter {system.submitter!r} differs from the directory {submitter!r}",
            "make them the same",
        )
    for loc, message in unit_problems(system):
        walk.findings.error("units", f"{where}#{loc}", message, "state the price in USD per hour")
    if system.price.usd_per_hour is None:
        walk.findings.warning(
            "price-missing",
            f"{where}#price/usd_per_hour",
            f"no price ({system.price.source}); samples per dollar is not ranked for it",
            "give usd_per_hour with its source, when the system can be rented",
        )
    walk.systems[(submitter, path.stem)] = system


def check_against_system(walk: TreeRuns, result: Result, where: str, submitter: str, system: str) -> None:
    """The run ``result`` (at ``where``) against the description of the system it is filed under.

    A description at odds with its runs is the description's fault: the finding is
    reported on it, so the runs themselves stay valid.
    """
    desc = walk.systems.get((submitter, system))
    if desc is None:
        return
    sys_where = walk.system_files[(submitter, system)]
    for loc, message in inconsistencies(desc, result):
        walk.findings.error(
            "system-inconsistent",
            sys_where,
            f"{message} (in {where}#{loc})",
            "describe the machine the runs really ran on, or file the runs under the right system",
        )
    if result.cost is not None and not price_matches(desc, result.cost.usd_per_hour):
        walk.findings.error(
            "cost-mismatch",
            f"{sys_where}#price/usd_per_hour",
            f"{where} was priced at {result.cost.usd_per_hour} USD/hour, the system description says "
            f"{desc.price.usd_per_hour}",
            "make the system's price the one the runs were priced with",
        )
