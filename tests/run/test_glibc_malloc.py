"""allocator=default: glibc's malloc with its thresholds pinned, so a step's freed activations
are reused instead of given back and faulted in again (how much was given back depended on
the process's luck: see suite.launchers.allocators.GLIBC_MALLOC_TUNABLES).

A child Python allocates, touches and frees 40 blocks of 1-7 MiB per "step", in the order a
training step does (the last freed lies at the heap's top), and counts its minor page faults
per step after the first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from suite import launchers as launch
from suite.config import RunConfig
from suite.launchers import InlineLaunch, allocators
from suite.runtimes.slurm import rank_for
from suite.specs import resolve

STEPS = 5

CHILD = f"""
import ctypes, json, resource, sys
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1:] == ["pin"]:
    from suite.launchers.allocators import pin_glibc_malloc
    pin_glibc_malloc()
sizes = [(i % 7 + 1) << 20 for i in range(40)]
def step():
    blocks = []
    for n in sizes:
        p = libc.malloc(n)
        ctypes.memset(p, 1, n)
        blocks.append(p)
    for p in blocks:
        libc.free(p)
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({STEPS}):
    step()
print(json.dumps({{"faults_per_step": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / {STEPS}}}))
"""
STEP_PAGES = sum((i % 7 + 1) << 20 for i in range(40)) / os.sysconf("SC_PAGE_SIZE")


def _faults_per_step(env_set: dict[str, str], *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"} | env_set
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["faults_per_step"])


def _plan_env(base_env: dict[str, str]) -> dict[str, str]:
    return launch.plan_launch(InlineLaunch(), Path("j"), Path("o"), base_env=base_env).env_set


def test_pinned_thresholds_keep_freed_activations_that_glibcs_own_give_back() -> None:
    pinned = _faults_per_step(_plan_env({}))
    own = _faults_per_step(_plan_env({"GLIBC_TUNABLES": ""}))  # the caller's (empty) value wins
    assert own > 0.5 * STEP_PAGES, own  # every step faults its blocks in again
    assert pinned < 0.01 * STEP_PAGES, pinned


def test_a_running_process_can_pin_the_same_thresholds() -> None:
    assert _faults_per_step({"GLIBC_TUNABLES": ""}, "pin") < 0.01 * STEP_PAGES


def test_glibc_accepts_every_value_as_written() -> None:
    loader = Path("/lib64/ld-linux-x86-64.so.2")
    if not loader.exists():
        pytest.skip("no x86-64 glibc loader here")
    env = {"GLIBC_TUNABLES": allocators.GLIBC_MALLOC_TUNABLES}
    out = subprocess.run([str(loader), "--list-tunables"], env=env, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        pytest.skip("this glibc's loader has no --list-tunables (glibc < 2.33)")
    for entry in allocators.GLIBC_MALLOC_TUNABLES.split(":"):
        name, value = entry.split("=")
        m = re.search(rf"^{re.escape(name)}: (0x[0-9a-f]+)", out.stdout, re.M)
        assert m and int(m.group(1), 16) == int(value), (entry, out.stdout)


@pytest.mark.parametrize(
    "tunables", ["glibc.malloc.arena_max=2", "glibc.malloc.trim_threshold=4294967296", "glibc.malloc.top_pad=-1"]
)
def test_what_mallopt_cannot_set_is_refused(tunables: str) -> None:
    with pytest.raises(ValueError, match=r"is not a glibc\.malloc threshold mallopt"):
        allocators.pin_glibc_malloc(tunables)


def test_a_slurm_rank_gets_the_thresholds_with_glibcs_malloc_only() -> None:
    run_dir = Path("/tmp/run")
    default: RunConfig = resolve("resnet50-cpu")
    assert rank_for(default, run_dir).env["GLIBC_TUNABLES"] == allocators.GLIBC_MALLOC_TUNABLES
    assert "GLIBC_TUNABLES" not in rank_for(resolve("resnet50-cpu", overrides=["allocator=jemalloc"]), run_dir).env
