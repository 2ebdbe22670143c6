"""``make bench``'s arithmetic and plumbing (its figures come from running it, not from tests):
the order-statistic CI of a median of ratios, the environment comparison of docker/local, and
the overhead benchmark end to end on a tiny real ResNet-50 (one process, the real harness)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import psutil
import pytest

from suite.bench.container_result import ContainerResult, ContainerSettings, SidePair, describe
from suite.bench.environment import environment_differences
from suite.bench.overhead import OverheadSettings, measure_overhead
from suite.bench.ratios import median_interval, quad_ratios, summarize_ratios


def test_median_interval_matches_the_binomial_tables() -> None:
    """Conover (1999) table A3 / the binomial: n=6 -> (x1, x6); n=20 -> (x6, x15); n=30 -> (x10, x21)."""
    assert median_interval(5) is None
    six = median_interval(6)
    assert six is not None and six[0] == 1 and six[1] == pytest.approx(1 - 2 / 64)
    twenty = median_interval(20)
    assert twenty is not None and twenty[0] == 6 and twenty[1] >= 0.95
    thirty = median_interval(30)
    assert thirty is not None and thirty[0] == 10 and thirty[1] >= 0.95
    # the next order statistic inward would fall below 95%
    assert 1 - 2 * sum(math.comb(30, i) for i in range(11)) / 2**30 < 0.95


def test_summarize_ratios_bounds_the_median_and_refuses_nonsense() -> None:
    ratios = [0.99 + 0.001 * i for i in range(20)]  # 0.990 .. 1.009
    s = summarize_ratios(list(reversed(ratios)))
    assert s.n == 20 and s.median == pytest.approx(0.9995)
    assert s.low == pytest.approx(0.995) and s.high == pytest.approx(1.004)  # x_(6), x_(15)
    assert s.minimum == pytest.approx(0.99) and s.maximum == pytest.approx(1.009)
    few = summarize_ratios([1.0, 1.01, 0.99])
    assert few.low is None and "too few to bound" in few.describe()
    with pytest.raises(ValueError):
        summarize_ratios([])
    with pytest.raises(ValueError):
        summarize_ratios([1.0, float("nan")])


def test_quads_pool_two_opposite_pairs_so_a_linear_drift_cancels() -> None:
    """A machine slowing by 1 sample/s per block, harness 1% slower than bare: pair 1 runs bare
    then harness, pair 2 harness then bare (ABBA). Each pair's ratio is off by the drift; the
    quad's is the true 0.99. A last pair without a partner is left out."""
    true = 0.99
    speeds = [100.0, 99.0, 98.0, 97.0, 96.0]  # the machine at blocks 0..4
    bare = [speeds[0], speeds[3]]
    harness = [true * speeds[1], true * speeds[2]]
    assert harness[0] / bare[0] < 0.985 and harness[1] / bare[1] > 0.995
    assert quad_ratios(harness, bare) == [pytest.approx(true)]
    assert quad_ratios([*harness, 1.0], [*bare, 1.0]) == [pytest.approx(true)]
    with pytest.raises(ValueError):
        quad_ratios([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        quad_ratios([1.0, 0.0], [1.0, 1.0])


def test_environment_differences_ignore_where_and_report_how() -> None:
    base = {
        "python": {"version": "3.11.7", "build": "GCC 12.2.0, May 9 2026 07:35:25, libpython shared"},
        "torch": {"version": "2.14.1", "num_threads": 2},
        "env": {"TRAINBENCH_IMAGE": "x", "OMP_NUM_THREADS": "2"},
        "loaded_libraries": {"gnu_openmp": ["/host/venv/torch/lib/libgomp.so.1"], "jemalloc": []},
        "binding": {"cpus_allowed": [0, 1]},
    }
    same = {
        **base,
        "env": {"OMP_NUM_THREADS": "2", "TRAINBENCH_ROOT_PID": "7"},
        "loaded_libraries": {"gnu_openmp": ["/opt/trainbench/torch/lib/libgomp.so.1"], "jemalloc": []},
    }
    assert environment_differences(base, same) == []
    other = {
        **same,
        "python": {"version": "3.11.2", "build": "GCC 12.2.0, Apr 28 2025 14:11:48, libpython static"},
        "torch": {"version": "2.14.1", "num_threads": 1},
        "loaded_libraries": {"gnu_openmp": [], "jemalloc": ["/usr/lib/libjemalloc.so.2"]},
    }
    found = {name: (a, b) for name, a, b in environment_differences(base, other)}
    assert found == {
        "python.version": ("3.11.7", "3.11.2"),
        "python.build": (
            "GCC 12.2.0, May 9 2026 07:35:25, libpython shared",
            "GCC 12.2.0, Apr 28 2025 14:11:48, libpython static",
        ),
        "torch.num_threads": (2, 1),
        "loaded_libraries.gnu_openmp": (["libgomp.so.1"], []),
        "loaded_libraries.jemalloc": ([], ["libjemalloc.so.2"]),
    }


@pytest.mark.slow
def test_overhead_benchmark_runs_the_real_harness_and_bare_loop() -> None:
    """Two pairs of one-step blocks of a tiny fp32 ResNet-50: both orders, positive throughputs,
    the harness's bookkeeping measured (> 0, far below a step), one quad whose ratio pools both
    pairs, the summaries unbounded (one quad, two pairs)."""
    lines: list[str] = []
    settings = OverheadSettings(pairs=2, block_steps=1, warmup_steps=1, batch_size=2, image_size=64, precision="fp32")
    result = measure_overhead(settings, lines.append)
    assert [p.harness_first for p in result.pairs] == [False, True]
    assert all(p.bare > 0 and p.harness > 0 and 0 < p.bookkeeping_s < 0.05 for p in result.pairs)
    assert result.precision == "fp32" and result.step_s is not None and result.bookkeeping_us is not None
    assert result.summary is not None and result.summary.low is None and not result.meets_goal
    quad = sum(p.harness for p in result.pairs) / sum(p.bare for p in result.pairs)
    assert result.summary.n == 1 and result.summary.median == pytest.approx(quad)
    assert result.pair_summary is not None and result.pair_summary.n == 2
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["pairs"][1]["ratio"] == pytest.approx(result.pairs[1].harness / result.pairs[1].bare)
    assert len(lines) == 3 and "pair 2/2 (harness first)" in lines[-1] and "cores" in lines[-1]
    assert all(p.others_cores >= 0 for p in result.pairs)
    # the sampler, paused between the harness blocks, was resumed and has exited
    assert not [c for c in psutil.Process().children(recursive=True) if "harness.procstat" in " ".join(c.cmdline())]


def test_bench_refuses_an_unknown_part(tmp_path: Path) -> None:
    from tests.conftest import trainbench

    proc = trainbench("bench", "speed", cwd=tmp_path)
    assert proc.returncode == 2 and "'speed' is not one of" in proc.stderr


def test_docker_local_verdict_says_what_an_older_worker_did_not_report() -> None:
    """A container worker from an image built before workers reported their own CPU and their
    interpreter's speed: the verdict says "not reported" for its side and prints no interpreter
    ratio, never a 0.00 that reads like a measurement; the side that reported keeps its mean."""
    pairs = [SidePair(0, i, i % 2 == 1, 10.0, 10.1 + 0.01 * i, 0.01, 1.9 + 0.02 * i, None) for i in range(4)]
    result = ContainerResult(
        ContainerSettings(sessions=1, pairs=4),
        pairs,
        summarize_ratios(quad_ratios([p.docker for p in pairs], [p.local for p in pairs])),
        python_loop_s={"local": [0.0017], "docker": []},
    )
    text = describe(result)
    assert "own CPU per block, mean: local 1.93, docker not reported cores" in text
    assert "pure-Python loop" not in text
    result.python_loop_s["docker"].append(0.0015)
    assert "runs Python 1.133x as fast" in describe(result)
