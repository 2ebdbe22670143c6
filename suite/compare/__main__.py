"""``python -m suite.compare A B``: the compare command before the CLI registers it."""

from suite.compare.command import compare

compare()
