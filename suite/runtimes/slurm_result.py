"""What a Slurm job adds to its result: the job and its nodes (``runtime.slurm``, ``nodes``).

:func:`with_job` records the job (id, nodelist, partition, state, ...) and every node (one system
description and one set of utilization readings per node, marked heterogeneous when the nodes
differ in what changes throughput).
"""

from __future__ import annotations

from pathlib import Path

from suite.results import Result, seal
from suite.runtimes.slurm_follow import JobRun
from suite.slurm.follow import SCRIPT_NAME
from suite.slurm.identity import job_identity, node_systems


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
