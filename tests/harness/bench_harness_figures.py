"""Printed figures for the harness's bounded-work claims (a benchmark, not a test: pytest does not collect it).

    .venv/bin/python tests/harness/bench_harness_figures.py

1. ``summarize`` on 20k measured steps across 2 ranks (one repeat, and 4,000 one-step repeats).
2. ``check_steady_state`` on one 40k-step window: time and peak traced memory.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import summarize
from harness.steady import check_steady_state

M = Phase.MEASUREMENT


def two_ranks(steps_per_rank: int, repeats: int) -> tuple[list[StepRecord], list[WindowRecord]]:
    rng = np.random.default_rng(0)
    steps: list[StepRecord] = []
    windows: list[WindowRecord] = []
    per = steps_per_rank // repeats
    for rank in range(2):
        t = 0.0
        for r in range(repeats):
            start = t
            for i in range(per):
                dt = 1.0 + 0.05 * float(rng.random())
                steps.append(StepRecord(r, M, i, t, 0.001, dt, 16, rank))
                t += dt + 0.001
            windows.append(WindowRecord(r, M, start, t - start, per, 16 * per, rank))
    return steps, windows


def timed(label: str, fn: object) -> None:
    assert callable(fn)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    print(f"{label}: {best * 1e3:.0f} ms (best of 3)")


def main() -> None:
    one = two_ranks(10_000, 1)
    timed("summarize, 20k steps, 2 ranks, 1 repeat", lambda: summarize(*one))
    many = two_ranks(10_000, 4_000)
    timed("summarize, 20k steps, 2 ranks, 4,000 repeats", lambda: summarize(*many))
    rng = np.random.default_rng(1)
    series = list(1.0 + 0.3 * np.arange(40_000) / 39_999 + 0.01 * rng.normal(size=40_000))
    timed("check_steady_state, one 40k-step window", lambda: check_steady_state([series]))
    tracemalloc.start()
    check_steady_state([series])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"check_steady_state, one 40k-step window: peak traced memory {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
