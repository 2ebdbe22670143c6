"""``trainbench reproduce RESULT``: measure a claim again on this machine and say whether it holds.

The claim's config (workload, profile, params, windows, launcher; its image, by id, when it ran in a
container) runs again through the same harness, after this machine is compared with the claim's
hardware class (:mod:`suite.validation.reproduction`). Exit status: 0 reproduced, 1 not reproduced
(or the re-measurement failed), 2 a file that is no result, a claim without a score, or another
hardware class without ``--anyway``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from suite.commands.options import Runtime, tracking_options
from suite.console import console, markup, warn
from suite.errors import BadInput, TrackingError
from suite.extras import require
from suite.results import Reproduction, Result, seal, write_result
from suite.run.options import RunOptions, RunOutcome
from suite.runtimes.docker import DockerRuntime
from suite.runtimes.docker_args import DockerRunOptions
from suite.runtimes.local import LocalRuntime
from suite.specs import RunConfig

if TYPE_CHECKING:
    from suite.validation.outcomes import CheckedTree


class ReproductionRefused(BadInput):
    """The claim cannot be re-measured here: not a result, no score, or another hardware class (exit 2)."""


@dataclass(frozen=True)
class Reproduced:
    """A finished reproduction: the verdict and the new result's file."""

    verdict: Reproduction
    result_path: Path
    line: str


def load_claim(path: Path) -> Result:
    """Read the claim with the bounded reader and the validator's parser; report what does not validate.

    Raises:
        ReproductionRefused: the file cannot be read, is no result, or has no score to re-measure.
    """
    from suite.files import FileProblem, read_json
    from suite.rules import load_rules
    from suite.validation.findings import Findings, Severity
    from suite.validation.result_checks import CheckContext, check_result, parse_result

    findings = Findings()
    try:
        result = parse_result(read_json(path), str(path), findings)
    except FileProblem as exc:
        raise ReproductionRefused(f"{path}: {exc.message}; {exc.fix}") from exc
    if result is None:
        problems = "; ".join(f"{f.where}: {f.message}" for f in findings if f.severity is Severity.ERROR)
        raise ReproductionRefused(f"{path} is not a result this trainbench reads: {problems[:600]}")
    if result.status != "complete" or result.summary is None:
        raise ReproductionRefused(f"{path}: the run is incomplete, so it claims no throughput to reproduce")
    check_result(result, str(path), findings, CheckContext(load_rules()))
    errors = sorted({f.code for f in findings if f.severity is Severity.ERROR})
    if errors:
        warn(f"the claim does not validate ({', '.join(errors)}); measuring it again all the same")
    return result


def rerun_config(claim: Result, repeats: int | None) -> RunConfig:
    """The claim's own config, with ``repeats`` repeats when given."""
    doc = claim.config.model_dump(mode="json")
    if repeats is not None and repeats != claim.config.windows.repeats:
        doc["windows"]["repeats"] = repeats
        doc["overrides"] = [*doc.get("overrides", []), f"repeats={repeats}"]
    return RunConfig.model_validate(doc)


def claim_runtime(claim: Result) -> Runtime:
    """Where the claim ran: on the host, or in its image by id (with its CPU set, memory and GPUs)."""
    if claim.runtime.kind != "docker":
        return LocalRuntime()
    cmd = claim.runtime.command

    def flag(name: str) -> str | None:
        return cmd[cmd.index(name) + 1] if name in cmd[:-1] else None

    options = DockerRunOptions(
        image=claim.runtime.image_id or claim.runtime.image,
        cpuset_cpus=flag("--cpuset-cpus"),
        memory=flag("--memory"),
        gpus=flag("--gpus"),
    )
    return DockerRuntime(options=options, warn=warn)


def remeasure(config: RunConfig, opts: RunOptions, runtime: Runtime) -> RunOutcome:
    """Run ``config`` as ``trainbench run`` runs it (the one place ``reproduce`` starts a run).

    Raises:
        suite.run.options.RunError, PreflightError, LaunchError, ContainerError: as ``trainbench run``.
    """
    from suite.run.execute import execute
    from suite.run.progress import LiveProgress

    if isinstance(runtime, LocalRuntime):
        require("offload" if config.image.split(":")[0] == "trainbench-tf" else "train", "trainbench reproduce")
    else:
        require("containers", "trainbench reproduce (the claim ran in a container)")
    require("plots", "trainbench reproduce (its timeline plot)")
    with LiveProgress(config, console) as live:
        return execute(config, dataclasses.replace(opts, runtime=runtime), live)


def reproduce_claim(
    claim: Result,
    claim_path: Path,
    *,
    repeats: int | None,
    anyway: bool,
    output_dir: Path,
    tracking_uri: str | None,
    system: str | None = None,
) -> Reproduced:
    """Compare the hardware class, re-measure, judge, write the verdict into the new result and MLflow.

    Raises:
        ReproductionRefused: another hardware class without ``anyway``, or a Slurm job's result.
        suite.run.options.RunError: the re-measurement failed.
    """
    from harness.system import capture_system
    from suite.validation.reproduction import class_differences, judge, verdict_line

    differences = class_differences(claim, capture_system(), os.environ)
    if claim.runtime.kind == "slurm" and not anyway:
        raise ReproductionRefused(
            f"{claim_path} ran as a Slurm job on {claim.world_size} rank(s); reproduce re-measures on this machine. "
            "Run its config on the cluster (trainbench run --runtime slurm) and compare the results, "
            "or pass --anyway to measure it here"
        )
    if differences and not anyway:
        listed = "\n  ".join(d.text() for d in differences)
        raise ReproductionRefused(
            f"this machine is not of the claim's hardware class:\n  {listed}\n"
            "Re-measure it on a machine of its class, or pass --anyway to measure it here all the same"
        )
    for d in differences:
        warn(f"running anyway on a different hardware class: {d.text()}")
    config = rerun_config(claim, repeats)
    opts = RunOptions(output_dir=output_dir.resolve(), tracking_uri=None, system=system, started_unix_s=time.time())
    outcome = remeasure(config, opts, LocalRuntime() if claim.runtime.kind == "slurm" else claim_runtime(claim))
    verdict = judge(claim, outcome.result, str(claim_path), differences=differences, anyway=anyway)
    result = seal({**outcome.result.model_dump(), "reproduction": verdict.model_dump()})
    path = write_result(result, outcome.result_path)
    rel = claim.summary.throughput_ci95_rel if claim.summary is not None else None
    line = verdict_line(verdict, rel)
    if tracking_uri:
        _track(result, path, [outcome.timeline_path], tracking_uri)
    return Reproduced(verdict, path, line)


def _track(result: Result, path: Path, artifacts: list[Path], uri: str) -> None:
    """Log the new result and link it to its claim; a tracking failure is a warning (the verdict stands)."""
    from suite.tracking import log_result
    from suite.tracking.reproduction import tag_reproduction

    try:
        rid = log_result(result, path, artifacts, uri)
        claim_run = tag_reproduction(uri, rid, result)
    except TrackingError as exc:
        warn(f"{exc}\nThe result, with its verdict, is safe in {path}; log it later with `trainbench sync`.")
        return
    linked = f", linked to the claim's run {claim_run}" if claim_run else " (the claim is not in this store)"
    console.print(markup(f"MLflow run {rid} in {uri}{linked}"), soft_wrap=True)


def reproduce_tree(
    report: CheckedTree, k: int, repeats: int | None, output_dir: Path, tracking_uri: str | None
) -> bool:
    """``trainbench validate --reproduce K``: re-measure up to ``k`` results of the validated tree whose
    hardware class is this machine's, one run of each scored group in turn; print each verdict.

    Returns:
        True when every re-measured claim was reproduced (or none could be measured here).
    """
    from harness.system import capture_system
    from suite.validation.reproduction import class_differences

    here = capture_system()
    queues = [[report.root / w for w in g.runs] for g in report.groups]
    chosen: list[tuple[Path, Result]] = []
    while len(chosen) < k and any(queues):
        for queue in queues:
            if queue and len(chosen) < k:
                path = queue.pop(0)
                try:
                    claim = load_claim(path)
                except ReproductionRefused as exc:
                    warn(f"not re-measured: {exc}")
                    continue
                if claim.runtime.kind != "slurm" and not class_differences(claim, here, os.environ):
                    chosen.append((path, claim))
    if not chosen:
        warn(f"--reproduce {k}: no result of {report.root} is of this machine's hardware class; nothing re-measured")
    ok = True
    for path, claim in chosen:
        done = reproduce_claim(
            claim, path, repeats=repeats, anyway=False, output_dir=output_dir, tracking_uri=tracking_uri
        )
        ok = ok and done.verdict.verdict == "reproduced"
        console.print(markup(f"{path.relative_to(report.root)}: {done.line}"), soft_wrap=True, highlight=False)
    return ok


@click.command("reproduce")
@click.argument("result_path", metavar="RESULT", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--repeats", type=click.IntRange(1, 1000), help="Repeats of the re-measurement [default: the claim's].")
@click.option("--anyway", is_flag=True, help="Measure even on another hardware class; the verdict then says so.")
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where the re-measurement's result is written.",
)
@click.option("--system", help="System name recorded in the new result [default: host name].")
@tracking_options("the new result is")
def reproduce(
    result_path: Path,
    repeats: int | None,
    anyway: bool,
    output_dir: Path,
    system: str | None,
    tracking_uri: str | None,
    no_tracking: bool,
) -> None:
    """Measure the claim in RESULT again on this machine and say whether it holds.

    Exit status: 0 reproduced, 1 not reproduced (or the run failed), 2 not a result, no score, or
    another hardware class (without --anyway).
    """
    started = time.monotonic()
    claim = load_claim(result_path)
    uri = None
    if not no_tracking:
        require("tracking", "trainbench reproduce without --no-tracking")
        from suite.tracking import default_tracking_uri

        uri = tracking_uri or default_tracking_uri()
    done = reproduce_claim(
        claim, result_path, repeats=repeats, anyway=anyway, output_dir=output_dir, tracking_uri=uri, system=system
    )
    style = "bold green" if done.verdict.verdict == "reproduced" else "bold red"
    console.print(f"[{style}]{markup(done.line)}[/]", soft_wrap=True, highlight=False)
    console.print(markup(f"method: {done.verdict.method}"), soft_wrap=True, highlight=False)
    console.print(markup(f"result: {done.result_path} ({time.monotonic() - started:.0f} s)"), soft_wrap=True)
    sys.exit(0 if done.verdict.verdict == "reproduced" else 1)


COMMANDS = (reproduce,)
"""This area's commands (registered by :mod:`suite.commands`)."""
