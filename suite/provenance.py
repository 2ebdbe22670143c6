"""Where a result came from: suite version, git commit and whether the tree was dirty."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from suite import __version__

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def git_state(root: Path = PROJECT_ROOT) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout at ``root``; (None, None) outside a git checkout."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return commit.stdout.strip(), bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None


def provenance() -> dict[str, object]:
    """Fields of :class:`suite.results.Provenance` for a result written now."""
    commit, dirty = git_state()
    return {
        "suite_version": __version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
