"""What the validator returns: the runs it read, the scored groups of runs, and the checked tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.errors import BadInput
from suite.results import Result
from suite.systems import SystemDescription
from suite.validation.bands import BandsFile, ReferenceBand
from suite.validation.findings import Findings
from suite.validation.result_checks import CheckContext


class ValidatorSetupError(BadInput, RuntimeError):
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
        samples_per_joule: the median of the valid runs' samples per joule (GPU energy, NVML), or None
            unless every valid run measured one.
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
    samples_per_joule: float | None = None

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
            "samples_per_joule": self.samples_per_joule,
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
class CheckedTree:
    """Everything the validator found in one tree."""

    root: Path
    findings: Findings
    groups: list[GroupOutcome]
    systems: dict[tuple[str, str], SystemDescription]
    files: int
    strict: bool
    bands_source: str = ""
    """The bands file the runs were scored against (set by the command that read it)."""

    @property
    def compliant(self) -> bool:
        """No error findings (warnings count as errors under ``--strict``)."""
        return not self.findings.has_errors()

    @property
    def exit_code(self) -> int:
        """0 compliant, 1 error findings."""
        return 0 if self.compliant else 1


@dataclass(kw_only=True)
class TreeRuns:
    """What the walk of a tree found, and what the runs are scored against.

    Attributes:
        ctx: the rules and specs the checks compare against.
        bands: the reference bands.
        findings: every finding so far.
        entries: the result files that parsed.
        systems: (submitter, system) -> its valid description.
        system_files: (submitter, system) -> where its description file is.
        used_bands: the bands some group of runs was scored against (their provenance is checked).
    """

    ctx: CheckContext
    bands: BandsFile
    findings: Findings = field(default_factory=Findings)
    entries: list[RunEntry] = field(default_factory=list)
    systems: dict[tuple[str, str], SystemDescription] = field(default_factory=dict)
    system_files: dict[tuple[str, str], str] = field(default_factory=dict)
    used_bands: list[ReferenceBand] = field(default_factory=list)
