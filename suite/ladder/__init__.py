"""``trainbench ladder``: a workload's optimization ladder as a user command.

Each workload with a ladder has one rung list: the seed study's CPU ladder
(:mod:`suite.ladder.cpu_rungs`) or the GPU ladder (:mod:`suite.ladder.gpu_rungs`).
:mod:`suite.ladder.rungs` plans the rungs (and skips those that cannot run here),
:mod:`suite.ladder.runner` runs them, :mod:`suite.ladder.outcome` compares them and checks
their loss trajectories (:mod:`suite.ladder.numerics`), :mod:`suite.ladder.table` writes the
table, the plot and the best config, and :mod:`suite.ladder.best` finds the best again for a
later run on the same device. ``make bench`` (``suite.bench.cpu``) stays the developers' check
of the harness against the bare loop.
"""
