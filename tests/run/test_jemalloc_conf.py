"""allocator=jemalloc keeps freed large buffers mapped (no page faults on reuse).

A real jemalloc is preloaded into a child Python that allocates, touches and frees the
same 64 MiB buffer over and over, as a training step does with its activations; the
child's minor page faults per cycle show whether jemalloc handed the pages back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from suite import launchers as launch
from suite.launchers import InlineLaunch, allocators

BUFFER_BYTES = 64 * 1024 * 1024
CYCLES = 8

CHILD = f"""
import ctypes, json, resource
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def cycle():
    p = libc.malloc({BUFFER_BYTES})
    ctypes.memset(p, 1, {BUFFER_BYTES})
    libc.free(p)
cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({CYCLES}):
    cycle()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({{"faults_per_cycle": (after - before) / {CYCLES}}}))
"""


def _faults_per_cycle(malloc_conf: str | None) -> float:
    plan = launch.plan_launch(
        InlineLaunch(allocator="jemalloc", malloc_conf=malloc_conf), Path("j"), Path("o"), base_env={}
    )
    env = {**os.environ, **plan.env_set}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True, timeout=60)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["faults_per_cycle"])


@pytest.fixture(autouse=True)
def _needs_jemalloc() -> None:
    if allocators.find_library(allocators.ALLOCATORS["jemalloc"][0]) is None:
        pytest.skip("libjemalloc.so.2 not installed (apt-get install libjemalloc2)")


def test_default_jemalloc_conf_reuses_pages_that_run_cpu_conf_purges() -> None:
    pages = BUFFER_BYTES / os.sysconf("SC_PAGE_SIZE")
    ours = _faults_per_cycle(None)
    run_cpus = _faults_per_cycle(allocators.RUN_CPU_JEMALLOC_CONF)
    # run_cpu's conf: the huge arena purges on free, so every page faults in again.
    assert run_cpus > 0.5 * pages, run_cpus
    # trainbench's default: the freed buffer stays mapped and is reused as it is.
    assert ours < 0.02 * pages, ours


def test_explicit_malloc_conf_wins_over_the_default() -> None:
    plan = launch.plan_launch(InlineLaunch(allocator="jemalloc", malloc_conf="narenas:1"), Path("j"), Path("o"))
    assert plan.env_set["MALLOC_CONF"] == "narenas:1"
    plan = launch.plan_launch(InlineLaunch(allocator="jemalloc"), Path("j"), Path("o"), base_env={})
    assert plan.env_set["MALLOC_CONF"] == allocators.JEMALLOC_CONF
