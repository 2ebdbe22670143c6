"""Deliberately bad submissions, each built from real results, with the error findings it must get.

Every case starts from a compliant tree (5 real runs and a consistent system
description) and breaks exactly one thing. ``expected`` is the exact set of error
codes the validator must report: the broken thing, plus, where the break removes valid
runs from a set, ``too-few-runs``, and where it removes runs the measured band cites,
``band-provenance``. A sixth file that claims a cited run's digest (an edited or exact
copy) is reported in its own file, never against the band: the band's run is still there.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from suite.files import MAX_FILE_BYTES
from suite.results import compute_digest, write_result
from suite.specs import resolve
from tests.validation.conftest import RealRuns, as_configured, build, one_repeat, reseal
from tests.validation.trees import make_tree, results_dir, system_for, system_path, write_system


@dataclass(frozen=True)
class BadCase:
    """One bad submission.

    Attributes:
        name: short id (the pytest id).
        build: writes the tree under the given root from the real runs.
        expected: the exact set of error codes.
        scale: with a value, the bands are cited at ``scale`` x each set's median.
    """

    name: str
    build: Callable[[Path, RealRuns], None]
    expected: frozenset[str]
    scale: float | None = None


def _sixth(root: Path) -> Path:
    return results_dir(root) / "result_6.json"


def _doc(root: Path, n: int = 1) -> dict[str, object]:
    return json.loads((results_dir(root) / f"result_{n}.json").read_text())  # type: ignore[no-any-return]


def _write_doc(path: Path, doc: dict[str, object], redigest: bool) -> None:
    if redigest:
        doc["digest"] = compute_digest(doc)
    path.write_text(json.dumps(doc, indent=1))


def _edit_throughput(value: object, redigest: bool) -> Callable[[Path, RealRuns], None]:
    def build_tree(root: Path, runs: RealRuns) -> None:
        make_tree(root, runs.open)
        doc = _doc(root)
        summary = doc["summary"]
        assert isinstance(summary, dict)
        summary["throughput"] = value if not isinstance(value, float) else summary["throughput"] * value
        _write_doc(_sixth(root), doc, redigest)

    return build_tree


def _text_throughput(literal: str) -> Callable[[Path, RealRuns], None]:
    def build_tree(root: Path, runs: RealRuns) -> None:
        make_tree(root, runs.open)
        text = (results_dir(root) / "result_1.json").read_text()
        edited, n = re.subn(r'"throughput": [0-9.eE+-]+', f'"throughput": {literal}', text, count=1)
        assert n == 1
        _sixth(root).write_text(edited)

    return build_tree


def _open_plus(make: Callable[[RealRuns], object]) -> Callable[[Path, RealRuns], None]:
    """The open set plus a sixth result made by ``make``."""

    def build_tree(root: Path, runs: RealRuns) -> None:
        make_tree(root, runs.open)
        write_result(make(runs), _sixth(root))  # type: ignore[arg-type]

    return build_tree


def _incomplete(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    write_result(runs.incomplete, _sixth(root))


def _truncated(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    text = (results_dir(root) / "result_1.json").read_text()
    _sixth(root).write_text(text[: len(text) // 2])


def _copy(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    _sixth(root).write_bytes((results_dir(root) / "result_1.json").read_bytes())


def _new_run_id(runs: RealRuns) -> object:
    """A copy with a new run id: the harness's run uid and start time still name the first run."""
    return reseal(runs.open[0], run_id=uuid.uuid4().hex)


def _same_measurement(runs: RealRuns) -> object:
    """A copy given a whole new identity (run id, run uid, start time a day earlier, its origin with it,
    so its times stay in order): only the measurement itself gives it away."""
    first = runs.open[0]
    assert first.started_at is not None and first.origin_unix_s is not None
    earlier = datetime.fromisoformat(first.started_at) - timedelta(days=1)
    return reseal(
        first,
        run_id=uuid.uuid4().hex,
        run_uid=uuid.uuid4().hex,
        started_at=earlier.isoformat(timespec="milliseconds"),
        origin_unix_s=first.origin_unix_s - 86_400.0,
    )


def _symlink_out(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    outside = root.parent / "outside.json"
    write_result(runs.open[0], outside)
    os.symlink(os.path.relpath(outside, _sixth(root).parent), _sixth(root))


def _symlink_in(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    os.symlink("result_1.json", _sixth(root))


def _fifo(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    os.mkfifo(_sixth(root))


def _oversized(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    with _sixth(root).open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used


def _duplicate_key(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    text = (results_dir(root) / "result_1.json").read_text()
    _sixth(root).write_text(text.replace('"status": "complete",', '"status": "complete", "status": "complete",', 1))


def _schema_version(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    doc = _doc(root)
    doc["schema_version"] = 99  # a version this trainbench does not read
    _write_doc(_sixth(root), doc, redigest=True)


def _open(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)


def _too_few(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open[:3])


def _trending(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.trending)


def _closed(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.closed)


def _closed_batch(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.closed)
    config = resolve("resnet50-cpu", "official", ["batch_size=4"], directory=runs.specs_dir)
    bad = build(config, as_configured(one_repeat(runs.measurement, 0), config), runs.plan, root.parent)
    write_result(reseal(bad, division="closed"), _sixth(root))


def _suite_version(runs: RealRuns) -> object:
    prov = runs.open[0].provenance.model_dump(mode="json")
    return reseal(runs.open[0], run_id=uuid.uuid4().hex, provenance={**prov, "suite_version": "9.9.0"})


def _windows(runs: RealRuns) -> object:
    config = runs.open[0].config.model_dump(mode="json")
    config["windows"]["measure_steps"] = 10
    return reseal(runs.open[0], run_id=uuid.uuid4().hex, config=config)


def _system_edit(path: tuple[str, ...], value: object) -> Callable[[Path, RealRuns], None]:
    def build_tree(root: Path, runs: RealRuns) -> None:
        make_tree(root, runs.open)
        doc = system_for(runs.open[0]).model_dump(mode="json")
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        system_path(root).write_text(json.dumps(doc))

    return build_tree


def _no_system(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    system_path(root).unlink()


def _wrong_system_dir(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    write_system(root, system_for(runs.open[0], name="other-box"))
    write_result(runs.closed[0], results_dir(root, "other-box") / "result_1.json")


def _stray_file(root: Path, runs: RealRuns) -> None:
    make_tree(root, runs.open)
    (results_dir(root) / "notes.txt").write_text("not a result")


CASES: list[BadCase] = [
    BadCase(
        "edited-number",
        _edit_throughput(1.5, redigest=False),
        frozenset({"digest-mismatch", "summary-mismatch", "cost-mismatch"}),
    ),
    BadCase(
        "edited-number-new-digest",
        _edit_throughput(1.5, redigest=True),
        frozenset({"summary-mismatch", "cost-mismatch"}),
    ),
    BadCase("incomplete-result", _incomplete, frozenset({"incomplete"})),
    BadCase("nan-throughput", _text_throughput("NaN"), frozenset({"non-finite-number"})),
    BadCase("inf-throughput", _text_throughput("Infinity"), frozenset({"non-finite-number"})),
    BadCase(
        "negative-throughput",
        _edit_throughput(-1.0, redigest=True),
        frozenset({"throughput-invalid", "summary-mismatch"}),
    ),
    BadCase(
        "zero-throughput", _edit_throughput(0.0, redigest=True), frozenset({"throughput-invalid", "summary-mismatch"})
    ),
    BadCase("wrong-type", _edit_throughput("fast", redigest=True), frozenset({"schema"})),
    BadCase("unparseable-json", _truncated, frozenset({"not-json"})),
    BadCase("duplicate-key", _duplicate_key, frozenset({"duplicate-key"})),
    BadCase("schema-version", _schema_version, frozenset({"schema-version"})),
    BadCase("duplicate-run", _copy, frozenset({"duplicate-run"})),
    BadCase("duplicate-run-new-run-id", _open_plus(_new_run_id), frozenset({"duplicate-run"})),
    BadCase("duplicate-measurement", _open_plus(_same_measurement), frozenset({"duplicate-measurement"})),
    BadCase("symlink-leaving-tree", _symlink_out, frozenset({"symlink-outside-tree"})),
    BadCase("symlink-inside-tree", _symlink_in, frozenset({"symlink"})),
    BadCase("fifo", _fifo, frozenset({"not-regular-file"})),
    BadCase("oversized-file", _oversized, frozenset({"oversized"})),
    BadCase("below-band", _open, frozenset({"below-band"}), scale=2.0),
    BadCase("above-band-closed", _closed, frozenset({"above-band"}), scale=0.5),
    # the measured band cites all 5 runs: 2 of them are gone from the tree, so it no longer
    # follows from runs anyone can check (issue 14), whatever the group's count
    BadCase("too-few-runs", _too_few, frozenset({"too-few-runs", "band-provenance"})),
    BadCase("steady-state-trending", _trending, frozenset({"steady-state-trending", "too-few-runs"})),
    BadCase("closed-non-tunable", _closed_batch, frozenset({"closed-non-tunable", "too-few-runs"})),
    # the system description records the suite version too, so the odd run contradicts it
    BadCase("suite-version", _open_plus(_suite_version), frozenset({"suite-version", "system-inconsistent"})),
    BadCase("windows-not-honoured", _open_plus(_windows), frozenset({"windows-not-honoured", "too-few-runs"})),
    BadCase(
        "system-inconsistent",
        _system_edit(("hardware", "cpu_model"), "Intel Xeon Platinum 8488C"),
        frozenset({"system-inconsistent"}),
    ),
    BadCase(
        "system-cores-inconsistent", _system_edit(("hardware", "logical_cores"), 64), frozenset({"system-inconsistent"})
    ),
    BadCase("price-currency", _system_edit(("price", "currency"), "EUR"), frozenset({"units"})),
    BadCase("price-mismatch", _system_edit(("price", "usd_per_hour"), 0.7), frozenset({"cost-mismatch"})),
    BadCase("system-wrong-type", _system_edit(("hardware", "logical_cores"), "two"), frozenset({"system-schema"})),
    BadCase("system-missing", _no_system, frozenset({"system-missing"})),
    BadCase("filed-under-wrong-system", _wrong_system_dir, frozenset({"system-mismatch", "too-few-runs"})),
    BadCase("unexpected-file", _stray_file, frozenset({"unexpected-file"})),
]
"""The catalogue. ``make validate`` runs on the committed tree; ``make test`` runs these."""
