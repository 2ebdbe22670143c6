"""``trainbench ladder``: the seed study's CPU optimization ladder as a user command.

:mod:`suite.ladder.rungs` plans the rungs (and skips those that cannot help here),
:mod:`suite.ladder.runner` runs and compares them, :mod:`suite.ladder.table` writes the
table, the plot and the best config. ``make bench`` (``suite.bench.cpu``) stays the
developers' check of the harness against the bare loop.
"""
