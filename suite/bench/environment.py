"""What the two sides of the docker/local benchmark ran with (:mod:`suite.bench.container`):
the fields of two system descriptions (:func:`harness.system.capture_system`) that can change
throughput, compared field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COMPARED: tuple[tuple[str, ...], ...] = (
    ("python", "version"),
    ("python", "build"),
    ("torch", "version"),
    ("torch", "num_threads"),
    ("torch", "num_interop_threads"),
    ("torch", "cpu_capability"),
    ("libraries",),
    ("loaded_libraries",),
    ("env",),
    ("binding",),
    ("container", "cgroup_cpus"),
    ("memory", "transparent_hugepages"),
)
"""Environment fields (paths into ``result.environment``) that can change throughput."""

IGNORED_ENV = frozenset({"TRAINBENCH_IMAGE", "TRAINBENCH_ROOT_PID", "TORCHINDUCTOR_CACHE_DIR"})
"""Variables that name where a run ran, not how fast: left out of the comparison."""


def _get(env: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = env
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def environment_differences(local: dict[str, Any], docker: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(field, local value, docker value)`` for each :data:`COMPARED` field that differs
    (dicts compared key by key; library paths compared by file name, since the two sides
    install the same wheels under different prefixes)."""
    out: list[tuple[str, Any, Any]] = []
    for path in COMPARED:
        a, b = _get(local, path), _get(docker, path)
        name = ".".join(path)
        if isinstance(a, dict) or isinstance(b, dict):
            a, b = a or {}, b or {}
            for key in sorted(set(a) | set(b)):
                if path == ("env",) and key in IGNORED_ENV:
                    continue
                va, vb = a.get(key), b.get(key)
                if path == ("loaded_libraries",):
                    va = sorted(Path(p).name for p in va or [])
                    vb = sorted(Path(p).name for p in vb or [])
                if va != vb:
                    out.append((f"{name}.{key}", va, vb))
        elif a != b:
            out.append((name, a, b))
    return out
