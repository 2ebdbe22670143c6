"""Where a batch was preprocessed: the process a tf.data pipeline ran in (host, pid, CPUs)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from harness.system import parse_cpulist


@dataclass(frozen=True)
class Origin:
    """The process that preprocessed a batch.

    Attributes:
        host: its host name (a container's id inside docker).
        pid: its process id.
        cpus: the CPUs it was allowed to run on (its affinity / cpuset).
    """

    host: str
    pid: int
    cpus: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def parse_origin(raw: bytes) -> Origin:
    """Parse an origin string ``b"<hostname>\\n<contents of /proc/self/status>"``.

    Raises:
        ValueError: the status part lacks ``Pid`` or ``Cpus_allowed_list``.
    """
    text = raw.decode(errors="replace")
    host, _, status = text.partition("\n")
    pid = re.search(r"^Pid:\s*(\d+)", status, re.M)
    cpus = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
    if pid is None or cpus is None:
        raise ValueError(f"origin record lacks Pid or Cpus_allowed_list: {text[:200]!r}")
    return Origin(host.strip(), int(pid.group(1)), tuple(parse_cpulist(cpus.group(1))))
