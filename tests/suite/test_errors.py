"""One error base whose subclasses carry their exit status, mapped once at the command line's edge."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from suite.commands import TrainbenchGroup
from suite.containers.errors import BuildError, ContainerError
from suite.cost.prices import PriceTableError
from suite.errors import (
    BadInput,
    Interrupted,
    PreflightError,
    RunFailed,
    TrackingError,
    TrackingFailed,
    TrainbenchError,
)
from suite.launchers import InlineLaunch, LaunchError, plan_launch
from suite.results import ResultError
from suite.run.options import RunError
from suite.specs import ConfigError


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (RunFailed("x"), 1),
        (BadInput("x"), 2),
        (TrackingFailed("x"), 3),
        (Interrupted("x"), 130),
        (ConfigError("x"), 2),
        (PreflightError("x"), 2),
        (LaunchError("x"), 2),
        (PriceTableError("x"), 2),
        (ResultError("x"), 1),
        (TrackingError("x"), 3),
        (ContainerError("x"), 2),
        (BuildError("x"), 1),
        (RunError("x"), 1),
        (RunError("x", exit_code=130), 130),
        (RunError("x", exit_code=137), 137),  # a rank's own status passes through
    ],
)
def test_each_error_carries_its_exit_status(error: TrainbenchError, code: int) -> None:
    assert error.exit_code == code


def test_the_group_maps_an_error_to_its_message_and_status_once() -> None:
    @click.group(cls=TrainbenchGroup)
    def cli() -> None:
        """Test group."""

    @cli.command()
    @click.argument("which")
    def fail(which: str) -> None:
        """Raise the error named WHICH."""
        if which == "config":
            raise ConfigError("--set [bold]x[/bold]: unknown")
        if which == "launch":
            plan_launch(InlineLaunch(malloc_conf="x:1"), Path("j"), Path("o"))
        raise TrackingError("MLflow is down")

    runner = CliRunner()
    out = runner.invoke(cli, ["fail", "config"])
    assert out.exit_code == 2 and "error: --set [bold]x[/bold]: unknown" in out.output  # escaped, not markup
    out = runner.invoke(cli, ["fail", "launch"])
    assert out.exit_code == 2 and "malloc_conf applies to allocator=jemalloc only" in out.output
    out = runner.invoke(cli, ["fail", "tracking"])
    assert out.exit_code == 3 and "error: MLflow is down" in out.output


def test_every_command_module_is_registered_once() -> None:
    """Every module of suite/commands with commands is in AREAS (none forgotten, none twice)."""
    import suite.commands as commands

    package = Path(commands.__file__).parent
    modules = sorted(p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "options"))
    assert sorted(commands.AREAS) == modules
    names = [c.name for c in commands.main.commands.values()]
    assert len(names) == len(set(names)) and {"run", "validate", "images", "bands"} <= set(names)
