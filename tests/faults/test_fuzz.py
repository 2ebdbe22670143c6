"""Property-based fuzzing of every loader: malformed input gives a clear error, never a traceback or a valid result.

Each loader is fed hypothesis-generated input; the only acceptable outcomes are the
loader's own error type or, for inputs that happen to be valid, a result that passes
every consistency check.
"""

from __future__ import annotations

import functools
import json
import string
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suite.cost import PriceTableError, load_price_table
from suite.launchers import LaunchPlan
from suite.results import ResultError, compute_digest, read_result, write_result
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.specs import SPECS_DIR, ConfigError, load_spec, resolve
from tests.suite.test_results import _measurement
from workloads.measurement import RankMeasurement

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@functools.cache
def _valid_text() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        config = resolve("resnet50-cpu", None, ["batch_size=16"])
        result = build_result(
            config,
            RunOptions(Path(tmp), None, price_per_hour=1.0),
            RankMeasurement.model_validate(_measurement()),
            LaunchPlan(command=["python"]),
            "cd" * 16,
        )
        return write_result(result, Path(tmp) / "seed.json").read_text()


def _valid_doc(tmp: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_valid_text())
    return doc


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc[path[0]] = _set(doc[path[0]], path[1:], value)
    return doc


@FUZZ
@given(data=st.data())
def test_result_loader_on_mutated_and_resealed_results(tmp_path: Path, data: st.DataObject) -> None:
    doc = _valid_doc(tmp_path)
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    mutated = _set(doc, path, data.draw(JSON))
    if isinstance(mutated, dict):
        mutated["digest"] = compute_digest(mutated) if data.draw(st.booleans()) else mutated.get("digest")
    target = tmp_path / "fuzzed.json"
    target.write_text(json.dumps(mutated))
    try:
        result = read_result(target)
    except ResultError as exc:
        assert str(exc).startswith(str(target))
        return
    # Accepted: it must then be a consistent, fully checked result.
    assert result.digest == compute_digest(json.loads(target.read_text()))


@FUZZ
@given(raw=st.binary(max_size=200))
def test_result_loader_on_arbitrary_bytes(tmp_path: Path, raw: bytes) -> None:
    target = tmp_path / "bytes.json"
    target.write_bytes(raw)
    try:
        read_result(target)
    except ResultError:
        return
    raise AssertionError("arbitrary bytes must never load as a result")


KEYS = st.sampled_from(
    [
        "batch_size",
        "precision",
        "measure_steps",
        "warmup_seconds",
        "allocator",
        "cpus",
        "numa_nodes",
        "params.lr",
        "windows.repeats",
        "launch.memory_limit_mb",
        "bogus",
        "a.b.c",
    ]
)


@FUZZ
@given(
    items=st.lists(
        st.tuples(KEYS | st.text(string.printable, max_size=12), st.text(string.printable, max_size=12)), max_size=4
    )
)
def test_overrides_either_resolve_or_fail_clearly(items: list[tuple[str, str]]) -> None:
    try:
        config = resolve("resnet50-cpu", None, [f"{k}={v}" for k, v in items])
    except ConfigError as exc:
        assert str(exc)
        return
    assert config.params["batch_size"] >= 1 and config.windows.measure_steps >= 1


def _mutated_yaml(source: Path, target: Path, data: st.DataObject) -> None:
    """Write ``source`` (a YAML file) to ``target`` with one value, at a drawn place, replaced by drawn JSON."""
    doc = yaml.safe_load(source.read_text())
    path = data.draw(st.sampled_from(_paths(doc)))
    target.write_text(yaml.safe_dump(_set(doc, path, data.draw(JSON))))


@FUZZ
@given(data=st.data())
def test_spec_loader(tmp_path: Path, data: st.DataObject) -> None:
    target = tmp_path / "resnet50-cpu.yaml"
    _mutated_yaml(SPECS_DIR / "resnet50-cpu.yaml", target, data)
    try:
        spec = load_spec(target)
    except ConfigError as exc:
        assert str(target) in str(exc)
        return
    assert spec.name == "resnet50-cpu" and spec.default_profile in spec.profiles


@FUZZ
@given(data=st.data())
def test_price_table_loader(tmp_path: Path, data: st.DataObject) -> None:
    from suite.cost import DEFAULT_PRICE_TABLE_PATH

    target = tmp_path / "prices.yaml"
    _mutated_yaml(DEFAULT_PRICE_TABLE_PATH, target, data)
    try:
        table = load_price_table(target)
    except PriceTableError:
        return
    assert all(e.usd_per_hour > 0 for e in table.entries)


@FUZZ
@given(data=st.data())
def test_bands_loader(tmp_path: Path, data: st.DataObject) -> None:
    """The committed bands file, one value replaced: a BandsError naming the file, or a band set that holds."""
    from suite.validation.bands import BANDS_PATH, BandsError
    from suite.validation.bands_file import load_bands

    target = tmp_path / "bands.yaml"
    _mutated_yaml(BANDS_PATH, target, data)
    try:
        bands = load_bands(target)
    except BandsError as exc:
        assert str(target) in str(exc)
        return
    for b in bands.bands:
        assert b.value > 0 and (b.lower is None or -1 <= b.lower <= 0) and (b.upper is None or b.upper >= 0)
        assert b.workload and b.system and b.unit


SUBMITTED = Path(__file__).resolve().parents[2] / "submissions"
SYSTEM_FILE = "trainbench/systems/epyc-zen4-2vcpu.json"


@functools.cache
def _rules_and_bands() -> tuple[Any, Any]:
    from suite.rules import load_rules
    from suite.validation.bands_file import load_bands

    return load_rules(), load_bands()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_system_description_through_the_validator(tmp_path: Path, data: st.DataObject) -> None:
    """The committed submission with its system description damaged: findings on that file, never a crash.

    Half the cases replace one value of the JSON document, the others write arbitrary bytes.
    Whenever the damaged description no longer passes the SystemDescription model, the
    validator must report an error on that file, so the submission cannot pass.
    """
    import shutil

    from pydantic import ValidationError

    from suite.systems import SystemDescription
    from suite.validation.findings import Severity
    from suite.validation.tree import validate_tree

    rules, bands = _rules_and_bands()
    # a fresh tree per example (tmp_path is shared by all the examples of one test): the system
    # description and the five quick-profile results it describes
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        root = Path(tmp) / "submissions"
        shutil.copytree(SUBMITTED / "trainbench" / "systems", root / "trainbench" / "systems")
        results = root / "trainbench" / "results" / "epyc-zen4-2vcpu" / "resnet50-cpu"
        results.mkdir(parents=True)
        for n in range(1, 6):
            shutil.copy(
                SUBMITTED / "trainbench" / "results" / "epyc-zen4-2vcpu" / "resnet50-cpu" / f"result_{n}.json", results
            )
        target = root / SYSTEM_FILE
        doc = json.loads(target.read_text())
        if data.draw(st.booleans()):
            path = data.draw(st.sampled_from(_paths(doc)))
            mutated = _set(doc, path, data.draw(JSON))
            target.write_text(json.dumps(mutated))
            try:
                SystemDescription.model_validate(mutated)
                model_ok = True
            except ValidationError:
                model_ok = False
        else:
            target.write_bytes(data.draw(st.binary(max_size=300)))
            model_ok = False
        report = validate_tree(root, rules, bands)
    on_file = [f for f in report.findings if f.severity is Severity.ERROR and f.where.startswith(SYSTEM_FILE)]
    if not model_ok:
        assert on_file, "a broken system description must give an error finding on its file"
