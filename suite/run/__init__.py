"""One run end to end: options, preflight, launch plan and placement, supervising the ranks,
assembling the result, execution, scaling comparison, diagnosis, sweeps, the timeline plot
and live progress.

Nothing here imports ``suite.validation``: the validator depends on the result model,
not the other way round. The division rules a run is labelled with are :mod:`suite.rules`.
"""
