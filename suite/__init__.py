"""trainbench suite: orchestration, policy and files (CLI, config, results, MLflow, cost, reports)."""

from importlib import metadata

try:
    __version__ = metadata.version("trainbench")
except metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
