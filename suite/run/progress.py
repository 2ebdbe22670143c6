"""Console output while a run runs: the run header, the rank's decisions, and live progress with samples/s.

The end-of-run table is :func:`suite.run.summary.summary_table` (re-exported here).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from suite.config import RunConfig
from suite.run.header import header_lines, hugepages_text, isa_text, precision_text
from suite.run.summary import summary_table

__all__ = ["LiveProgress", "summary_table"]


class LiveProgress:
    """A rich progress line fed by the run's progress events.

    Step records move the bar: the repeat, the window, the step and the live throughput
    (samples/s over the last 5 steps, and over the current measurement window so far). The
    bar is the current window's progress towards its end: the lesser of steps / minimum
    steps and seconds / minimum seconds (a window ends when both minimums are met); once the
    harness has calibrated a time budget, the minimums are the calibrated ones.

    Events (``{"event": ...}``) print lines above the bar before the first step: the planned
    header (CPU, cores, matrix ISA, torch, planned precision), rank 0's precision decision
    on its host (with its warning when bf16 would be emulated), its environment, and the
    time projection (a warning with cause and fix when the run will overshoot its budget).
    """

    def __init__(self, config: RunConfig, console: Console) -> None:
        self.config = config
        self.console = console
        self.progress = Progress(
            SpinnerColumn(),
            BarColumn(bar_width=20),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self.task = self.progress.add_task("starting the rank (importing torch, building the model)...", total=None)
        self.recent: list[tuple[int, float]] = []
        self.window_samples = 0
        self.window_seconds = 0.0
        self.current: tuple[int, str] | None = None
        w = config.windows
        self.need = {"warmup": (w.warmup_steps, w.warmup_seconds), "measurement": (w.measure_steps, w.measure_seconds)}
        self.planned: dict[str, Any] | None = None
        self.last_projection: str | None = None
        self.lines: list[str] = []

    def __enter__(self) -> LiveProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def say(self, markup: str) -> None:
        """Print one line above the bar (rich markup; callers escape what they did not write)."""
        self.lines.append(markup)
        self.progress.console.print(markup, highlight=False, soft_wrap=True)

    def __call__(self, event: dict[str, Any]) -> None:
        """Consume one progress event: a step record (``harness.records.StepRecord.to_dict``) or an event."""
        kind = event.get("event")
        if kind is not None:
            self.on_event(str(kind), event)
            return
        key = (int(event["repeat"]), str(event["phase"]))
        if key != self.current:
            self.current, self.window_samples, self.window_seconds = key, 0, 0.0
        self.window_samples += int(event["samples"])
        step_s = float(event["data_wait_s"]) + float(event["compute_s"])
        self.window_seconds += step_s
        self.recent = [*self.recent[-4:], (int(event["samples"]), step_s)]
        rate = sum(n for n, _ in self.recent) / max(sum(t for _, t in self.recent), 1e-9)
        win = self.window_samples / max(self.window_seconds, 1e-9)
        need, need_s = self.need["warmup" if key[1] == "warmup" else "measurement"]
        steps_done = int(event["index"]) + 1
        fraction = min(steps_done / max(need, 1), self.window_seconds / need_s if need_s > 0 else 1.0, 1.0)
        self.progress.update(
            self.task,
            total=1.0,
            completed=fraction,
            description=(
                f"repeat {key[0] + 1}/{self.config.windows.repeats} {key[1]:<11} step {steps_done:>3} (min {need})  "
                f"[bold]{rate:8.2f} samples/s[/bold] last 5 steps, {win:8.2f} this window"
            ),
        )

    def on_event(self, kind: str, event: dict[str, Any]) -> None:
        """Print what an event says (see the class docstring); unknown kinds are ignored."""
        if kind == "plan":
            self.planned = event.get("precision")
            for line in header_lines(event):
                self.say(f"[dim]{escape(line)}[/dim]")
        elif kind == "precision":
            self._precision(event)
        elif kind == "environment":
            host = event.get("hostname") or "its host"
            cap = (event.get("isa") or {}).get("torch_cpu_capability") or event.get("torch_cpu_capability")
            text = f"rank {event.get('rank', 0)} on {host}: torch {event.get('torch_version') or '?'}"
            text += f", matrix ISA {isa_text(event.get('isa'), cap)}"
            if event.get("transparent_hugepages") is not None:
                text += f"; transparent huge pages: {hugepages_text(event.get('transparent_hugepages'))}"
            self.say(f"[dim]{escape(text)}[/dim]")
        elif kind == "projection":
            self._projection(event)

    def _precision(self, event: dict[str, Any]) -> None:
        rank = f"rank {event.get('rank', 0)}"
        planned = self.planned or {}
        if (planned.get("chosen"), planned.get("reason")) == (event.get("chosen"), event.get("reason")):
            self.say(f"[dim]{rank} decided precision {escape(str(event.get('chosen')))} on its host, as planned[/dim]")
        else:
            self.say(f"precision ({rank}, on its host): {escape(precision_text(event))}")
        if event.get("warning"):
            self.say(f"[bold yellow]warning:[/bold yellow] {escape(str(event['warning']))}")

    def _projection(self, event: dict[str, Any]) -> None:
        if event.get("stage") == "calibrated":
            steps = event.get("measure_steps")
            if isinstance(steps, int):
                self.need["measurement"] = (steps, 0.0 if event.get("shortened") else self.need["measurement"][1])
        over = float(event.get("over_budget_s") or 0.0) > 0 or bool(event.get("floor_overshoots"))
        explain = escape(str(event.get("explain")))
        if explain == self.last_projection:
            return  # a warm-up of one step calibrates at once: the same projection twice
        self.last_projection = explain
        if over or event.get("shortened"):
            colour = "yellow" if over else "cyan"
            self.say(f"[bold {colour}]time budget:[/bold {colour}] {explain}")
            if event.get("cause"):
                self.say(f"  cause: {escape(str(event['cause']))}")
                self.say(f"  fix: {escape(str(event['fix']))}")
        elif event.get("stage") == "calibrated":
            self.say(f"[dim]{explain}[/dim]")
