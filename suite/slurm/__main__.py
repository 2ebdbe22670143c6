"""``python -m suite.slurm``: see :mod:`suite.slurm.cli`."""

from suite.slurm.cli import slurm

slurm()
