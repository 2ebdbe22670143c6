"""MLflow logging: the only package that imports MLflow.

One experiment per workload; one MLflow run per trainbench run, whose page answers at
a glance (:mod:`suite.tracking.page` for its words, :mod:`suite.tracking.series` for
its metrics), written by :mod:`suite.tracking.runs` into the store of
:mod:`suite.tracking.store`.
"""

from suite.tracking.links import ui_hint
from suite.tracking.runs import REPORT_EXPERIMENT, fetch_result, log_report, log_result
from suite.tracking.store import LOGGED_TAG, TrackingError, default_tracking_uri, experiment_id
from suite.tracking.sweeps import finish_parent_run, start_parent_run

__all__ = [
    "LOGGED_TAG",
    "REPORT_EXPERIMENT",
    "TrackingError",
    "default_tracking_uri",
    "experiment_id",
    "fetch_result",
    "finish_parent_run",
    "log_report",
    "log_result",
    "start_parent_run",
    "ui_hint",
]
