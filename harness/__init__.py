"""trainbench measurement harness.

Measurement only: windows, clocks, raw step records, statistics, utilization
sampling and system capture. This package never imports MLflow, click or docker,
so it runs unchanged inside every container image and under every launcher.
"""

from harness.records import Phase, StepRecord, WindowRecord
from harness.windows import RunPlan, Window, WindowError

__all__ = ["Phase", "RunPlan", "StepRecord", "Window", "WindowError", "WindowRecord"]
