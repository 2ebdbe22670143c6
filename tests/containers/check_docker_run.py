"""CI check of a ``make run RUNTIME=docker``: the result file and the MLflow run it left on the host.

Usage: ``python -m tests.containers.check_docker_run RESULTS_DIR TRACKING_URI IMAGE``

Exits 0 when exactly one complete result was written under RESULTS_DIR with
``runtime.kind == "docker"`` and the id of IMAGE, and the MLflow store holds its
run (FINISHED, tagged runtime docker and the image, same throughput); otherwise
prints what is wrong and exits 1.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import docker
from mlflow.tracking import MlflowClient

from suite.results import read_result


def check(results: Path, uri: str, image: str) -> list[str]:
    """Everything wrong with the run's outputs (empty: all good)."""
    problems: list[str] = []
    paths = sorted(results.rglob("result.json"))
    if len(paths) != 1:
        return [f"expected one result.json under {results}, found {len(paths)}"]
    result = read_result(paths[0])  # schema and digest
    image_id = docker.from_env().images.get(image).id
    if result.status != "complete" or result.summary is None:
        problems.append(f"result status {result.status}")
    if result.runtime.kind != "docker":
        problems.append(f"runtime.kind is {result.runtime.kind!r}, not 'docker'")
    if result.runtime.image_id != image_id:
        problems.append(f"runtime.image_id {result.runtime.image_id} is not {image}'s id {image_id}")
    if not result.environment.get("container", {}).get("in_container"):
        problems.append("the rank did not see itself in a container")
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(result.workload)
    runs = client.search_runs([exp.experiment_id]) if exp is not None else []
    mine = [r for r in runs if r.data.tags.get("trainbench.result_id") == result.run_id]
    if len(mine) != 1:
        return [*problems, f"expected one MLflow run for result {result.run_id} in {uri}, found {len(mine)}"]
    run = mine[0]
    tags, metrics = run.data.tags, run.data.metrics
    if run.info.status != "FINISHED" or tags.get("trainbench.runtime") != "docker":
        problems.append(
            f"MLflow run {run.info.run_id}: status {run.info.status}, runtime {tags.get('trainbench.runtime')}"
        )
    if tags.get("trainbench.image") != result.runtime.image:
        problems.append(f"MLflow run tag trainbench.image is {tags.get('trainbench.image')!r}")
    logged = metrics.get("throughput_samples_per_s")
    # MLflow gets 7 significant digits (suite.tracking.series.DIGITS); the result file keeps every digit
    if result.summary is not None and (
        logged is None or not math.isclose(logged, result.summary.throughput, rel_tol=1e-6)
    ):
        problems.append(f"MLflow throughput {logged} differs from the result file's {result.summary.throughput}")
    if not problems and result.summary is not None:
        print(
            f"docker run OK: {paths[0]}\n  image {result.runtime.image} {image_id}\n"
            f"  throughput {result.summary.throughput:.2f} samples/s; MLflow run {run.info.run_id} in {uri}"
        )
    return problems


def main(argv: list[str]) -> int:
    """Check and report; returns the exit status."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(Path(argv[0]), argv[1], argv[2])
    for p in problems:
        print(f"docker run check failed: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
