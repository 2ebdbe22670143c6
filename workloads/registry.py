"""Name registry of workloads: raises on duplicates and lists valid names on a miss.

Workloads are registered explicitly (no discovery by naming convention, where a typo
silently drops a benchmark).
"""

from __future__ import annotations

from workloads.entry import WorkloadEntry

__all__ = ["UnknownWorkloadError", "WorkloadEntry", "get", "names", "register"]


class UnknownWorkloadError(KeyError):
    """A workload name that is not registered; the message lists the valid names."""

    def __str__(self) -> str:
        return str(self.args[0])


_REGISTRY: dict[str, WorkloadEntry] = {}


def register(entry: WorkloadEntry) -> None:
    """Add a workload; raises ``ValueError`` if the name is taken."""
    if entry.name in _REGISTRY:
        raise ValueError(f"workload {entry.name!r} is registered twice")
    _REGISTRY[entry.name] = entry


def get(name: str) -> WorkloadEntry:
    """Look a workload up.

    Raises:
        UnknownWorkloadError: no such name; the message lists the valid ones.
    """
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownWorkloadError(
            f"unknown workload {name!r}; valid workloads: {', '.join(sorted(_REGISTRY)) or '(none)'}"
        ) from None


def names() -> list[str]:
    """Registered workload names, sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from workloads.mnist_dataheavy import ENTRY as mnist_dataheavy
    from workloads.numa_ddp import ENTRY as numa_ddp
    from workloads.resnet50_cpu import ENTRY as resnet50_cpu
    from workloads.resnet50_gpu import ENTRY as resnet50_gpu
    from workloads.resnet50_tf import ENTRY as resnet50_tf

    for entry in (resnet50_cpu, mnist_dataheavy, numa_ddp, resnet50_gpu, resnet50_tf):
        register(entry)
