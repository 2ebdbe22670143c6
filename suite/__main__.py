"""``python -m suite``: the ``trainbench`` command line."""

from suite.commands import main

main()
