"""The validator's parts without a run: strict file reading, band semantics, rules and schemas."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from suite import systems
from suite.files import MAX_FILE_BYTES, FileProblem, link_problem, parse_json, read_bounded
from suite.rules import Rules, closed_deviations, division_for, load_rules
from suite.specs import resolve
from suite.validation import bands as bands_module
from suite.validation.bands import BANDS_PATH, Citation, ReferenceBand, score
from suite.validation.bands_file import load_bands
from suite.validation.findings import CODES, Findings, Severity


def _band(value: float, lower: float | None, upper: float | None, floor: float | None = None) -> ReferenceBand:
    return ReferenceBand(
        name="b",
        workload="resnet50-cpu",
        system="s",
        division="open",
        metric="throughput",
        value=value,
        lower=lower,
        upper=upper,
        floor=floor,
        unit="samples/s",
        runs=1,
        source=Citation(reference="r", locator="l", setup="s", bounds_policy="p"),
    )


@given(
    value=st.floats(0.01, 1e6),
    lower=st.one_of(st.none(), st.floats(-1, 0)),
    upper=st.one_of(st.none(), st.floats(0, 10)),
    score_=st.floats(0, 1e7),
)
def test_band_verdict_follows_reframe_semantics(
    value: float, lower: float | None, upper: float | None, score_: float
) -> None:
    band = _band(value, lower, upper)
    verdict = band.verdict(score_)
    low = value * (1 + lower) if lower is not None else None
    high = value * (1 + upper) if upper is not None else None
    if low is not None and score_ < low:
        assert verdict == "below"
    elif high is not None and score_ > high:
        assert verdict == "above"
    else:
        assert verdict == "inside"


def test_band_bounds_and_floor() -> None:
    band = _band(100.0, -0.2, 0.1, floor=90.0)
    assert band.low == 90.0 and band.high == pytest.approx(110.0)
    assert band.verdict(89.9) == "below" and band.verdict(95) == "inside" and band.verdict(111) == "above"
    assert _band(100.0, None, None).verdict(1e-9) == "inside"  # unbounded both ways
    for bad in ({"lower": 0.1}, {"lower": -1.5}, {"upper": -0.1}):
        with pytest.raises(ValueError):
            _band(100.0, **{"lower": -0.1, "upper": 0.1, **bad})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unit"):
        ReferenceBand.model_validate({**_band(1, -0.1, 0.1).model_dump(), "unit": "images/s"})


def test_score_methods() -> None:
    assert score([3, 1, 2, 100, 4], "median") == 3
    assert score([3, 1, 2, 100, 4], "olympic_mean") == 3  # drops 1 and 100
    with pytest.raises(ValueError):
        score([1, 2], "olympic_mean")


def test_strict_json() -> None:
    assert parse_json(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    for data, code in (
        (b'{"a": NaN}', "non-finite-number"),
        (b'{"a": -Infinity}', "non-finite-number"),
        (b'{"a": 1, "a": 2}', "duplicate-key"),
        (b'{"a": ', "not-json"),
        (b"\xff\xfe", "not-json"),
        (b"[" * 100_000 + b"]" * 100_000, "too-deep"),
    ):
        with pytest.raises(FileProblem) as info:
            parse_json(data)
        assert info.value.code == code, data[:20]


def test_bounded_reads_never_block_or_follow_links(tmp_path: Path) -> None:
    with (tmp_path / "big").open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(FileProblem, match=f"over the {MAX_FILE_BYTES:,}-byte limit"):
        read_bounded(tmp_path / "big")
    os.mkfifo(tmp_path / "fifo")
    outcome: list[str] = []
    t = threading.Thread(target=lambda: outcome.append(_code(tmp_path / "fifo")), daemon=True)
    t.start()
    t.join(5)
    assert outcome == ["not-regular-file"]  # returned at once: no writer ever opens the FIFO
    os.symlink("big", tmp_path / "link")
    assert _code(tmp_path / "link") == "symlink"
    root = tmp_path / "tree"
    root.mkdir()
    os.symlink("/etc/hostname", root / "escape")
    problem = link_problem(root / "escape", root.resolve())
    assert problem is not None and problem.code == "symlink-outside-tree"


def _code(path: Path) -> str:
    try:
        read_bounded(path)
    except FileProblem as exc:
        return exc.code
    return "read"


def test_findings_codes_are_catalogued_and_strict_promotes_warnings() -> None:
    f = Findings()
    f.warning("no-band", "x", "m", "fix")
    f.info("score", "x", "m")
    assert not f.has_errors() and f.promoted().codes(Severity.ERROR) == {"no-band"}
    assert f.promoted().count(Severity.INFO) == 1
    with pytest.raises(ValueError, match="unknown finding code"):
        f.error("no-such-code", "x", "m")
    assert all(text for text in CODES.values())


def test_committed_schemas_match_the_models() -> None:
    for module, path in ((systems, systems.SYSTEM_SCHEMA_PATH), (bands_module, bands_module.BANDS_SCHEMA_PATH)):
        assert json.loads(path.read_text()) == module.json_schema(), (
            f"run trainbench submission-schema --write ({path})"
        )


def test_committed_bands_have_sources_and_cover_the_seed_figures() -> None:
    bands = load_bands(BANDS_PATH)
    by_value = {b.value: b for b in bands.bands if isinstance(b.source, Citation)}
    # CONTEXT.md: the c7i.2xlarge ladder and the g5.2xlarge run (C. Rand, Sep 2024)
    for value in (9.12, 24.34, 37.93, 39.05, 340.0):
        assert value in by_value, value
        assert "Training AI Models on CPU" in by_value[value].source.reference  # type: ignore[union-attr]
    closed = [b for b in bands.bands if b.division == "closed" and b.system == "c7i.2xlarge"]
    assert [b.value for b in closed] == [37.93]  # the official config: bf16 + channels_last, batch 128
    for b in bands.bands:
        if b.source.kind == "measured":
            assert b.runs >= 5 and b.source.note  # measured bands say how they were measured


def test_a_band_applies_to_runs_by_the_precision_they_ran_in() -> None:
    """precision=auto: a cited bf16 figure applies to runs whose auto chose bf16 (and to runs that asked
    for bf16), never to runs that ran fp32; a band pinned to 'auto' (derived from auto runs) still
    applies to auto runs."""
    from suite.rules import flatten_config
    from suite.validation.scoring import find_band

    bands = load_bands(BANDS_PATH)
    official = flatten_config(resolve("resnet50-cpu", "official"))
    assert official["params.precision"] == "auto"

    def closed(ran: str | None, flat: dict[str, object] = official) -> str | None:
        band = find_band(bands, "resnet50-cpu", "closed", ["c7i.2xlarge"], "throughput", flat, ran)
        return band.name if band else None

    assert closed("bf16") == closed(None, {**official, "params.precision": "bf16"}) == "resnet50-cpu-closed-c7i.2xlarge"
    assert closed("fp32") is None and closed(None) is None  # an fp32 run is not judged by a bf16 figure
    quick = flatten_config(resolve("resnet50-cpu", "quick"))
    open_band = find_band(bands, "resnet50-cpu", "open", ["epyc-zen4-2vcpu"], "throughput", quick, "bf16")
    assert open_band is not None and open_band.conditions["params.precision"] == "bf16"
    assert find_band(bands, "resnet50-cpu", "open", ["epyc-zen4-2vcpu"], "throughput", quick, "fp32") is None
    derived = open_band.model_copy(update={"conditions": {**open_band.conditions, "params.precision": "auto"}})
    mine = bands.model_copy(update={"bands": [derived]})
    assert find_band(mine, "resnet50-cpu", "open", ["epyc-zen4-2vcpu"], "throughput", quick, "fp32") is derived


def test_rules_file() -> None:
    rules = load_rules()
    assert isinstance(rules, Rules) and rules.min_runs == 5 and rules.score in ("median", "olympic_mean")
    assert {"params.num_workers", "params.intra_op_threads", "launch.allocator", "params.compile"} <= rules.tunables(
        "resnet50-cpu"
    )
    assert "params.batch_size" not in rules.tunables("resnet50-cpu")
    assert rules.accepts_suite_version("0.1.0") and not rules.accepts_suite_version("0.10.0")


def test_a_change_of_launcher_alone_keeps_the_closed_label() -> None:
    """Launch settings are per launcher: a setting only the other launcher has counts as left at
    its default, so the closed division is judged as before the launch variants."""
    rules = load_rules()
    assert division_for(resolve("resnet50-cpu", "official", ["launcher=run_cpu"]), rules) == "closed"
    assert division_for(resolve("resnet50-cpu", "official", ["launcher=torchrun"]), rules) == "closed"
    moved = resolve("resnet50-cpu", "official", ["launcher=torchrun", "nnodes=2", "rdzv_endpoint=h:29400"])
    assert [d.key for d in closed_deviations(moved, rules)] == ["launch.nnodes", "launch.rdzv_endpoint"]
