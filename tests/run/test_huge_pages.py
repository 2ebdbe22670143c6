"""torch's huge-page switch as the system description predicts it (harness.hugepages.thp_facts):
a real torch process puts a large tensor in transparent huge pages exactly when
``torch_tensors`` says so, with ``THP_MEM_ALLOC_ENABLE=1`` and without it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.hugepages import thp_facts, thp_policy

PROBE = (
    "import re, torch\n"
    "t = torch.ones(16 << 20)\n"  # 64 MiB of float32, written
    "t.add_(1)\n"
    "text = open('/proc/self/smaps').read()\n"
    "print(sum(int(k) for k in re.findall(r'^AnonHugePages:\\s+(\\d+) kB', text, re.M)))\n"
)


def _huge_kib(value: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    if value is not None:
        env["THP_MEM_ALLOC_ENABLE"] = value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(thp_policy()["enabled"] is None, reason="this kernel shows no transparent-huge-page policy")
@pytest.mark.parametrize("value", ["1", None, "0"])
def test_torch_gets_huge_pages_exactly_when_the_description_says(value: str | None) -> None:
    facts = thp_facts(env={} if value is None else {"THP_MEM_ALLOC_ENABLE": value})
    huge = _huge_kib(value)
    if facts["torch_tensors"]:
        assert huge >= 32 << 10, f"{facts}: only {huge} KiB in huge pages"  # half the tensor or more
    else:  # "never", or "madvise" without the switch: nothing asks for huge pages
        assert huge == 0, f"{facts}: {huge} KiB in huge pages"
