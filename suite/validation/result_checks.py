"""Checks of one result file: schema and version, digest, status, records, windows, summary, division.

Each check adds findings and returns; none raises on bad content, so every problem
of a file is reported at once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import ValidationError

from harness.records import Phase
from harness.stats import MeasurementError, summarize
from suite.results import SCHEMA_PATH, SCHEMA_VERSION, Result, compute_digest
from suite.specs import SPECS_DIR
from suite.validation.findings import Findings
from suite.validation.rules import Rules, RulesError, closed_deviations

MAX_SCHEMA_ERRORS = 10
"""Schema errors reported per file (the rest are counted)."""
REL_TOL = 1e-9
"""Relative tolerance when comparing a stored statistic with its recomputed value."""


@dataclass(frozen=True)
class CheckContext:
    """What the checks compare against.

    Attributes:
        rules: the submission rules.
        specs_dir: the workload specs that define each workload's official config.
    """

    rules: Rules
    specs_dir: Path = SPECS_DIR


@functools.lru_cache(maxsize=4)
def _validator(path: Path) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(path.read_text()))


def _json_path(parts: Any) -> str:
    return "/".join(str(p) for p in parts) or "(top)"


def parse_result(doc: Any, where: str, findings: Findings) -> Result | None:
    """Check the structure of a parsed result file and return it as a :class:`Result`.

    Checks, all reported: JSON object, ``kind``, ``schema_version``, the digest
    (recomputed over the content), and the JSON Schema. Returns None when the
    content does not fit the model (further checks would be guesses).
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
    if version != SCHEMA_VERSION:
        findings.error(
            "schema-version",
            f"{where}#schema_version",
            f"result schema_version {version!r} is not supported; this trainbench reads version {SCHEMA_VERSION}",
            "re-run the workload with this trainbench version",
        )
        return None
    digest = doc.get("digest")
    if not isinstance(digest, str) or digest != compute_digest(doc):
        findings.error(
            "digest-mismatch",
            f"{where}#digest",
            "the digest does not match the content: the file was changed after the run wrote it",
            "submit the result file unchanged; re-run the workload if the measurement was wrong",
        )
    errors = sorted(_validator(SCHEMA_PATH).iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
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
            f"{len(errors) - MAX_SCHEMA_ERRORS} more schema errors not shown",
            "submit the result exactly as trainbench wrote it",
        )
    if errors:
        return None
    try:
        return Result.model_validate(doc)
    except ValidationError as exc:
        for e in exc.errors()[:MAX_SCHEMA_ERRORS]:
            findings.error(
                "schema",
                f"{where}#{_json_path(e['loc'])}",
                f"schema: {e['msg']}",
                "submit the result exactly as trainbench wrote it",
            )
        return None


def check_records(result: Result, where: str, findings: Findings) -> bool:
    """Raw records agree with each other and with the config; windows honour their minimums.

    Returns True when the records are consistent enough to recompute the summary.
    """
    ok = True
    w = result.config.windows
    windows = {(win.repeat, win.phase): win for win in result.windows}
    if len(windows) != len(result.windows):
        findings.error(
            "records",
            f"{where}#windows",
            "two windows share a repeat and phase",
            "submit the result as trainbench wrote it",
        )
        ok = False
    steps: dict[tuple[int, Phase], list[Any]] = defaultdict(list)
    for s in result.steps:
        steps[(s.repeat, s.phase)].append(s)
    for r in range(w.repeats):
        warm, meas = windows.get((r, Phase.WARMUP)), windows.get((r, Phase.MEASUREMENT))
        if warm is None or warm.steps < 1:
            findings.error(
                "warmup-empty",
                f"{where}#windows",
                f"repeat {r} has no warm-up step",
                "every repeat needs a warm-up window of at least one step; re-run",
            )
        elif warm.steps < w.warmup_steps or warm.seconds < w.warmup_seconds:
            findings.error(
                "windows-not-honoured",
                f"{where}#windows",
                f"repeat {r}: warm-up of {warm.steps} steps / {warm.seconds:.3f} s is shorter than the config's "
                f"{w.warmup_steps} steps / {w.warmup_seconds} s",
                "re-run; the harness never ends a window early",
            )
        if meas is None:
            findings.error(
                "windows-not-honoured",
                f"{where}#windows",
                f"repeat {r} has no measurement window",
                "re-run the workload to completion",
            )
            ok = False
        elif meas.steps < w.measure_steps or meas.seconds < w.measure_seconds:
            findings.error(
                "windows-not-honoured",
                f"{where}#windows",
                f"repeat {r}: measurement of {meas.steps} steps / {meas.seconds:.3f} s is shorter than the config's "
                f"{w.measure_steps} steps / {w.measure_seconds} s",
                "re-run; the harness never ends a window early",
            )
    extra = sorted({k[0] for k in windows if k[0] >= w.repeats or k[0] < 0})
    if extra:
        findings.error(
            "records",
            f"{where}#windows",
            f"windows for repeats {extra} beyond the config's {w.repeats}",
            "submit the result as trainbench wrote it",
        )
        ok = False
    batch = result.config.params.get("batch_size")
    for key, win in windows.items():
        members = steps.get(key, [])
        label = f"repeat {key[0]} {key[1].value}"
        if len(members) != win.steps or sum(s.samples for s in members) != win.samples:
            findings.error(
                "records",
                f"{where}#windows",
                f"{label}: the window says {win.steps} steps / {win.samples} samples, the step records hold "
                f"{len(members)} / {sum(s.samples for s in members)}",
                "submit the result as trainbench wrote it",
            )
            ok = False
        busy = sum(s.step_s for s in members)
        if busy > win.seconds * (1 + 1e-6) + 1e-6:
            findings.error(
                "records",
                f"{where}#windows",
                f"{label}: its steps take {busy:.6f} s, longer than the window's {win.seconds:.6f} s",
                "submit the result as trainbench wrote it",
            )
            ok = False
    for key in steps.keys() - windows.keys():
        findings.error(
            "records",
            f"{where}#steps",
            f"step records for repeat {key[0]} {key[1].value} have no window",
            "submit the result as trainbench wrote it",
        )
        ok = False
    for i, s in enumerate(result.steps):
        if s.data_wait_s < 0 or s.compute_s < 0 or s.samples <= 0:
            findings.error(
                "records",
                f"{where}#steps/{i}",
                "a step with negative time or no samples",
                "submit the result as trainbench wrote it",
            )
            ok = False
            break
        if result.world_size == 1 and isinstance(batch, int) and s.samples > batch:
            findings.error(
                "records",
                f"{where}#steps/{i}",
                f"a step of {s.samples} samples with batch_size {batch}",
                "submit the result as trainbench wrote it",
            )
            ok = False
            break
    return ok


def measurement_fingerprint(result: Result) -> str:
    """sha256 of the raw step records: equal for one measurement filed twice under new run ids."""
    body = json.dumps([s.to_dict() for s in result.steps], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def check_summary(result: Result, where: str, findings: Findings, records_ok: bool) -> None:
    """The stored throughput is positive and equals the one recomputed from the raw records.

    The digest is an unkeyed hash anyone can recompute, so an edited summary with a
    fresh digest is caught here: the summary must follow from the raw records.
    """
    s = result.summary
    if s is None:
        findings.error(
            "incomplete",
            f"{where}#summary",
            "a complete result without a summary",
            "submit the result as trainbench wrote it",
        )
        return
    if not (math.isfinite(s.throughput) and s.throughput > 0):
        findings.error(
            "throughput-invalid",
            f"{where}#summary/throughput",
            f"throughput {s.throughput!r} samples/s is not a positive number",
            "a valid run measures a positive throughput; re-run",
        )
    if not records_ok or result.world_size != 1:
        return
    try:
        again = summarize(result.steps, result.windows)
    except MeasurementError as exc:
        findings.error(
            "records", f"{where}#windows", f"no throughput follows from the records: {exc}", "re-run the workload"
        )
        return
    pairs: list[tuple[str, float, float]] = [
        ("throughput", s.throughput, again.throughput),
        ("measured_samples", s.measured_samples, again.measured_samples),
        ("measured_seconds", s.measured_seconds, again.measured_seconds),
        ("measured_steps", s.measured_steps, again.measured_steps),
        ("step_time_median_s", s.step_time_median_s, again.step_time_median_s),
    ]
    if len(s.repeat_throughputs) != len(again.repeat_throughputs):
        pairs.append(("repeat count", len(s.repeat_throughputs), len(again.repeat_throughputs)))
    else:
        pairs += [
            (f"repeat_throughputs/{i}", a, b)
            for i, (a, b) in enumerate(zip(s.repeat_throughputs, again.repeat_throughputs, strict=True))
        ]
    for name, stored, recomputed in pairs:
        if not _close(float(stored), float(recomputed)):
            findings.error(
                "summary-mismatch",
                f"{where}#summary/{name}",
                f"{name} is {stored!r} but the raw records give {recomputed!r}",
                "submit the result as trainbench wrote it; the summary must follow from the step records",
            )
    if s.steady_state.status != again.steady_state.status:
        findings.error(
            "summary-mismatch",
            f"{where}#summary/steady_state",
            f"steady state says {s.steady_state.status!r}, the records give {again.steady_state.status!r}",
            "submit the result as trainbench wrote it",
        )


def check_steady_state(result: Result, where: str, findings: Findings) -> None:
    """A measurement window still trending is an error; an unchecked one a warning."""
    if result.summary is None:
        return
    ss = result.summary.steady_state
    if ss.status == "trending":
        drift = f" (drift {ss.worst_drift:+.1%} across a window)" if ss.worst_drift is not None else ""
        findings.error(
            "steady-state-trending",
            f"{where}#summary/steady_state",
            f"the measurement window's step times were still trending{drift}",
            "lengthen the warm-up (warmup_steps / warmup_seconds) and re-run on a quiet machine",
        )
    elif ss.status == "insufficient":
        findings.warning(
            "steady-state-unchecked",
            f"{where}#summary/steady_state",
            "too few measured steps per window to check the steady state",
            "measure at least 8 steps per window (the official profiles do)",
        )


def check_division(result: Result, where: str, findings: Findings, ctx: CheckContext) -> None:
    """The division label follows from the config and the closed-division rules."""
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
    if not ctx.rules.accepts_suite_version(version):
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
    check_steady_state(result, where, findings)
    check_division(result, where, findings, ctx)
    cost, s = result.cost, result.summary
    if cost is not None and s is not None and s.throughput > 0:
        expected = s.throughput * 3600 / cost.usd_per_hour
        if not math.isclose(cost.samples_per_dollar, expected, rel_tol=1e-6):
            findings.error(
                "cost-mismatch",
                f"{where}#cost/samples_per_dollar",
                f"samples per dollar {cost.samples_per_dollar:.6g} is not throughput x 3600 / "
                f"USD per hour = {expected:.6g}",
                "submit the result as trainbench wrote it",
            )
