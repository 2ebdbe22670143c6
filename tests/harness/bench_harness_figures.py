"""Printed figures for the harness's bounded-work claims (a benchmark, not a test: pytest does not collect it).

    .venv/bin/python tests/harness/bench_harness_figures.py

1. ``summarize`` on 20k measured steps across 2 ranks (one repeat, and 4,000 one-step repeats).
2. ``check_steady_state`` on one 40k-step window: time and peak traced memory.
3. The sampler's cost per reading: CPU time of one reading, and the time a pure-Python main
   thread loses per reading while sampling every 20 ms (GIL plus CPU), for the in-process
   psutil reading used before (replicated here) and for today's sampler process.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import psutil

from harness.procstat import Reader
from harness.records import Phase, StepRecord, WindowRecord
from harness.sampler import UtilizationSampler
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
    sampler_figures()


def psutil_reading(proc: psutil.Process) -> None:
    """The reading of the in-process sampler before issue 13: per-core percent and tree RSS via psutil."""
    psutil.cpu_percent(percpu=True)
    for p in [proc, *proc.children(recursive=True)]:
        p.memory_info()


def cpu_per_reading(read: Callable[[], object]) -> float:
    read()
    cpu = []
    for _ in range(200):
        t0 = time.thread_time()
        read()
        cpu.append(time.thread_time() - t0)
    return statistics.median(cpu)


def main_thread_loss(start: Callable[[], Callable[[], int]], seconds: float = 2.0, pairs: int = 5) -> float:
    """Seconds a busy pure-Python main thread loses per reading (gaps > 50 us, minus a baseline).

    The median of ``pairs`` interleaved (baseline, sampling) pairs: on a shared machine one pair is noise.
    """

    def gaps(run: bool) -> tuple[float, int]:
        stop = start() if run else (lambda: 0)
        end = time.perf_counter() + seconds
        last = time.perf_counter()
        lost = 0.0
        while (now := time.perf_counter()) < end:
            if now - last > 50e-6:
                lost += now - last
            last = now
        return lost, stop()

    losses = []
    for _ in range(pairs):
        base, _ = gaps(False)
        lost, n = gaps(True)
        losses.append((lost - base) / max(n, 1))
    return statistics.median(losses)


def in_process_thread() -> Callable[[], int]:
    proc, done, count = psutil.Process(), threading.Event(), [0]

    def loop() -> None:
        while not done.wait(0.02):
            psutil_reading(proc)
            count[0] += 1

    threading.Thread(target=loop, daemon=True).start()

    def stop() -> int:
        done.set()
        return count[0]

    return stop


def sampler_process() -> Callable[[], int]:
    sampler = UtilizationSampler(0.02, origin=time.perf_counter()).start()
    return lambda: len(sampler.stop())  # the readings are parsed here, after the measured loop


def sampler_figures() -> None:
    proc = psutil.Process()
    print(f"processes on the machine: {len(psutil.pids())}")
    before = cpu_per_reading(lambda: psutil_reading(proc))
    after = cpu_per_reading(Reader(proc.pid).read)
    reader = Reader(proc.pid)
    reader.read()
    time.sleep(0.05)
    line = json.dumps(reader.read())
    sampler = UtilizationSampler(0.5)
    parse = cpu_per_reading(lambda: sampler._parse(line))
    print(
        f"CPU per reading in the rank: in-process psutil {before * 1e6:.0f} us during the run; "
        f"today {parse * 1e6:.0f} us after the run (parsing one line)"
    )
    print(f"CPU per reading in the sampler process (outside the rank): {after * 1e6:.0f} us")
    print(f"main-thread time lost per reading: in-process psutil {main_thread_loss(in_process_thread) * 1e6:.0f} us")
    print(f"main-thread time lost per reading: sampler process {main_thread_loss(sampler_process) * 1e6:.0f} us")


if __name__ == "__main__":
    main()
