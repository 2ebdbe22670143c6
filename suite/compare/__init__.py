"""``trainbench compare A B``: is B faster than A, by how much, and how sure is that.

:mod:`suite.compare.load` reads the sides, :mod:`suite.compare.stats` holds the
method (the delta method on the log scale with each run's own interval units),
:mod:`suite.compare.analysis` decides comparability and the CI gate,
:mod:`suite.compare.render` writes the table, Markdown and JSON, and
The click command is ``suite.commands.compare``.
"""

from suite.compare.analysis import Comparison, KnobDiff, compare, to_dict
from suite.compare.load import CompareError, FetchError, Side, load_side
from suite.compare.stats import RatioEstimate, ratio_interval

__all__ = [
    "CompareError",
    "Comparison",
    "FetchError",
    "KnobDiff",
    "RatioEstimate",
    "Side",
    "compare",
    "load_side",
    "ratio_interval",
    "to_dict",
]
