"""Walking a submission tree and checking everything in it.

Layout (modelled on MLPerf's)::

    <root>/<submitter>/systems/<system>.json
    <root>/<submitter>/results/<system>/<workload>/result_<n>.json

``<root>`` may also be a single submitter's directory. Every file is read with size
limits and without following links (:mod:`suite.validation.files`); every problem is
a finding. Runs of one workload on one system are scored per configuration: a group
of runs with the same division and resolved config needs the rules' number of valid
runs, and its score (median or olympic mean of samples/s) is checked against the
reference band.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import ValidationError

from suite.results import Result
from suite.specs import SPECS_DIR, ConfigError, load_specs
from suite.validation.bands import BandsFile, MeasuredRuns, ReferenceBand, find_band, score
from suite.validation.files import MAX_FILES, MAX_RESULT_BYTES, MAX_SYSTEM_BYTES, FileProblem, link_problem, read_json
from suite.validation.findings import Findings, Severity
from suite.validation.result_checks import CheckContext, check_result, measurement_fingerprint, parse_result
from suite.validation.rules import Rules, flatten_config
from suite.validation.systems import (
    SYSTEM_NAME_PATTERN,
    SYSTEM_SCHEMA_PATH,
    SystemDescription,
    inconsistencies,
    price_matches,
    unit_problems,
)

RESULT_NAME = re.compile(r"^result_([1-9][0-9]{0,5})\.json$")
"""Result files are ``result_<n>.json``, n = 1, 2, ..."""
ROOT_FILES = frozenset({"bands.yaml", "README.md", ".gitkeep"})
"""Files that may sit at the top of the submissions tree."""


class ValidatorSetupError(RuntimeError):
    """The validator cannot run (missing path, invalid rules, bands or specs): exit status 2."""


@dataclass
class RunEntry:
    """One result file that parsed.

    Attributes:
        where: path relative to the validated root.
        result: the parsed result.
        submitter, system, workload: from the file's place in the tree.
        valid: no error finding about this file itself.
    """

    where: str
    result: Result
    submitter: str
    system: str
    workload: str
    valid: bool


@dataclass
class GroupOutcome:
    """The runs of one configuration of one workload on one system, and their score.

    Attributes:
        where: the workload directory, with division, profile and config id.
        score: the score in samples/s, or None when no valid run exists.
        score_method: ``median`` or ``olympic_mean``.
        throughputs: samples/s of each valid run.
        usd_per_hour: the system's price, or None.
        samples_per_dollar: score x 3600 / USD per hour, or None without a price.
        band: the reference band applied (None: none exists).
        verdict: ``inside``, ``below`` or ``above`` the band, or None.
        errors: error findings about this group or its runs (after ``--strict``).
    """

    submitter: str
    system: str
    workload: str
    division: str
    profile: str
    config_id: str
    where: str
    runs: list[str]
    valid_runs: int
    required_runs: int
    throughputs: list[float]
    score: float | None
    score_method: str
    usd_per_hour: float | None
    samples_per_dollar: float | None
    band: ReferenceBand | None
    verdict: str | None
    errors: int = 0
    config_summary: str = ""
    computed: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the band by name and range)."""
        band = self.band
        return {
            "submitter": self.submitter,
            "system": self.system,
            "workload": self.workload,
            "division": self.division,
            "profile": self.profile,
            "config_id": self.config_id,
            "config_summary": self.config_summary,
            "where": self.where,
            "runs": self.runs,
            "valid_runs": self.valid_runs,
            "required_runs": self.required_runs,
            "throughputs": self.throughputs,
            "score": self.score,
            "score_unit": "samples/s",
            "score_method": self.score_method,
            "usd_per_hour": self.usd_per_hour,
            "samples_per_dollar": self.samples_per_dollar,
            "band": None
            if band is None
            else {
                "name": band.name,
                "value": band.value,
                "low": band.low,
                "high": band.high,
                "unit": band.unit,
                "runs": band.runs,
                "source": band.source.kind,
            },
            "verdict": self.verdict,
            "errors": self.errors,
            "compliant": self.errors == 0,
        }


@dataclass
class ValidationReport:
    """Everything the validator found in one tree."""

    root: Path
    findings: Findings
    groups: list[GroupOutcome]
    systems: dict[tuple[str, str], SystemDescription]
    files: int
    strict: bool

    @property
    def compliant(self) -> bool:
        """No error findings (warnings count as errors under ``--strict``)."""
        return not self.findings.has_errors()

    @property
    def exit_code(self) -> int:
        """0 compliant, 1 error findings."""
        return 0 if self.compliant else 1


@dataclass
class _Walk:
    root: Path
    ctx: CheckContext
    bands: BandsFile
    workloads: dict[str, str]
    findings: Findings = field(default_factory=Findings)
    entries: list[RunEntry] = field(default_factory=list)
    systems: dict[tuple[str, str], SystemDescription] = field(default_factory=dict)
    system_files: dict[tuple[str, str], str] = field(default_factory=dict)
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


@functools.lru_cache(maxsize=1)
def _system_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SYSTEM_SCHEMA_PATH.read_text()))


def _load_system(walk: _Walk, path: Path, submitter: str) -> None:
    where = walk.rel(path)
    walk.system_files[(submitter, path.stem)] = where
    try:
        doc = read_json(path, MAX_SYSTEM_BYTES)
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


def _check_run_file(walk: _Walk, path: Path, submitter: str, system: str, workload: str) -> None:
    where = walk.rel(path)
    local = Findings()
    try:
        doc = read_json(path, MAX_RESULT_BYTES)
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
    desc = walk.systems.get((submitter, system))
    if desc is None:
        return
    # a system description at odds with its runs is the description's fault: reported on it,
    # so the runs themselves stay valid
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
                _load_system(walk, p, submitter)
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


def _config_id(result: Result) -> str:
    body = json.dumps(flatten_config(result.config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def _duplicates(walk: _Walk) -> None:
    digests: dict[str, str] = {}
    prints: dict[str, str] = {}
    for e in walk.entries:
        if not e.valid:
            continue
        if e.result.digest in digests:
            walk.findings.error(
                "duplicate-run",
                e.where,
                f"the same run as {digests[e.result.digest]} (digest {e.result.digest[:19]}...)",
                "submit each run once",
            )
            e.valid = False
            continue
        digests[e.result.digest] = e.where
        fp = measurement_fingerprint(e.result)
        if fp in prints:
            walk.findings.error(
                "duplicate-measurement",
                e.where,
                f"the same raw step records as {prints[fp]}: one measurement submitted twice",
                "submit each measured run once",
            )
            e.valid = False
            continue
        prints[fp] = e.where


def _band_check(walk: _Walk, g: GroupOutcome, names: list[str], flat: dict[str, Any]) -> None:
    if g.score is None:
        return
    band = find_band(walk.bands, g.workload, g.division, names, "throughput", flat)
    g.band = band
    if band is None:
        walk.findings.warning(
            "no-band",
            g.where,
            f"no reference band for {g.workload} ({g.division}) on {' / '.join(names)} with "
            "this config; the score was not checked against one",
            "derive one from at least 5 runs: trainbench bands derive RESULTS... --system ... "
            f"--division {g.division} --write",
        )
        return
    g.verdict = band.verdict(g.score)
    text = f"score {g.score:.4g} samples/s vs band {band.name!r}: {band.describe()}"
    if g.verdict == "below":
        walk.findings.error(
            "below-band",
            g.where,
            f"{text}: below the band",
            "find what slowed the runs (see each result's diagnosis and steady state) and re-run",
        )
    elif g.verdict == "above" and g.division == "closed":
        walk.findings.error(
            "above-band",
            g.where,
            f"{text}: faster than the band: check the measurement",
            "check the runs really used the official config and timing; if the system is faster, "
            "derive a new band from at least 5 runs with its provenance",
        )
    elif g.verdict == "above":
        walk.findings.warning(
            "above-band",
            g.where,
            f"{text}: faster than the band",
            "check the measurement; open-division changes may explain it",
        )
    else:
        walk.findings.info("in-band", g.where, f"{text}: inside")
    if g.samples_per_dollar is not None:
        spd_band = find_band(walk.bands, g.workload, g.division, names, "samples_per_dollar", flat)
        if spd_band is not None and spd_band.verdict(g.samples_per_dollar) == "below":
            walk.findings.error(
                "below-band",
                g.where,
                f"samples per dollar {g.samples_per_dollar:.4g} is below band {spd_band.name!r}: {spd_band.describe()}",
                "check the price and the runs",
            )


def _groups(walk: _Walk) -> list[GroupOutcome]:
    rules = walk.ctx.rules
    by_key: dict[tuple[str, str, str, str, str], list[RunEntry]] = {}
    for e in walk.entries:
        if e.result.status == "complete":
            key: tuple[str, str, str, str, str] = (
                e.submitter,
                e.system,
                e.workload,
                e.result.division,
                _config_id(e.result),
            )
            by_key.setdefault(key, []).append(e)
    dirs: dict[tuple[str, str, str], int] = {}
    for k in by_key:
        dirs[k[:3]] = dirs.get(k[:3], 0) + 1
    out = []
    for (submitter, system, workload, division, config_id), members in sorted(by_key.items()):
        first = members[0].result
        base = members[0].where.rsplit("/", 1)[0]
        where = f"{base} [{division}, profile {first.profile}, config {config_id}]"
        if dirs[(submitter, system, workload)] > 1:
            walk.findings.info(
                "mixed-config",
                where,
                f"{len(members)} of the runs in {base} share this division "
                "and config; each configuration is scored on its own",
            )
        valid = [m for m in members if m.valid]
        values = [m.result.summary.throughput for m in valid if m.result.summary is not None]
        required = rules.min_runs_for(workload)
        method = rules.score_for(workload)
        if len(values) < required:
            bad = len(members) - len(valid)
            walk.findings.error(
                "too-few-runs",
                where,
                f"{len(values)} valid run(s) of the {required} a score needs"
                + (f" ({bad} run(s) with errors, listed above)" if bad else ""),
                f"submit at least {required} complete, valid runs of this configuration",
            )
        desc = walk.systems.get((submitter, system))
        price = desc.price.usd_per_hour if desc is not None else None
        value: float | None = None
        if values and not (method == "olympic_mean" and len(values) < 3):
            value = score(values, method)
            walk.findings.info(
                "score",
                where,
                f"score {value:.4g} samples/s ({method.replace('_', ' ')} of "
                f"{len(values)} runs: {', '.join(f'{v:.4g}' for v in values)})",
            )
        g = GroupOutcome(
            submitter,
            system,
            workload,
            division,
            first.profile,
            config_id,
            where,
            runs=[m.where for m in members],
            valid_runs=len(values),
            required_runs=required,
            throughputs=values,
            score=value,
            score_method=method,
            usd_per_hour=price,
            samples_per_dollar=value * 3600 / price if value is not None and price else None,
            band=None,
            verdict=None,
        )
        g.config_summary = config_summary(first)
        g.computed = {k: first.config.params[k] for k in COMPUTED_PARAMS if k in first.config.params}
        names = desc.band_names() if desc is not None else [system]
        _band_check(walk, g, names, flatten_config(first.config))
        out.append(g)
    return out


COMPUTED_PARAMS = ("batch_size", "precision", "channels_last", "image_size", "data")
"""Settings that change what a ResNet-style step computes (not how fast it is executed); an
open-division figure is comparable only with one that has the same values."""


def config_summary(result: Result) -> str:
    """A short description of a run's config: profile, batch size, precision, memory format, overrides."""
    p = result.config.params
    parts = [f"{result.profile} profile"]
    if "batch_size" in p:
        parts.append(f"batch {p['batch_size']}")
    if "precision" in p:
        parts.append(str(p["precision"]) + (" + channels_last" if p.get("channels_last") else ""))
    if result.config.overrides:
        parts.append("--set " + " ".join(result.config.overrides))
    return ", ".join(parts)


def _band_provenance(walk: _Walk) -> None:
    by_digest = {e.result.digest: e for e in walk.entries if e.valid}
    for band in walk.bands.bands:
        src = band.source
        if not isinstance(src, MeasuredRuns) or band.metric != "throughput":
            continue
        found = [by_digest[d] for d in src.runs if d in by_digest]
        if not found:
            continue
        where = f"bands.yaml#{band.name}"
        if len(found) < len(src.runs):
            walk.findings.warning(
                "band-provenance",
                where,
                f"{len(found)} of the band's {len(src.runs)} runs are in this tree",
                "commit every run a measured band was derived from",
            )
            continue
        values = [e.result.summary.throughput for e in found if e.result.summary is not None]
        if not values or not math.isclose(score(values, "median"), band.value, rel_tol=1e-9):
            walk.findings.error(
                "band-provenance",
                where,
                f"the band's value {band.value} is not the median of its runs "
                f"({', '.join(f'{v:.6g}' for v in values)})",
                "re-derive the band with trainbench bands derive",
            )


def _attribute(groups: list[GroupOutcome], findings: Findings, system_files: dict[tuple[str, str], str]) -> None:
    for g in groups:
        prefixes = (g.where, *g.runs, system_files.get((g.submitter, g.system), ""))
        g.errors = sum(1 for f in findings if f.severity is Severity.ERROR and f.where.split("#")[0] in prefixes)


def validate_tree(
    path: Path,
    rules: Rules,
    bands: BandsFile,
    specs_dir: Path = SPECS_DIR,
    strict: bool = False,
) -> ValidationReport:
    """Check every file of a submissions tree and every set of runs in it.

    Args:
        path: the submissions root (one directory per submitter) or one submitter's directory.
        rules: the submission rules (:func:`suite.validation.rules.load_rules`).
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
    walk = _Walk(root, CheckContext(rules, specs_dir), bands, {name: s.workload for name, s in specs.items()})
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
    _duplicates(walk)
    groups = _groups(walk)
    _band_provenance(walk)
    findings = walk.findings.promoted() if strict else walk.findings
    _attribute(groups, findings, walk.system_files)
    return ValidationReport(root, findings, groups, walk.systems, walk.files, strict)
