"""Checks of one result file: schema and version, digest, status, records, windows, summary, division.

Each check adds findings and returns; none raises on bad content, so every problem
of a file is reported at once.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from suite.cost import samples_per_dollar_or_none
from suite.results import Result, compute_digest
from suite.results.migrations import supported, upgrade, versions_text
from suite.results.schema_check import schema_errors
from suite.rules import Rules, RulesError, closed_deviations
from suite.specs import SPECS_DIR
from suite.validation.conditions import (
    check_bf16,
    check_energy,
    check_interference,
    check_steady_state,
    check_suite,
)
from suite.validation.findings import Findings
from suite.validation.physical import check_physical
from suite.validation.record_checks import check_records, check_summary

MAX_SCHEMA_ERRORS = 10
"""Schema errors reported per file: validation stops at the next one, so a hostile file costs bounded work."""


@dataclass(frozen=True)
class CheckContext:
    """What the checks compare against.

    Attributes:
        rules: the submission rules.
        specs_dir: the workload specs that define each workload's official config.
    """

    rules: Rules
    specs_dir: Path = SPECS_DIR


def _json_path(parts: Any) -> str:
    return "/".join(str(p) for p in parts) or "(top)"


def parse_result(doc: Any, where: str, findings: Findings) -> Result | None:
    """Check the structure of a parsed result file and return it as a :class:`Result`.

    Checks, all reported: JSON object, ``kind``, ``schema_version``, the digest
    (recomputed over the content) and the JSON Schema of the stored version; then the
    document is upgraded to the current schema (:mod:`suite.results.migrations`).
    Returns None when the content does not fit the model (further checks would be guesses).
    """
    if not isinstance(doc, dict):
        findings.error(
            "schema",
            where,
            f"a result must be a JSON object, not {type(doc).__name__}",
            "submit the result.json that trainbench run wrote",
        )
        return None
    if doc.get("kind") != "trainbench.result":
        findings.error(
            "schema",
            f"{where}#kind",
            f"kind is {doc.get('kind')!r}, not 'trainbench.result'",
            "only result files written by trainbench run belong under results/",
        )
    version = doc.get("schema_version")
    if not supported(version):
        findings.error(
            "schema-version",
            f"{where}#schema_version",
            f"result schema_version {version!r} is not supported; this trainbench reads version {versions_text()}",
            "re-run the workload with this trainbench version",
        )
        return None
    assert isinstance(version, int)
    digest = doc.get("digest")
    if not isinstance(digest, str) or digest != compute_digest(doc):
        findings.error(
            "digest-mismatch",
            f"{where}#digest",
            "the digest does not match the content: the file was changed after the run wrote it",
            "submit the result file unchanged; re-run the workload if the measurement was wrong",
        )
    errors = list(itertools.islice(schema_errors(doc, version), MAX_SCHEMA_ERRORS + 1))
    for err in errors[:MAX_SCHEMA_ERRORS]:
        findings.error(
            "schema",
            f"{where}#{_json_path(err.absolute_path)}",
            f"schema: {err.message}",
            "submit the result exactly as trainbench wrote it",
        )
    if len(errors) > MAX_SCHEMA_ERRORS:
        findings.error(
            "schema",
            where,
            f"more schema errors not shown (checking stops after {MAX_SCHEMA_ERRORS} per file)",
            "submit the result exactly as trainbench wrote it",
        )
    if errors:
        return None
    try:
        return Result.model_validate(upgrade(doc))
    except ValidationError as exc:
        for e in exc.errors()[:MAX_SCHEMA_ERRORS]:
            findings.error(
                "schema",
                f"{where}#{_json_path(e['loc'])}",
                f"schema: {e['msg']}",
                "submit the result exactly as trainbench wrote it",
            )
        return None


def check_division(result: Result, where: str, findings: Findings, ctx: CheckContext) -> None:
    """The division label follows from the config and the closed-division rules.

    Judged on the config alone, as the validator always has: a precision the recorded hardware
    cannot run is ``precision-impossible`` (:mod:`suite.validation.hardware_claims`), and bf16 that
    ran emulated is labelled and scored apart (:func:`suite.validation.conditions.check_bf16`).
    """
    try:
        deviations = closed_deviations(result.config, ctx.rules, ctx.specs_dir)
    except RulesError as exc:
        if result.division == "closed":
            findings.error(
                "division", f"{where}#division", f"labelled closed, but {exc}", "submit it in the open division"
            )
        return
    if result.division == "closed" and deviations:
        allowed = ", ".join(sorted(ctx.rules.tunables(result.workload)))
        for d in deviations:
            findings.error(
                "closed-non-tunable",
                f"{where}#config/{d.key.replace('.', '/')}",
                f"closed division, but {d.key} is {d.actual!r} where the official config has {d.official!r} "
                "and it is not a tunable",
                f"re-run with --profile {ctx.rules.official_profile} changing only tunables ({allowed}), "
                "or submit it as open",
            )
    elif result.division == "open" and not deviations:
        findings.warning(
            "division",
            f"{where}#division",
            "labelled open, but its config is the official one up to tunables (closed under these rules)",
            "re-run with this trainbench to get the closed label",
        )


def check_result(result: Result, where: str, findings: Findings, ctx: CheckContext) -> None:
    """Every check of one parsed result that needs no other file.

    An incomplete result is an error and gets no further checks (it has no score).
    """
    if result.status != "complete":
        findings.error(
            "incomplete",
            f"{where}#status",
            f"the run is incomplete ({result.error or 'no reason recorded'}) and has no score",
            "submit only complete runs (result.json, never result-incomplete.json)",
        )
        return
    version = result.provenance.suite_version
    accepted = ctx.rules.accepts_suite_version(version)
    check_suite(result, where, findings, accepted)
    if not accepted:
        findings.error(
            "suite-version",
            f"{where}#provenance/suite_version",
            f"suite version {version} is not accepted; the rules accept the "
            f"{', '.join(ctx.rules.suite_versions)} series",
            "re-run the workload with an accepted trainbench version",
        )
    if result.provenance.git_dirty:
        findings.warning(
            "git-dirty",
            f"{where}#provenance/git_dirty",
            f"produced from commit {result.provenance.git_commit} with uncommitted changes",
            "run from a clean checkout so the result can be reproduced from its commit",
        )
    if result.config.profile != result.profile or result.workload != result.config.workload:
        findings.error(
            "records",
            f"{where}#config",
            "the result's workload/profile differ from its config's",
            "submit the result as written",
        )
    records_ok = check_records(result, where, findings)
    check_summary(result, where, findings, records_ok)
    check_physical(result, where, findings, records_ok)
    check_steady_state(result, where, findings)
    check_interference(result, where, findings)
    check_energy(result, where, findings)
    check_bf16(result, where, findings)
    check_division(result, where, findings, ctx)
    cost, s = result.cost, result.summary
    if cost is not None and s is not None and s.throughput > 0:
        expected = samples_per_dollar_or_none(s.throughput, cost.usd_per_hour)
        if expected is not None and not math.isclose(cost.samples_per_dollar, expected, rel_tol=1e-6):
            findings.error(
                "cost-mismatch",
                f"{where}#cost/samples_per_dollar",
                f"samples per dollar {cost.samples_per_dollar:.6g} is not throughput x 3600 / "
                f"USD per hour = {expected:.6g}",
                "submit the result as trainbench wrote it",
            )
