"""Findings: what the validator says about a submission, each with where, what and how to fix it.

The validator collects every finding instead of stopping at the first (the lesson of
MLPerf's submission checker), then decides compliance from the worst severity.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """How bad a finding is.

    ``error`` makes a submission non-compliant; ``warning`` does too under ``--strict``;
    ``info`` never does (scores, band verdicts inside the band, notes).
    """

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One thing the validator found.

    Attributes:
        severity: error, warning or info.
        code: stable identifier of the check, e.g. ``digest-mismatch`` (see :data:`CODES`);
            tests and CI match on it.
        where: the file (relative to the validated tree) or group the finding is about,
            with a JSON path after ``#`` where one applies.
        message: what is wrong, in words.
        fix: how to fix it (empty for info findings that need no action).
    """

    severity: Severity
    code: str
    where: str
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = asdict(self)
        out["severity"] = self.severity.value
        return out


CODES: dict[str, str] = {
    # files and layout
    "path-missing": "the path to validate does not exist or is not a directory",
    "layout": "a file or directory is not where the submission layout puts it",
    "unexpected-file": "a file that does not belong in the submission layout",
    "symlink-outside-tree": "a symbolic link that points outside the validated tree",
    "symlink": "a symbolic link inside the tree (results must be regular files)",
    "not-regular-file": "a device, socket or FIFO where a file belongs",
    "oversized": "a file larger than the limit for its kind",
    "too-many-files": "more files than the validator reads in one tree",
    "unreadable": "a file that cannot be read",
    "not-json": "a file that is not valid UTF-8 JSON",
    "non-finite-number": "NaN or Infinity in a JSON file (not JSON, and never a valid measurement)",
    "duplicate-key": "an object with the same key twice (parsers disagree on which wins)",
    "too-deep": "JSON or YAML nested deeper than any trainbench file",
    "hard-link": "a file with more than one hard link (it may live outside the tree too)",
    "bad-number": "a number literal too long to read (an integer of more digits than any measurement has)",
    "not-yaml": "a file that is not valid YAML",
    "yaml-feature": "a YAML anchor, alias or merge key (refused: they can expand without bound)",
    "too-large": "more records or nodes than any valid file of its kind holds",
    "empty-submission": "nothing to validate",
    # a result file
    "schema-version": "a result schema version this trainbench does not read",
    "schema": "the file does not match its JSON Schema (wrong types, missing or extra fields)",
    "digest-mismatch": "the content digest does not match: the file was changed after the run",
    "incomplete": "the run did not finish; an incomplete result never carries a score",
    "records": "the raw step and window records contradict each other or the config",
    "summary-mismatch": "the stored summary differs from the one recomputed from the raw records",
    "throughput-invalid": "a throughput that is not a positive finite number of samples/s",
    "windows-not-honoured": "a warm-up or measurement window shorter than the config requires",
    "warmup-empty": "a repeat without a warm-up window",
    "steady-state-trending": "the measurement window's step times were still trending",
    "steady-state-unchecked": "too few measured steps per window to check the steady state",
    "division": "the division claimed does not follow from the config and the rules",
    "closed-non-tunable": "a closed-division result that changes a setting outside the listed tunables",
    "suite-version": "a result from a suite version the rules do not accept, or one this validator does not know",
    "error-in-complete": "a result marked complete that carries an error",
    "disturbed": "measurement windows disturbed by other processes or hypervisor steal",
    "bf16-emulated": "bf16 computed by emulation (scored apart from native bf16 and labelled)",
    "clock-mismatch": "the sampler's readings, the windows and the kernel's CPU counters do not share one clock",
    "cpu-time-impossible": "more CPU time than the cores the run was allowed can give",
    "interference-hidden": "per-core utilization that the run's, others' and stolen CPU time do not account for",
    "isa-inconsistent": "an ISA record that contradicts its own features and caps, the CPU flags or torch",
    "precision-impossible": "a precision decision or bf16 emulation flag the recorded ISA does not allow",
    "device-impossible": "a device the recorded environment does not have (a GPU that is not there)",
    "device-telemetry-missing": "a GPU run without its device step times or NVML readings (and no reason recorded)",
    "timestamps": "start, origin, windows and creation times out of order or disagreeing",
    "environment-inconsistent": "an environment whose core counts contradict the sampler's readings",
    "units": "a value in the wrong unit or currency",
    "system-mismatch": "a result whose system is not the system directory it is filed under",
    "workload-mismatch": "a result whose workload is not the workload directory it is filed under",
    "cost-mismatch": "a result's price or samples per dollar disagree with the system description",
    "git-dirty": "the result was produced from a checkout with uncommitted changes",
    "validator-error": "the validator failed on this file (a bug: please report it)",
    # a set of runs
    "duplicate-run": "the same run (same run id, run uid or start time) submitted twice",
    "duplicate-measurement": "two results whose step times are one measurement (equal after sorting, or correlated)",
    "mixed-config": "runs of one workload on one system with different configurations (scored separately)",
    "too-few-runs": "fewer runs than the rules require for a score",
    "score": "the score of a set of runs",
    "below-band": "the score is below the reference band",
    "above-band": "the score is above the reference band",
    "in-band": "the score lies inside the reference band",
    "no-band": "no reference band exists for this workload, division, system and config",
    "band-provenance": "a measured band disagrees with the runs it says it came from",
    # system descriptions
    "system-missing": "results filed under a system that has no system description",
    "system-schema": "a system description that does not match its JSON Schema",
    "system-inconsistent": "a system description that contradicts the environment recorded in its results",
    "price-missing": "a system description without a price (samples per dollar cannot be ranked)",
}
"""Every finding code, with what it means. A finding with a code outside this table is a bug."""


class Findings:
    """An ordered collection of findings with helpers to add and query them."""

    def __init__(self, items: Iterable[Finding] = ()) -> None:
        self._items: list[Finding] = list(items)

    def add(self, severity: Severity, code: str, where: str, message: str, fix: str = "") -> Finding:
        """Record a finding and return it.

        Raises:
            ValueError: ``code`` is not in :data:`CODES` (a programming error).
        """
        if code not in CODES:
            raise ValueError(f"unknown finding code {code!r}; add it to suite.validation.findings.CODES")
        finding = Finding(severity, code, where, message, fix)
        self._items.append(finding)
        return finding

    def error(self, code: str, where: str, message: str, fix: str = "") -> Finding:
        """Record an error finding."""
        return self.add(Severity.ERROR, code, where, message, fix)

    def warning(self, code: str, where: str, message: str, fix: str = "") -> Finding:
        """Record a warning finding."""
        return self.add(Severity.WARNING, code, where, message, fix)

    def info(self, code: str, where: str, message: str, fix: str = "") -> Finding:
        """Record an info finding."""
        return self.add(Severity.INFO, code, where, message, fix)

    def extend(self, other: Iterable[Finding]) -> None:
        """Append findings from another collection."""
        self._items.extend(other)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def codes(self, severity: Severity | None = None) -> set[str]:
        """The distinct codes found (of one severity, or of all)."""
        return {f.code for f in self._items if severity is None or f.severity is severity}

    def count(self, severity: Severity) -> int:
        """How many findings have ``severity``."""
        return sum(1 for f in self._items if f.severity is severity)

    def has_errors(self) -> bool:
        """True when any finding is an error."""
        return any(f.severity is Severity.ERROR for f in self._items)

    def promoted(self) -> Findings:
        """A copy in which warnings are errors (``--strict``)."""
        return Findings(
            replace(f, severity=Severity.ERROR) if f.severity is Severity.WARNING else f for f in self._items
        )
