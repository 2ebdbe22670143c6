"""The optional parts of the install (issue 13, item 7): validation runs on the core alone, and a
command that needs a missing extra says which one to install (exit 2), never a traceback.

"Missing" is real here: the command runs in its own interpreter where importing the extra's
libraries fails exactly as it does in an environment without them (ModuleNotFoundError).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from suite.extras import EXTRAS
from tests.conftest import REPO

WITHOUT = """
import importlib.abc, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Missing())
from suite.commands import main
main({args!r}, prog_name="trainbench")
"""

HEAVY = ("torch", "torchvision", "tensorflow", "horovod", "mlflow", "docker", "matplotlib", "mlperf_logging")


def trainbench_without(blocked: tuple[str, ...], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``trainbench ARGS`` in an interpreter where the ``blocked`` libraries are not installed."""
    code = WITHOUT.format(blocked=blocked, args=list(args))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_validation_needs_only_the_core(tmp_path: Path) -> None:
    """`make validate` installs the core alone: the committed submissions validate without any extra."""
    proc = trainbench_without(HEAVY, "validate", "submissions", "--json", str(tmp_path / "report.json"))
    assert proc.returncode == 0, proc.stderr
    assert "COMPLIANT" in proc.stdout
    assert (tmp_path / "report.json").stat().st_size > 0


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        (("torch", "torchvision"), ["run", "resnet50-cpu", "--no-tracking"], "train"),
        (("mlflow",), ["run", "resnet50-cpu"], "tracking"),
        (("docker",), ["run", "resnet50-cpu", "--runtime", "docker", "--no-tracking"], "containers"),
        (("torch", "torchvision"), ["bench", "overhead"], "train"),
        (("matplotlib",), ["report", "submissions", "--no-tracking"], "plots"),
    ],
)
def test_a_missing_extra_is_named_with_exit_2(
    blocked: tuple[str, ...], args: list[str], extra: str, tmp_path: Path
) -> None:
    """Before anything runs: no result directory, no traceback, the extra and its install command."""
    proc = trainbench_without(blocked, *args, "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert f"'{extra}' extra" in proc.stderr and f"trainbench[{extra}]" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_extras_match_pyproject() -> None:
    """Every extra that suite.extras names is in pyproject.toml, and each module it lists is installed
    by a distribution that the extra (or an extra it includes) requires."""
    optional = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    providers = packages_distributions()

    def normal(name: str) -> str:  # PEP 503: tensorflow_cpu and tensorflow-cpu are one distribution
        return re.sub(r"[-_.]+", "-", name).lower()

    def names(extra: str) -> set[str]:
        out: set[str] = set()
        for line in optional[extra]:
            if line.startswith("trainbench["):
                for inner in line[len("trainbench[") : line.index("]")].split(","):
                    out |= names(inner.strip())
            else:
                match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
                assert match is not None, line
                out.add(normal(match.group(1)))
        return out

    for extra, modules in EXTRAS.items():
        assert extra in optional, extra
        required = names(extra)
        for module in modules:
            dists = {normal(d) for d in providers.get(module, [])}
            if not dists:
                continue  # not installed in this environment (e.g. an extra this venv lacks)
            assert dists & required, f"{module} ({dists}) is not required by the {extra!r} extra ({required})"
