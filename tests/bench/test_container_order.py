"""The docker/local verdict and the start order (suite.bench.container_result): sessions alternate
which worker starts first, the order effect is split out, and an unbalanced run cannot pass."""

from __future__ import annotations

import json

import pytest

from suite.bench.container_result import (
    ContainerResult,
    ContainerSettings,
    SidePair,
    describe,
    first_started,
    summarize_sessions,
)


def _result(docker_local: float, second: float, sessions: int, pairs: int = 12) -> ContainerResult:
    """Pairs where docker/local is ``docker_local`` and the worker started second runs ``second``
    times as fast, with a little alternating noise, the start order as the bench sets it."""
    got: list[SidePair] = []
    for s in range(sessions):
        ratio = docker_local * (second if first_started(s) == "local" else 1 / second)
        for i in range(pairs):
            noise = 1 + 0.002 * (-1) ** (i // 2) * (1 + i % 3)
            got.append(SidePair(s, i, i % 2 == 1, 10.0, 10.0 * ratio * noise, 0.01, 1.95, 1.95))
    per, pooled = summarize_sessions(got, sessions)
    return ContainerResult(
        ContainerSettings(sessions=sessions, pairs=pairs),
        got,
        pooled,
        per,
    )


def test_sessions_alternate_which_side_starts_first() -> None:
    assert [first_started(s) for s in range(5)] == ["local", "docker", "local", "docker", "local"]


def test_the_order_effect_is_divided_out_and_the_balanced_figure_passes() -> None:
    """docker/local 1.000 with a 2.7% advantage for the second worker (what two local workers
    showed on a Xeon): each order's sessions lie outside the goal, the balanced pooled CI inside."""
    result = _result(1.0, 1.027, sessions=4)
    effect = result.order_effect()
    assert effect is not None
    assert effect.local_first == pytest.approx(1.027, rel=5e-3) and effect.docker_first == pytest.approx(
        1 / 1.027, rel=5e-3
    )
    assert effect.second_advantage == pytest.approx(1.027, rel=5e-3)
    assert effect.docker_local == pytest.approx(1.0, abs=5e-3)
    assert result.balanced
    assert result.summary is not None and result.summary.low is not None and result.summary.high is not None
    assert result.summary.low >= 0.98 and result.summary.high <= 1.02 and result.meets_goal
    text = describe(result)
    assert "within" in text and "not within" not in text
    assert "per session (the side started first): 1.0" in text and "(docker)" in text and "(local)" in text
    assert "the worker started second ran 1.02" in text
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["started_first"] == ["local", "docker", "local", "docker"] and doc["balanced"] is True
    assert doc["order_effect"]["second_advantage"] == pytest.approx(1.027, rel=5e-3)


def test_an_unbalanced_run_cannot_pass_even_with_a_tight_ci_inside() -> None:
    """Three sessions (two local-first): the pooled CI can lie inside [0.98, 1.02], but the
    order effect does not cancel, so the verdict is "cannot decide" with the fix."""
    result = _result(1.0, 1.005, sessions=3)
    s = result.summary
    assert s is not None and s.low is not None and s.high is not None and s.low >= 0.98 and s.high <= 1.02
    assert not result.balanced and not result.meets_goal
    text = describe(result)
    assert "cannot decide" in text and "not balanced" in text and "--docker-sessions 4" in text


def test_one_session_has_no_order_effect_and_a_real_gap_fails() -> None:
    assert _result(1.0, 1.0, sessions=1).order_effect() is None
    gap = _result(1.05, 1.0, sessions=2)
    assert gap.balanced and not gap.meets_goal and "not within" in describe(gap)
