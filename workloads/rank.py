"""One rank: build the workload, run the harness, write the raw measurement.

Invoked by the suite's launcher (inline, ``torch.backends.xeon.run_cpu``, torchrun,
horovodrun or inside a container) as::

    python -m workloads.rank --job job.json --out measurement.json [--progress progress.jsonl]

The job file holds ``workload``, ``params`` and ``windows``. The measurement file
is written even when the run fails or is interrupted (then ``complete`` is false
and ``error`` says why), so nothing measured is lost.

Exit codes: 0 complete, 1 failed (workload or data error), 2 bad job file,
130 interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import IO, Any

from pydantic import ValidationError

from harness.loop import Measurement, run_plan
from harness.records import StepRecord
from harness.sampler import UtilizationSampler
from harness.system import capture_system
from harness.windows import WindowError, plan_from_mapping
from workloads import registry


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; raised in the main thread so the loop stops at once."""


_stopping = False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Raise :class:`Interrupted` on the first signal; ignore repeats (the launcher may
    forward the same Ctrl-C the terminal already sent) so the partial measurement is
    always written."""
    global _stopping
    if _stopping:
        return
    _stopping = True
    raise Interrupted(signal.Signals(signum).name)


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, allow_nan=False))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    """Run one rank; see the module docstring for arguments and exit codes."""
    ap = argparse.ArgumentParser(prog="python -m workloads.rank")
    ap.add_argument("--job", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--progress", type=Path)
    args = ap.parse_args(argv)

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    out: dict[str, Any] = {"rank": rank, "world_size": world, "complete": False, "error": None}
    try:
        job = json.loads(args.job.read_text())
        entry = registry.get(job["workload"])
        params = entry.params_model.model_validate(job.get("params", {}))
        plan = plan_from_mapping(job["windows"])
        interval = float(job.get("sampler_interval_s", 0.5))
    except (OSError, ValueError, KeyError, ValidationError, WindowError) as exc:
        out["error"] = f"bad job file {args.job}: {exc}"
        _write_json(args.out, out)
        print(out["error"], file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    measurement = Measurement()
    sampler: UtilizationSampler | None = None
    progress: IO[str] | None = None
    code = 0
    try:
        workload = entry.factory(params)
        describe = getattr(workload, "describe", None)
        out["workload_info"] = describe() if callable(describe) else {}
        out["system"] = capture_system()
        if args.progress is not None:
            progress = args.progress.open("a", buffering=1)

        def on_step(r: StepRecord, f: IO[str] | None = progress) -> None:
            if f is not None:
                f.write(
                    f'{{"repeat":{r.repeat},"phase":"{r.phase.value}","index":{r.index},'
                    f'"samples":{r.samples},"step_s":{r.step_s:.6f}}}\n'
                )

        origin = time.perf_counter()
        sampler = UtilizationSampler(interval, origin=origin).start()
        run_plan(workload, plan, measurement, origin=origin, on_step=on_step)
    except (KeyboardInterrupt, Interrupted) as exc:
        out["error"] = f"interrupted ({exc or 'SIGINT'}) after {len(measurement.steps)} steps"
        traceback.print_exc()
        code = 130
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
        code = 1
    finally:
        if sampler is not None:
            out["utilization"] = [s.to_dict() for s in sampler.stop()]
        if progress is not None:
            progress.close()
        out["complete"] = measurement.complete and code == 0
        out["steps"] = [s.to_dict() for s in measurement.steps]
        out["windows"] = [w.to_dict() for w in measurement.windows]
        _write_json(args.out, out)
    if out["error"]:
        print(out["error"], file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
