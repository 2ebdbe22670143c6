"""Slurm: run the distributed workloads as Slurm jobs, and a real demo cluster in containers (issue 16).

- :mod:`suite.slurm.options`: the typed ``--launcher slurm`` options (nodes, tasks, partition, ...);
- :mod:`suite.slurm.script`: the sbatch script for a rank command (srun, torchrun c10d, Horovod Gloo, Pyxis);
- :mod:`suite.slurm.horovod_gloo`: the node side of Horovod over Gloo under srun (rendezvous server, slots);
- :mod:`suite.slurm.client`: the Slurm commands (sbatch, squeue, scontrol, sacct, scancel) and where the
  cluster's configuration is found;
- :mod:`suite.slurm.follow`: submit a job and follow it to a terminal state, with a queue timeout;
- :mod:`suite.slurm.identity`: the job's identity and one system description per node for the result;
- :mod:`suite.slurm.conf` and :mod:`suite.slurm.cluster`: the demo cluster (``make slurm-up``), whose
  containers :mod:`suite.containers.slurm_cluster` runs.
"""
