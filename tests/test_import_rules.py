"""The layers' import rules, read from the source with ``ast`` (shared/DESIGN.md: one dependency rule).

- the stack (:data:`STACK`): every module imports only modules of its own layer or of the layers
  below it, so no import runs back up (the command line on top; WHERE ranks run,
  ``suite/runtimes/``, above HOW they start, ``suite/launchers/``; the workloads and the harness
  at the bottom);
- ``harness/`` imports nothing of ``suite/`` or ``workloads/``, nor MLflow, click or Docker;
- ``workloads/`` imports nothing of ``suite/``;
- only ``suite/validation/`` and the command line (``suite/commands/``) import ``suite/validation/``:
  a run, a benchmark and the shared modules never depend on the submission checker;
- only ``suite/tracking.py`` imports MLflow, only ``suite/containers/`` the Docker SDK, only
  ``suite/commands/`` click;
- no import cycle among trainbench's modules (imports inside functions count; imports under
  ``if TYPE_CHECKING:`` do not, as they never run);
- no ``utils.py``.

Every import statement counts, wherever it is in a module, so a lazy import cannot hide a
back-arrow. A second check runs the command line with the heavy libraries blocked, as the
TensorFlow image has none of them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("harness", "workloads", "suite")

STACK: list[tuple[str, ...]] = [
    ("suite.__main__", "suite.commands"),  # the command line: one click group, one module per area
    ("suite.bench",),  # the developers' benchmarks that print figures
    ("suite.ladder",),  # many configs through run/, under one MLflow parent
    ("suite.validation", "suite.compare", "suite.export"),  # readers of results: checker, comparison, MLPerf
    ("suite.run",),  # one run end to end: preflight, claim, run via a runtime, build the result, finish
    ("suite.runtimes",),  # WHERE the ranks run: local, docker, slurm
    ("suite.slurm",),  # the Slurm client, the node-side helpers, the demo cluster
    ("suite.containers",),  # images, builds, locks, the engine: the only Docker code
    ("suite.datasets",),  # dataset downloads and the tf.data service
    ("suite.tracking",),  # the only MLflow code
    ("suite.labels",),  # what a result is labelled with (division, precision, placement)
    ("suite.systems", "suite.rules"),  # system descriptions; the division rules
    ("suite.specs",),  # workload specs and profiles, resolved into a run config
    ("suite.results",),  # the result model, its schema, its files
    ("suite.cost",),  # samples per dollar and the price table
    ("suite.config",),  # the run config
    ("suite.launchers",),  # HOW the ranks start: inline, run_cpu, torchrun, horovodrun
    (
        "suite",
        "suite.errors",
        "suite.files",
        "suite.console",
        "suite.markdown",
        "suite.tables",
        "suite.extras",
        "suite.provenance",
    ),  # errors, bounded file readers, terminal and Markdown output
    ("workloads",),  # what is trained; never times itself
    ("harness",),  # measurement only
]
"""The layers, top to bottom: a module may import its own layer and the layers below it."""


@dataclass(frozen=True)
class Import:
    """One imported module, as written (absolute), and where."""

    module: str
    line: int
    runtime: bool  # False under ``if TYPE_CHECKING:``


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


MODULES = _sources()


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, runtime: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking(child.test):
            for stmt in child.body:
                yield stmt, False
                yield from _walk(stmt, False)
            for stmt in child.orelse:
                yield stmt, runtime
                yield from _walk(stmt, runtime)
            continue
        yield child, runtime
        yield from _walk(child, runtime)


def imports_of(name: str) -> list[Import]:
    """Every module ``name`` imports: ``from a.b import c`` is ``a.b.c`` when that is a module, else ``a.b``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[Import] = []
    for node, runtime in _walk(tree, True):
        if isinstance(node, ast.Import):
            out += [Import(alias.name, node.lineno, runtime) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append(Import(full if full in MODULES else base, node.lineno, runtime))
    return out


def _where(name: str, imp: Import) -> str:
    return f"{MODULES[name].relative_to(REPO)}:{imp.line} imports {imp.module}"


def _violations(importer: str, forbidden: tuple[str, ...]) -> list[str]:
    """Imports of modules under any ``forbidden`` prefix by the modules under ``importer``."""
    found = []
    for name in MODULES:
        if name == importer or name.startswith(importer + "."):
            for imp in imports_of(name):
                if any(imp.module == f or imp.module.startswith(f + ".") for f in forbidden):
                    found.append(_where(name, imp))
    return found


def _importers_of(target: str) -> dict[str, list[str]]:
    """Module -> where it imports ``target`` (a module or a package prefix)."""
    out: dict[str, list[str]] = {}
    for name in MODULES:
        for imp in imports_of(name):
            if imp.module == target or imp.module.startswith(target + "."):
                out.setdefault(name, []).append(_where(name, imp))
    return out


def _layer(module: str) -> int | None:
    """The index in :data:`STACK` of the longest prefix that ``module`` falls under (None: not trainbench's)."""
    best: tuple[int, int] | None = None
    for i, prefixes in enumerate(STACK):
        for p in prefixes:
            covers = module == p or (module.startswith(p + ".") and p != "suite")
            if covers and (best is None or len(p) > best[0]):
                best = (len(p), i)
    return best[1] if best is not None else None


def test_every_trainbench_module_has_a_layer() -> None:
    assert [name for name in MODULES if _layer(name) is None] == []


def test_no_import_runs_back_up_the_stack() -> None:
    """Every import, lazy ones included (those under ``if TYPE_CHECKING:`` too: a type names a layer
    as much as a call does), goes to the importer's own layer or a layer below it."""
    up = []
    for name in MODULES:
        mine = _layer(name)
        for imp in imports_of(name):
            theirs = _layer(imp.module)
            if mine is not None and theirs is not None and theirs < mine:
                up.append(f"{_where(name, imp)} ({STACK[mine][0]} -> {STACK[theirs][0]})")
    assert up == []


def test_harness_imports_no_suite_workloads_mlflow_click_or_docker() -> None:
    assert _violations("harness", ("suite", "workloads", "mlflow", "click", "docker")) == []


def test_workloads_import_nothing_of_the_suite() -> None:
    assert _violations("workloads", ("suite",)) == []


def test_a_run_never_imports_the_validator() -> None:
    assert _violations("suite.run", ("suite.validation",)) == []


def test_only_the_validator_and_the_command_line_import_the_validator() -> None:
    """The back-arrows of issue 15: specs, cost and the runner imported ``suite/validation/``.
    ``suite.bench.validation`` times the validator itself (``trainbench bench-validate``)."""
    allowed = ("suite.validation", "suite.commands", "suite.bench.validation")
    wrong = {
        name: where
        for name, where in _importers_of("suite.validation").items()
        if not any(name == a or name.startswith(a + ".") for a in allowed)
    }
    assert wrong == {}


def test_mlflow_docker_and_click_each_have_one_home() -> None:
    homes = {"mlflow": ("suite.tracking",), "docker": ("suite.containers",), "click": ("suite.commands",)}
    for library, allowed in homes.items():
        wrong = {
            name: where
            for name, where in _importers_of(library).items()
            if not any(name == a or name.startswith(a + ".") for a in allowed)
        }
        assert wrong == {}, f"only {', '.join(allowed)} may import {library}"


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), over runtime imports."""
    graph = {
        name: sorted({i.module for i in imports_of(name) if i.runtime and i.module in MODULES}) for name in MODULES
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert _cycles() == []


def test_no_utils_module() -> None:
    assert [str(p.relative_to(REPO)) for p in MODULES.values() if p.stem in ("utils", "util", "helpers")] == []


BLOCKED = ("torch", "torchvision", "tensorflow", "horovod", "mlflow", "docker", "requests")

CLI_WITHOUT_HEAVY_LIBRARIES = f"""
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"{{name}} is blocked: the command line must start without it")
        return None

sys.meta_path.insert(0, Block())
from suite.commands import main
main(["--help"])
"""


def test_the_command_line_starts_without_torch_mlflow_or_docker() -> None:
    """``trainbench rank`` is the entrypoint of the TensorFlow image, which has none of these:
    the group and every area module must load without them (they import them inside commands)."""
    proc = subprocess.run(
        [sys.executable, "-c", CLI_WITHOUT_HEAVY_LIBRARIES], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Usage: " in proc.stdout and "run" in proc.stdout


LOADED_AT_START = """
import sys
from suite.commands import main
try:
    main(["--help"])
except SystemExit:
    pass
print(sorted(m for m in ("scipy.stats", "matplotlib") if m in sys.modules))
"""


def test_the_command_line_loads_statistics_and_plotting_only_when_it_uses_them() -> None:
    """scipy.stats (0.5 s) and matplotlib (0.3 s) load where an interval or a plot is made, not at start:
    ``trainbench --help`` or an option refused took 1.1 s, now 0.45 s (2-vCPU Xeon, 2026-11-27)."""
    proc = subprocess.run(
        [sys.executable, "-c", LOADED_AT_START], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
