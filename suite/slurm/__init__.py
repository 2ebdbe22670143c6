"""Slurm's side of a run as a job: the job's options, the Slurm client, the node-side helpers, and a real
demo cluster in containers (issue 16). The runtime that submits and follows a run's job is
:mod:`suite.runtimes.slurm`; each launcher writes its own srun steps (:mod:`suite.launchers`).

- :mod:`suite.slurm.options`: the typed ``--launcher slurm`` options (nodes, tasks, partition, ...);
- :mod:`suite.slurm.node_env`: the node side of the allocator preload (the library found on the node);
- :mod:`suite.slurm.horovod_gloo`: the node side of Horovod over Gloo under srun (rendezvous server, slots);
- :mod:`suite.slurm.client`: the Slurm commands (sbatch, squeue, scontrol, sacct, scancel) and where the
  cluster's configuration is found;
- :mod:`suite.slurm.follow`: submit a job and follow it to a terminal state, with a queue timeout;
- :mod:`suite.slurm.identity`: the job's identity and one system description per node for the result;
- :mod:`suite.slurm.conf` and :mod:`suite.slurm.cluster`: the demo cluster (``make slurm-up``), whose
  containers :mod:`suite.containers.slurm_cluster` runs.
"""
