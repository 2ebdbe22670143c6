"""Input-bound verdicts in plain words."""

from __future__ import annotations

import pytest

from suite.run.diagnosis import diagnose


def test_verdicts() -> None:
    d = diagnose(0.83, 95.0)
    assert d["verdict"] == "input-bound"
    assert d["message"].startswith("input-bound: 83% of each step waits for data; add loader workers")
    assert d["message"].endswith("CPU 95% busy during measurement")
    assert diagnose(0.2, None)["verdict"] == "partly input-bound"
    assert diagnose(0.01, 50.0)["verdict"] == "compute-bound"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        diagnose(1.5, None)
