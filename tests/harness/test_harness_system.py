"""System capture (harness.system): cpulists, a fake sysfs tree, binding, env and mapped libraries."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from harness.hugepages import thp_facts
from harness.interpreter import python_info
from harness.isa import parse_cpuinfo
from harness.system import capture_system, loaded_libraries, numa_topology, parse_cpulist, process_binding

REPO = Path(__file__).resolve().parents[2]
JEMALLOC = Path("/lib/x86_64-linux-gnu/libjemalloc.so.2")


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
        ("0-3,8,10-11\n", [0, 1, 2, 3, 8, 10, 11]),
        ("5", [5]),
        ("8,0-1,1", [0, 1, 8]),
        ("2-2", [2]),
        ("", []),
        ("\n", []),
    ],
)
def test_parse_cpulist(text: str, cpus: list[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("bad", ["abc", "0-x", "3-1", "1-", "-2", "0-3;5", "1.5"])
def test_parse_cpulist_rejects_bad_input(bad: str) -> None:
    with pytest.raises(ValueError, match=r"invalid literal for int|bad cpulist range"):
        parse_cpulist(bad)


def make_node(root: Path, n: int, cpulist: str | None, mem_kb: int | None) -> None:
    d = root / f"node{n}"
    d.mkdir(parents=True)
    if cpulist is not None:
        (d / "cpulist").write_text(cpulist + "\n")
    if mem_kb is not None:
        (d / "meminfo").write_text(
            f"Node {n} MemTotal:       {mem_kb} kB\nNode {n} MemFree:        {mem_kb // 2} kB\n"
            f"Node {n} MemUsed:        {mem_kb - mem_kb // 2} kB\n"
        )


def test_numa_topology_on_fake_sysfs(tmp_path: Path) -> None:
    make_node(tmp_path, 0, "0-3,8-11", 16_384_000)
    make_node(tmp_path, 1, "4-7,12-15", 8_192_000)
    # sysfs also holds files that are not nodes
    (tmp_path / "possible").write_text("0-1\n")
    (tmp_path / "power").mkdir()
    assert numa_topology(tmp_path) == [
        {"node": 0, "cpus": [0, 1, 2, 3, 8, 9, 10, 11], "memory_bytes": 16_384_000 * 1024},
        {"node": 1, "cpus": [4, 5, 6, 7, 12, 13, 14, 15], "memory_bytes": 8_192_000 * 1024},
    ]


def test_numa_topology_orders_nodes_numerically_and_tolerates_missing_files(tmp_path: Path) -> None:
    make_node(tmp_path, 10, "20-21", None)
    make_node(tmp_path, 2, None, 1024)
    make_node(tmp_path, 0, "", 2048)  # memory-only node: empty cpulist
    assert numa_topology(tmp_path) == [
        {"node": 0, "cpus": [], "memory_bytes": 2048 * 1024},
        {"node": 2, "cpus": [], "memory_bytes": 1024 * 1024},
        {"node": 10, "cpus": [20, 21], "memory_bytes": None},
    ]


def test_numa_topology_without_nodes(tmp_path: Path) -> None:
    assert numa_topology(tmp_path) == []
    assert numa_topology(tmp_path / "missing") == []


def test_process_binding_matches_affinity() -> None:
    b = process_binding()
    assert b["cpus_allowed"] == sorted(os.sched_getaffinity(0))
    status = Path("/proc/self/status").read_text()
    if "Mems_allowed_list" in status:
        mems = b["mems_allowed"]
        assert mems
        assert mems == sorted(set(mems))
        nodes = {n["node"] for n in numa_topology()}
        if nodes:
            assert set(mems) <= nodes


def test_capture_system_keys_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("TRAINBENCH_TEST_MARKER", "x")
    monkeypatch.setenv("UNRELATED_TEST_VARIABLE", "y")
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "1")
    d = capture_system()
    assert set(d) == {
        "host",
        "cpu",
        "isa",
        "numa_nodes",
        "binding",
        "memory",
        "gpus",
        "python",
        "libraries",
        "torch",
        "env",
        "loaded_libraries",
        "container",
    }
    assert d["env"]["OMP_NUM_THREADS"] == "3"
    assert d["env"]["TRAINBENCH_TEST_MARKER"] == "x"
    assert "UNRELATED_TEST_VARIABLE" not in d["env"]
    assert d["env"]["THP_MEM_ALLOC_ENABLE"] == "1"  # torch's huge-page switch moves throughput by ~7%
    assert d["memory"]["transparent_hugepages"] == thp_facts()
    assert d["binding"] == process_binding()
    assert d["cpu"]["logical_cores"] >= 1
    assert d["memory"]["total_bytes"] > 0
    assert set(d["loaded_libraries"]) == {"jemalloc", "tcmalloc", "intel_openmp", "gnu_openmp"}
    assert d["python"]["version"] == ".".join(str(v) for v in sys.version_info[:3])
    assert d["python"] == python_info()  # with its build: compiler, date, libpython linkage
    assert d["isa"]["arch"] in ("x86_64", "aarch64", platform.machine().lower())
    assert d["isa"]["onednn_isa"] is None  # the oneDNN probe costs seconds: opt-in only
    assert isinstance(d["isa"]["bf16_native"], bool)
    json.dumps(d)  # JSON-ready


def test_loaded_libraries_shape_in_this_process() -> None:
    libs = loaded_libraries()
    assert set(libs) == {"jemalloc", "tcmalloc", "intel_openmp", "gnu_openmp"}
    assert all(isinstance(v, list) for v in libs.values())


def _libraries_in_child(extra_env: dict[str, str]) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env.update(extra_env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    code = "import json; from harness.system import loaded_libraries; print(json.dumps(loaded_libraries()))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    result: dict[str, list[str]] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(not JEMALLOC.exists(), reason=f"{JEMALLOC} is not installed (apt-get install libjemalloc2)")
def test_loaded_libraries_sees_preloaded_jemalloc() -> None:
    with_preload = _libraries_in_child({"LD_PRELOAD": str(JEMALLOC)})
    assert with_preload["jemalloc"], with_preload
    assert any(Path(p).name == "libjemalloc.so.2" for p in with_preload["jemalloc"])
    without = _libraries_in_child({})
    assert without["jemalloc"] == []


def test_the_cpu_description_is_py_cpuinfo_without_its_cpuid_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's CPU comes from py-cpuinfo's own sources (``/proc/cpuinfo``, ``lscpu``) in this
    process: the model and flags are the kernel's, with none of the spellings only CPUID adds, and no
    Python is started (``get_cpu_info()`` starts one, whose CPUID child times the clock for a second)."""
    started: list[str] = []
    real_popen = subprocess.Popen

    def recording_popen(args: Any, *rest: Any, **kwargs: Any) -> Any:
        started.append(str(args[0] if isinstance(args, list | tuple) else args))
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    cpu = capture_system()["cpu"]
    assert "error" not in cpu and cpu["logical_cores"] == psutil.cpu_count(logical=True)
    assert sys.executable not in started and not [c for c in started if Path(c).name.startswith("python")], started
    text = Path("/proc/cpuinfo").read_text()
    model, flags = parse_cpuinfo(text)
    assert set(cpu["flags"]) == flags, set(cpu["flags"]) ^ flags
    if "model name" in text:  # x86; aarch64 kernels print no model name, and lscpu names the part
        assert cpu["model"] == model
