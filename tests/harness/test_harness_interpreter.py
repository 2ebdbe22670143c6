"""The interpreter's build is read from the process itself: libpython's linkage from its memory map."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from harness.interpreter import libpython_shared, python_info, python_loop_s

MAPPED_LINE = "7f00a0000000-7f00a0400000 r-xp 00000000 fe:01 123 {}\n"


def test_linkage_is_read_from_the_memory_map(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.write_text(MAPPED_LINE.format("/opt/py/lib/libpython3.11.so.1.0") + MAPPED_LINE.format("/usr/lib/libc.so.6"))
    static = tmp_path / "static"
    static.write_text(MAPPED_LINE.format("/usr/bin/python3.11") + MAPPED_LINE.format("/usr/lib/libc.so.6"))
    assert libpython_shared(shared) is True
    assert libpython_shared(static) is False
    assert libpython_shared(tmp_path / "missing") is None


def test_this_interpreter_is_described_as_it_runs() -> None:
    info = python_info()
    assert info["version"] == platform.python_version() and info["implementation"] == "CPython"
    build = str(info["build"])
    assert build.startswith(platform.python_compiler() + ", ") and "  " not in build
    # the linkage is the one the dynamic linker reports for this executable
    ldd = subprocess.run(["ldd", sys.executable], capture_output=True, text=True, check=False).stdout
    assert build.endswith("libpython shared" if "libpython" in ldd else "libpython static"), (build, ldd)


def test_the_pure_python_loop_times_work_that_scales_with_its_length() -> None:
    """Best-of-N times of the real loop: positive, and a loop 100 times as long takes longer
    (by far more than any timer noise); bad arguments are refused."""
    short, long = python_loop_s(repeats=3, length=2_000), python_loop_s(repeats=3, length=200_000)
    assert 0 < short < long
    with pytest.raises(ValueError, match="must be >= 1"):
        python_loop_s(repeats=0)
