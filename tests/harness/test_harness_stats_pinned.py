"""One-repeat intervals must not change: committed submissions are recomputed by the validator.

The figures below were printed by harness.stats before the interval rule changed (issue 13:
fewer than 5 repeats use batch means pooled over all windows). With one repeat the pooled rule
is today's rule, so every number must stay bit-for-bit the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import summarize

REPO = Path(__file__).resolve().parents[2]


def records(n: int, ranks: int) -> tuple[list[StepRecord], list[WindowRecord]]:
    """A deterministic one-repeat run: one slow warm-up step, then ``n`` drifting, noisy steps per rank."""
    steps: list[StepRecord] = []
    windows: list[WindowRecord] = []
    for r in range(ranks):
        t = 10.0 + 0.03125 * r
        steps.append(StepRecord(0, Phase.WARMUP, 0, 0.0, 0.5, 9.5, 16, r))
        windows.append(WindowRecord(0, Phase.WARMUP, 0.0, 10.0, 1, 16, r))
        start = t
        for i in range(n):
            wait = 0.001 * ((i * 7 + r) % 5)
            comp = 1.0 + 0.01 * ((i * 13 + 3 * r) % 11) + 0.002 * i
            steps.append(StepRecord(0, Phase.MEASUREMENT, i, t, wait, comp, 16, r))
            t += wait + comp + 0.0005
        windows.append(WindowRecord(0, Phase.MEASUREMENT, start, t - start + 0.004, n, 16 * n, r))
    return steps, windows


# (steps per rank, ranks) -> (throughput, ci low, ci high, method), printed by the code before the change
PINNED = {
    (90, 1): (14.027021498358636, 13.557075649859529, 14.530717925307503, "batch means, 10 batches of 9 steps"),
    (37, 1): (14.727650417324877, 14.45222451309697, 14.968603403346691, "batch means, 10 batches of 3-4 steps"),
    (5, 1): (15.277379929342114, 11.306407033271388, 23.159098963641807, "batch means, 2 batches of 2-3 steps"),
    (40, 2): (29.341646799926615, 28.63969526655353, 29.670297835965012, "batch means, 10 batches of 4 steps"),
    (13, 2): (30.100213451032893, 29.266527027813307, 30.234930604471113, "batch means, 6 batches of 2-3 steps"),
}


@pytest.mark.parametrize(("n", "ranks"), sorted(PINNED))
def test_one_repeat_interval_is_unchanged(n: int, ranks: int) -> None:
    throughput, low, high, method = PINNED[(n, ranks)]
    s = summarize(*records(n, ranks))
    ci = s.throughput_ci95
    assert ci is not None
    assert (s.throughput, ci.low, ci.high, ci.method) == (throughput, low, high, method)


def committed_one_repeat_results() -> list[Path]:
    root = REPO / "submissions"
    found = []
    for path in sorted(root.rglob("result_*.json")) if root.is_dir() else []:
        doc = json.loads(path.read_text())
        if doc.get("summary") and len(doc["summary"]["repeat_throughputs"]) == 1:
            found.append(path)
    return found


@pytest.mark.parametrize("path", committed_one_repeat_results(), ids=lambda p: p.name)
def test_committed_one_repeat_results_recompute_to_the_stored_interval(path: Path) -> None:
    doc = json.loads(path.read_text())
    steps = [StepRecord.from_dict(s) for s in doc["steps"]]
    windows = [WindowRecord.from_dict(w) for w in doc["windows"]]
    stored = doc["summary"]["throughput_ci95"]
    ci = summarize(steps, windows).throughput_ci95
    assert ci is not None
    assert (ci.low, ci.high, ci.method) == (stored["low"], stored["high"], stored["method"])
