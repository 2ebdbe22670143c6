"""The result of a run as a Slurm job: the job and its nodes recorded, and the scaling efficiency over one node.

- :func:`run_as_job` runs the job (:func:`suite.run.slurm.launch_job`) and builds its result;
- :func:`with_job` records the job (``runtime.slurm``: id, nodelist, partition, state, ...)
  and every node (``nodes``: one system description and one set of utilization readings
  per node, marked heterogeneous when the nodes differ in what changes throughput);
- :func:`with_node_scaling` measures the same job on one node and records the N-node
  scaling efficiency with its interval (``scaling``, with ``nodes`` set).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from pathlib import Path

from suite.config import RunConfig, TorchrunLaunch
from suite.results import Result, seal, write_result
from suite.run.assemble import build_result
from suite.run.launch import LaunchPlan
from suite.run.options import ProgressCallback, RunOptions
from suite.run.scaling import scaling
from suite.run.slurm import JobRun, launch_job
from suite.slurm.follow import SCRIPT_NAME
from suite.slurm.identity import job_identity, node_systems
from suite.slurm.plan import job_config


def run_as_job(
    config: RunConfig,
    opts: RunOptions,
    run_dir: Path,
    run_id: str,
    on_progress: ProgressCallback | None = None,
    on_plan: Callable[[LaunchPlan], None] | None = None,
    on_submit: Callable[[str], None] | None = None,
) -> tuple[Result, int]:
    """Run ``config`` (the job's config, :func:`suite.slurm.plan.job_config`); return its sealed result and exit status.

    The result records the job (``runtime.slurm``) and every node (``nodes``). A complete
    torchrun run on several nodes with ``compare_single`` is followed by the same job on
    one node (in ``<run_dir>/one-node``), which gives its scaling efficiency
    (:func:`with_node_scaling`).

    Raises:
        SlurmError: sbatch refused the job, or the controller stopped answering.
    """
    assert opts.slurm is not None
    job = launch_job(config, run_dir, opts.slurm, on_progress, opts.notify, on_plan, on_submit, run_uid=run_id)
    result = with_job(build_result(config, opts, job.measurement, job.plan, run_id), job, run_dir, opts.system)
    launch = config.launch
    compare = isinstance(launch, TorchrunLaunch) and launch.compare_single and job.options.nodes > 1
    if result.status == "complete" and compare:
        result = with_node_scaling(result, config, opts, run_dir, on_progress)
    return result, job.code


def with_job(result: Result, job: JobRun, run_dir: Path, system: str | None = None) -> Result:
    """``result`` resealed with its job (``runtime.slurm``) and its nodes (``nodes``).

    Without a ``system`` name (``--system``), a job on several nodes is named after its
    cluster and nodes (``<cluster>:<nodelist>``, e.g. ``trainbench-slurm:n[1-2]``) rather
    than after the node that ran rank 0.
    """
    doc = result.model_dump()
    if system is None and job.info is not None and len(job.nodes) > 1:
        doc["system"] = f"{job.cluster or 'slurm'}:{job.info.nodelist}"
    if job.info is not None:
        doc["runtime"]["slurm"] = {
            **job_identity(job.info, job.nodes, job.cluster),
            "ntasks_per_node": job.options.ntasks_per_node,
            "container_image": job.options.container_image,
            "script": str(run_dir / SCRIPT_NAME),
        }
    ranks = job.measurement.ranks or [job.measurement]
    if any(m.system for m in ranks):
        doc["nodes"] = node_systems([{"rank": m.rank, "system": m.system, "utilization": m.utilization} for m in ranks])
    return seal(doc)


def with_node_scaling(
    result: Result, config: RunConfig, opts: RunOptions, run_dir: Path, on_progress: ProgressCallback | None
) -> Result:
    """Measure the same job on one node (same per-rank batch); reseal ``result`` with its scaling efficiency.

    Efficiency = N-node throughput / (N x one-node throughput): 1.0 is perfect weak scaling.
    Its interval propagates both runs' 95% intervals (:func:`suite.run.scaling.scaling`).
    If the one-node job fails or is interrupted, the run as a whole did not finish: the
    result becomes incomplete (no summary), as with the single-process comparison of a local run.
    """
    assert opts.slurm is not None and result.summary is not None
    nodes = opts.slurm.options.nodes
    runtime = dataclasses.replace(opts.slurm, options=opts.slurm.options.model_copy(update={"nodes": 1}))
    one_config, _ = job_config(
        config.model_copy(update={"launch": config.launch.model_copy(update={"nnodes": 1})}), runtime
    )
    one_dir = run_dir / "one-node"
    one_dir.mkdir()
    if opts.notify is not None:
        opts.notify(
            f"the same job on one node, for the {nodes}-node scaling efficiency (compare_single=false skips it)"
        )
    one_id = uuid.uuid4().hex
    job = launch_job(one_config, one_dir, runtime, on_progress, opts.notify, run_uid=one_id)
    one = with_job(build_result(one_config, opts, job.measurement, job.plan, one_id), job, one_dir, opts.system)
    if one.summary is None:
        kept = write_result(one, one_dir / "result-incomplete.json")
        why = one.error or "it gave no valid measurement"
        error = why if why.startswith("interrupted") else f"the one-node comparison failed: {why}"
        lost = {"status": "incomplete", "error": f"{error} (its records: {kept})", "summary": None}
        return seal({**result.model_dump(), **lost, "utilization_summary": None, "diagnosis": None, "cost": None})
    path = write_result(one, one_dir / "result.json")
    fields = {
        **scaling(result.summary, one.summary, result.utilization_summary, one.utilization_summary, nodes),
        "nodes": nodes,
        "single_result": str(path),
        "single_digest": one.digest,
    }
    return seal({**result.model_dump(), "scaling": fields})
