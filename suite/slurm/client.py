"""The Slurm commands trainbench runs (sbatch, scontrol, sacct, scancel, sinfo) and the configuration they use.

Which cluster: ``SLURM_CONF`` when set (a user's own cluster, or any copy of its
slurm.conf); else the demo cluster's host copy when ``make slurm-up`` has written it
(so ``make slurm-up && trainbench run ... --launcher slurm`` needs nothing exported);
else Slurm's own default (``/etc/slurm/slurm.conf`` or DNS SRV records).

Job state comes from ``scontrol show job`` while the controller remembers the job
(``MinJobAge``, 300 s by default, after it ends) and from ``sacct`` after that, which
needs accounting storage (the demo cluster has none). Every command runs with a time
limit and its output is bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from suite.slurm.conf import host_conf
from suite.slurm.errors import SlurmError, SlurmUnavailableError

COMMAND_TIMEOUT_S = 30.0
"""Longest a Slurm command may take (a controller that does not answer fails it)."""
MAX_OUTPUT = 1 << 20
"""Bytes of a command's output that are read; more means something is wrong."""
TERMINAL = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)
"""Job states after which the job runs no more (Slurm's job_state_string)."""
PENDING = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "CONFIGURING"})
"""Job states in which no rank has started yet."""
_PAIR = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(\S*)")


@dataclass(frozen=True)
class JobInfo:
    """What the controller (or accounting) says about a job.

    Attributes:
        job_id: the job id; state: its state (e.g. ``RUNNING``, ``NODE_FAIL``; ``CANCELLED by 0`` is
            reported as ``CANCELLED``); reason: Slurm's reason (``None`` when there is none).
        nodelist: the nodes in Slurm's compact form (e.g. ``n[1-2]``), or None before they are allocated.
        num_nodes: node count; partition: the partition; batch_host: the node that runs the script.
        exit_code: ``exit:signal`` (e.g. ``1:0``); stdout: the job's log path; source: ``scontrol`` or ``sacct``.
    """

    job_id: str
    state: str
    reason: str | None = None
    nodelist: str | None = None
    num_nodes: int | None = None
    partition: str | None = None
    batch_host: str | None = None
    exit_code: str | None = None
    stdout: str | None = None
    source: str = "scontrol"

    @property
    def terminal(self) -> bool:
        """The job has ended (completed, failed, cancelled, timed out, lost a node, ...)."""
        return self.state in TERMINAL

    @property
    def pending(self) -> bool:
        """No rank has started yet."""
        return self.state in PENDING


def config_path() -> Path | None:
    """The slurm.conf the commands will read: ``SLURM_CONF``, else the demo cluster's, else None (Slurm's default)."""
    if os.environ.get("SLURM_CONF"):
        return Path(os.environ["SLURM_CONF"])
    demo = host_conf()
    return demo if demo.is_file() else None


def _none(value: str | None) -> str | None:
    return None if value in (None, "", "(null)", "None", "Unknown") else value


def parse_scontrol_job(text: str) -> JobInfo:
    """A :class:`JobInfo` from ``scontrol show job -o ID`` (one line of ``Key=value`` pairs).

    Raises:
        SlurmError: the text has no JobId or JobState.
    """
    pairs = {m.group(1): m.group(2) for m in _PAIR.finditer(text.strip().splitlines()[0] if text.strip() else "")}
    if "JobId" not in pairs or "JobState" not in pairs:
        raise SlurmError(f"cannot read scontrol's job description: {text[:300]!r}")
    nodes = pairs.get("NumNodes", "").split("-")[0]
    return JobInfo(
        job_id=pairs["JobId"],
        state=pairs["JobState"],
        reason=_none(pairs.get("Reason")),
        nodelist=_none(pairs.get("NodeList")),
        num_nodes=int(nodes) if nodes.isdigit() else None,
        partition=_none(pairs.get("Partition")),
        batch_host=_none(pairs.get("BatchHost")),
        exit_code=_none(pairs.get("ExitCode")),
        stdout=_none(pairs.get("StdOut")),
    )


def parse_sacct_job(text: str, job_id: str) -> JobInfo | None:
    """A :class:`JobInfo` from ``sacct -n -P -X -o JobID,State,ExitCode,NodeList,Partition,NNodes,Reason``."""
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) >= 7 and fields[0] == job_id:
            return JobInfo(
                job_id=job_id,
                state=fields[1].split(" ")[0],
                reason=_none(fields[6]),
                nodelist=_none(fields[3]),
                num_nodes=int(fields[5]) if fields[5].isdigit() else None,
                partition=_none(fields[4]),
                exit_code=_none(fields[2]),
                source="sacct",
            )
    return None


class SlurmClient:
    """Runs Slurm's commands against one cluster.

    Args:
        conf: the slurm.conf to use; None = :func:`config_path`.
        timeout_s: time limit of each command, seconds.
    """

    def __init__(self, conf: Path | None = None, timeout_s: float = COMMAND_TIMEOUT_S) -> None:
        self.conf = conf if conf is not None else config_path()
        self.timeout_s = timeout_s

    @property
    def env(self) -> dict[str, str]:
        """The environment of the commands (``SLURM_CONF`` set to :attr:`conf` when there is one)."""
        env = dict(os.environ)
        if self.conf is not None:
            env["SLURM_CONF"] = str(self.conf)
        return env

    def where(self) -> str:
        """Which configuration is used, in words (for error messages)."""
        return f"SLURM_CONF={self.conf}" if self.conf else "Slurm's default configuration (SLURM_CONF is not set)"

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Slurm command; return it finished.

        Raises:
            SlurmUnavailableError: the command is not installed, or it did not answer in time.
            SlurmError: it failed (with ``check``); the message carries its error output.
        """
        exe = shutil.which(args[0])
        if exe is None:
            raise SlurmUnavailableError(
                f"{args[0]} is not on PATH: submitting jobs needs the Slurm client "
                "(Debian/Ubuntu: apt-get install slurm-client munge)"
            )
        try:
            proc = subprocess.run(
                [exe, *args[1:]], capture_output=True, text=True, errors="replace", env=self.env, timeout=self.timeout_s
            )
        except subprocess.TimeoutExpired as exc:
            raise SlurmUnavailableError(
                f"`{' '.join(args)}` did not answer within {self.timeout_s:.0f} s; "
                f"is the controller up? ({self.where()})"
            ) from exc
        proc.stdout, proc.stderr = proc.stdout[:MAX_OUTPUT], proc.stderr[:MAX_OUTPUT]
        if check and proc.returncode != 0:
            detail = (proc.stderr.strip() or proc.stdout.strip())[-2000:]
            raise SlurmError(f"`{' '.join(args)}` failed (exit {proc.returncode}, {self.where()}): {detail}")
        return proc

    def submit(self, script: Path) -> str:
        """``sbatch --parsable SCRIPT``; return the job id.

        Raises:
            SlurmError: sbatch refused the job (its message says why, e.g. more nodes than the partition has).
        """
        out = self.run("sbatch", "--parsable", str(script)).stdout.strip()
        job_id = out.split(";", 1)[0]
        if not job_id.isdigit():
            raise SlurmError(f"sbatch printed no job id: {out[:200]!r}")
        return job_id

    def job(self, job_id: str) -> JobInfo | None:
        """The job's state from scontrol, else sacct; None when neither knows it any more."""
        proc = self.run("scontrol", "show", "job", "-o", job_id, check=False)
        if proc.returncode == 0 and proc.stdout.strip():
            return parse_scontrol_job(proc.stdout)
        if "Invalid job id" not in proc.stderr:
            raise SlurmError(f"`scontrol show job {job_id}` failed ({self.where()}): {proc.stderr.strip()[-500:]}")
        fields = "JobID,State,ExitCode,NodeList,Partition,NNodes,Reason"
        acct = self.run("sacct", "-n", "-P", "-X", "-j", job_id, "-o", fields, check=False)
        return parse_sacct_job(acct.stdout, job_id) if acct.returncode == 0 else None

    def cancel(self, job_id: str) -> None:
        """``scancel JOB`` (the ranks get SIGTERM, then SIGKILL after the cluster's KillWait)."""
        self.run("scancel", job_id)

    def hostnames(self, nodelist: str) -> list[str]:
        """``scontrol show hostnames NODELIST``: ``n[1-2]`` -> ``["n1", "n2"]``."""
        return self.run("scontrol", "show", "hostnames", nodelist).stdout.split()

    def cluster_name(self) -> str | None:
        """The cluster's ClusterName from ``scontrol show config`` (None when it cannot be read)."""
        try:
            proc = self.run("scontrol", "show", "config", check=False)
        except SlurmError:
            return None
        found = re.search(r"^ClusterName\s*=\s*(\S+)", proc.stdout, re.M)
        return found.group(1) if found else None

    def node_states(self) -> dict[str, str]:
        """Node name -> state (lower case, e.g. ``idle``, ``down*``) from sinfo."""
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t").stdout
        return dict(line.split(None, 1) for line in out.splitlines() if len(line.split()) == 2)
