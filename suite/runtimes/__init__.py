"""WHERE the ranks run: on this host (:mod:`~suite.runtimes.local`), inside the workload's image
(:mod:`~suite.runtimes.docker`), or as a Slurm job on a cluster's nodes (:mod:`~suite.runtimes.slurm`).

Every runtime keeps one contract (:class:`suite.runtimes.base.Runtime`): the run's config as it
runs there, a preflight, then the ranks run in a run directory with progress callbacks and their
measurements come back. ``suite.run.execute`` drives all three the same way. HOW the ranks start
is the launcher's (:mod:`suite.launchers`); every launcher runs in every runtime.

The runtimes are imported from their modules: the Docker runtime loads the Docker SDK only when
it is prepared, the Slurm runtime its client only when it submits.
"""
