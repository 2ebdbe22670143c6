"""Transparent huge pages (harness.hugepages): the kernel's policy read from a fake sysfs tree,
and whether torch's CPU tensors get huge pages under each policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.hugepages import MAX_SYSFS_BYTES, THP_ROOT, thp_facts, thp_policy, torch_requests_thp


def _sysfs(root: Path, enabled: str, defrag: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "enabled").write_text(enabled + "\n")
    (root / "defrag").write_text(defrag + "\n")
    return root


@pytest.mark.parametrize(
    ("enabled", "defrag", "policy"),
    [
        ("always [madvise] never", "always defer defer+madvise [madvise] never", ("madvise", "madvise")),
        ("[always] madvise never", "always defer [defer+madvise] madvise never", ("always", "defer+madvise")),
        ("always madvise [never]", "[always] defer defer+madvise madvise never", ("never", "always")),
    ],
)
def test_the_policy_is_the_bracketed_choice(tmp_path: Path, enabled: str, defrag: str, policy: tuple[str, str]) -> None:
    got = thp_policy(_sysfs(tmp_path / "thp", enabled, defrag))
    assert (got["enabled"], got["defrag"]) == policy


def test_a_kernel_without_thp_gives_none(tmp_path: Path) -> None:
    assert thp_policy(tmp_path / "missing") == {"enabled": None, "defrag": None}


def test_a_file_without_a_choice_or_too_long_gives_none(tmp_path: Path) -> None:
    root = _sysfs(tmp_path / "thp", "always madvise never", "x" * (2 * MAX_SYSFS_BYTES) + " [madvise]")
    assert thp_policy(root) == {"enabled": None, "defrag": None}  # the bracket lies beyond the bound


def test_this_machines_policy_reads_as_a_known_word_or_none() -> None:
    got = thp_policy()
    assert got["enabled"] in ("always", "madvise", "never", None)
    if (THP_ROOT / "enabled").exists():
        text = (THP_ROOT / "enabled").read_text()
        assert f"[{got['enabled']}]" in text


@pytest.mark.parametrize(
    ("env_value", "policy", "expected"),
    [
        (None, "always", True),
        ("0", "always", True),
        ("1", "madvise", True),
        (None, "madvise", False),
        ("0", "madvise", False),
        ("yes", "madvise", False),  # torch's check_env takes only "0" and "1"; it ignores the rest
        ("1", "never", False),
        ("1", None, None),
    ],
)
def test_whether_torch_tensors_get_huge_pages(env_value: str | None, policy: str | None, expected: bool | None) -> None:
    assert torch_requests_thp(env_value, policy) is expected


def test_the_facts_say_whether_this_process_tensors_get_huge_pages(tmp_path: Path) -> None:
    root = _sysfs(tmp_path / "thp", "always [madvise] never", "[madvise]")
    assert thp_facts(root, {"THP_MEM_ALLOC_ENABLE": "1"}) == {
        "enabled": "madvise",
        "defrag": "madvise",
        "torch_tensors": True,
    }
    assert thp_facts(root, {})["torch_tensors"] is False
    assert thp_facts(tmp_path / "missing", {"THP_MEM_ALLOC_ENABLE": "1"})["torch_tensors"] is None
