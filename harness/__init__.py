"""trainbench measurement harness.

Measurement only: windows and their time budget, clocks (the host's, and the device's
through CUDA events), raw step records, statistics (intervals, steady state), utilization
and interference sampling, NVML telemetry and energy on a GPU,
system capture with the CPU's matrix ISA, and the precision it supports. This
package never imports MLflow, click or docker, so it runs unchanged inside every
container image and under every launcher.
"""

from harness.records import Phase, StepRecord, WindowRecord
from harness.windows import RunPlan, Window, WindowError

__all__ = ["Phase", "RunPlan", "StepRecord", "Window", "WindowError", "WindowRecord"]
