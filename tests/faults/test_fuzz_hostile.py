"""Structure-aware fuzzing of the validator's inputs (issue 14): generated results, system descriptions
and bands that reach deep nesting, huge numbers, many steps, YAML aliases, merge keys and duplicate
keys. Every case must end in findings or the reader's own error: never a traceback or a hang.

``TRAINBENCH_FUZZ_EXAMPLES`` raises the number of cases per test (default 60, about a minute in all
on 2 vCPUs); the session prints how many cases ran and how many crashed.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suite.files import FileProblem, parse_json, parse_yaml
from suite.rules import load_rules
from suite.validation.bands import BandsError
from suite.validation.bands_file import parse_bands
from suite.validation.findings import Findings
from suite.validation.result_checks import CheckContext, check_result, parse_result
from tests.validation.synthetic import result

EXAMPLES = int(os.environ.get("TRAINBENCH_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
CASES = {"cases": 0, "crashes": 0}
"""Counted by every test here; printed at the end of the session (tests/faults/conftest.py)."""

BASE = result(steps=12, seed=3).model_dump(mode="json")
CTX = CheckContext(load_rules())

HUGE = st.one_of(
    st.integers(min_value=10**30, max_value=10**60),
    st.just("1" * 5000),
    st.sampled_from([1e308, -1e308, 5e-324, 0.0, -0.0]),
)


def nested(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _count(ok: bool) -> None:
    CASES["cases"] += 1
    if not ok:
        CASES["crashes"] += 1


def _json_text(doc: Any, raw_number: str | None) -> bytes:
    text = json.dumps(doc)
    if raw_number is not None:  # a literal no json.dumps would write
        text = text.replace('"__RAW__"', raw_number, 1)
    return text.encode()


@st.composite
def hostile_results(draw: st.DrawFn) -> bytes:
    doc = json.loads(json.dumps(BASE))
    kind = draw(st.sampled_from(["deep", "huge", "many-steps", "field", "duplicate-key"]))
    raw = None
    if kind == "deep":
        n = draw(st.integers(60, 50_000))
        doc[draw(st.sampled_from(["environment", "workload_info", "plan"]))] = "__RAW__"
        raw = "[" * n + "]" * n if n % 2 else json.dumps(nested(min(n, 500)))
    elif kind == "huge":
        value = draw(HUGE)
        target = draw(st.sampled_from(["steps", "windows", "summary"]))
        node = doc[target][0] if target != "summary" else doc[target]
        key = draw(st.sampled_from(sorted(node)))
        node[key] = "__RAW__" if isinstance(value, str) else value
        raw = value if isinstance(value, str) else None
    elif kind == "many-steps":
        steps = doc["steps"]
        doc["steps"] = [dict(steps[i % len(steps)], index=i) for i in range(draw(st.integers(1000, 20000)))]
    elif kind == "field":
        path = draw(st.sampled_from([("summary", "throughput"), ("world_size",), ("windows", 0, "rank"),
                                     ("steps", 3, "start_s"), ("provenance", "suite_version")]))  # fmt: skip
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = draw(st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=8)))
    body = _json_text(doc, raw)
    if kind == "duplicate-key":
        body = body.replace(b'"status": ', b'"status": "incomplete", "status": ', 1)
    return body


@FUZZ
@given(body=hostile_results())
def test_hostile_results_give_findings(body: bytes) -> None:
    ok = False
    try:
        try:
            doc = parse_json(body)
        except FileProblem:
            ok = True
            return
        findings = Findings()
        parsed = parse_result(doc, "fuzz.json", findings)
        if parsed is not None:
            check_result(parsed, "fuzz.json", findings, CTX)
        ok = True
    finally:
        _count(ok)


BAND = """\
bands_version: 1
bands:
- name: b
  workload: resnet50-cpu
  system: s
  division: open
  metric: throughput
  value: 10.0
  lower: -0.2
  upper: 0.2
  unit: samples/s
  runs: 1
  conditions: {}
  source: {kind: citation, reference: r, locator: l, setup: s, bounds_policy: p}
"""


@st.composite
def hostile_bands(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["alias", "merge", "duplicate", "deep", "huge", "laughs", "plain"]))
    if kind == "alias":
        return BAND.replace("  conditions: {}", "  conditions: &c {a: 1}\n  extra: *c")
    if kind == "merge":
        return BAND.replace("  conditions: {}", "  <<: {conditions: {}}")
    if kind == "duplicate":
        return BAND.replace("  value: 10.0", f"  value: 10.0\n  value: {draw(st.floats(-1e9, 1e9))}")
    if kind == "deep":
        n = draw(st.integers(65, 20000))
        return BAND.replace("  conditions: {}", "  conditions: " + "[" * n + "]" * n)
    if kind == "huge":
        return BAND.replace("  value: 10.0", f"  value: {'9' * draw(st.integers(33, 6000))}")
    if kind == "laughs":
        width = draw(st.integers(2, 12))
        lines = [f"l0: &l0 [{', '.join(['x'] * width)}]"]
        lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, 10)]
        return "\n".join(lines) + "\n"
    return BAND.replace("  value: 10.0", f"  value: {draw(st.floats(allow_nan=False))}")


@FUZZ
@given(text=hostile_bands())
def test_hostile_bands_give_an_error_never_a_crash(text: str) -> None:
    ok = False
    try:
        with contextlib.suppress(FileProblem, BandsError):
            parse_bands(parse_yaml(text), "fuzz.yaml")
        ok = True
    finally:
        _count(ok)


@FUZZ
@given(data=st.data())
def test_hostile_system_descriptions_are_refused_cleanly(tmp_path: Path, data: st.DataObject) -> None:
    from suite.validation.outcomes import TreeRuns
    from suite.validation.system_files import load_system
    from tests.validation.trees import system_for

    doc = system_for(result(steps=12, seed=3)).model_dump(mode="json")
    key = data.draw(st.sampled_from(sorted(doc)))
    raw = None
    choice = data.draw(st.sampled_from(["deep", "huge", "markup"]))
    if choice == "deep":
        n = data.draw(st.integers(60, 50_000))
        doc[key], raw = "__RAW__", '{"k": ' * n + "1" + "}" * n
    elif choice == "huge":
        raw = data.draw(st.sampled_from(["1" * 5000, "1e999", "-" + "9" * 400]))
        doc[key] = "__RAW__"
    else:
        doc[key] = "[bold]\x1b]0;owned\x07[/oops]" + data.draw(st.text(max_size=20))
    path = tmp_path / f"{data.draw(st.integers(0, 10**9))}.json"
    path.write_bytes(_json_text(doc, raw))
    walk = TreeRuns(ctx=CTX, bands=parse_bands({"bands_version": 1, "bands": []}, "x"))
    ok = False
    try:
        load_system(walk, path, path.name, "acme")
        ok = True
    finally:
        _count(ok)
