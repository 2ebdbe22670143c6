"""Building submission trees and band files from real results, for the validator's tests."""

from __future__ import annotations

import json
from pathlib import Path

from suite.results import Result, write_result
from suite.rules import load_rules
from suite.systems import Price, SystemDescription, describe
from suite.validation.bands import BandsFile, Citation, ReferenceBand
from suite.validation.bands_file import load_bands, write_bands
from suite.validation.derive import derive_band
from suite.validation.outcomes import CheckedTree
from suite.validation.result_checks import CheckContext
from suite.validation.tree import validate_tree
from tests.validation.conftest import PRICE, SUBMITTER, SYSTEM, RealRuns

WORKLOAD = "resnet50-cpu"


def system_for(result: Result, name: str = SYSTEM) -> SystemDescription:
    """A complete, consistent description of the machine ``result`` ran on, priced at PRICE."""
    price = Price(
        usd_per_hour=PRICE, currency="USD", per="hour", pricing="on-demand", source="test price", date="2026-01"
    )
    return describe(result, name, SUBMITTER, price, "the machine the tests run on")


def results_dir(root: Path, system: str = SYSTEM) -> Path:
    """``root/acme/results/<system>/resnet50-cpu``."""
    return root / SUBMITTER / "results" / system / WORKLOAD


def system_path(root: Path, system: str = SYSTEM) -> Path:
    """``root/acme/systems/<system>.json``."""
    return root / SUBMITTER / "systems" / f"{system}.json"


def write_system(root: Path, desc: SystemDescription) -> Path:
    """Write a system description where the layout wants it."""
    path = system_path(root, desc.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(desc.model_dump(mode="json"), indent=1))
    return path


def make_tree(root: Path, results: list[Result], start: int = 1) -> Path:
    """A submission of ``results`` (as result_<start>..) with a consistent system description."""
    write_system(root, system_for(results[0]))
    for i, r in enumerate(results, start):
        write_result(r, results_dir(root) / f"result_{i}.json")
    return root


def derived(results: list[Result], division: str, specs_dir: Path) -> ReferenceBand:
    """The band ``trainbench bands derive`` gives for ``results``."""
    ctx = CheckContext(load_rules(), specs_dir)
    return derive_band([(r.run_id, r) for r in results], system=SYSTEM, division=division, ctx=ctx)


def cited(band: ReferenceBand, value: float) -> ReferenceBand:
    """``band`` turned into a cited band of ``value`` (+-10%), as a published figure would be."""
    source = Citation(
        reference="a test citation",
        locator="tests/validation/trees.py",
        setup="the tiny test config",
        bounds_policy="+-10% for the test",
    )
    return band.model_copy(update={"value": value, "lower": -0.1, "upper": 0.1, "runs": 1, "source": source})


def bands_file(path: Path, runs: RealRuns, scale: float | None = None) -> Path:
    """Bands derived from the open and closed sets; with ``scale``, cited bands at scale x their median."""
    bands = []
    for results, division in ((runs.open, "open"), (runs.closed, "closed")):
        b = derived(results, division, runs.specs_dir)
        bands.append(b if scale is None else cited(b, b.value * scale))
    write_bands(BandsFile(bands_version=1, bands=bands), path)
    return path


def validate(root: Path, bands: Path, runs: RealRuns, strict: bool = False) -> CheckedTree:
    """The validator's verdict on ``root`` with the test specs (their official profile is tiny)."""
    return validate_tree(root, load_rules(), load_bands(bands, runs.specs_dir), runs.specs_dir, strict)
