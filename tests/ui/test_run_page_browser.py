"""A real browser reads the MLflow run page of a real run: the answer must be on screen, not only in the API.

Headless Chromium (Debian's package; never a downloaded browser) driven by Playwright
opens the run page of a tiny real ``trainbench run`` logged to ``mlflow server`` on
loopback, checks that the run name, the throughput with its 95% CI, the first metric
and the hardware tags are rendered inside the first screen, and saves screenshots
(``mlflow-run-page.png``, ``mlflow-system-metrics.png``) in ``$TRAINBENCH_UI_ARTIFACTS``
(default ``results/ui/``) for CI to keep.

Without Chromium or Playwright the test is skipped with the reason, except where
``TRAINBENCH_REQUIRE_BROWSER=1`` (CI), where it fails instead.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from suite import labels
from suite.results import read_result
from suite.tracking.page import interval_words, number
from tests.conftest import REPO, TINY_RUN, trainbench
from tests.faults.helpers import MlflowServer

CHROMIUM = os.environ.get("TRAINBENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Chromium flags for a sandboxless, offline CI machine (the profile directory is a fresh one per test)."""
ARTIFACTS = Path(os.environ.get("TRAINBENCH_UI_ARTIFACTS") or REPO / "results" / "ui")
VIEWPORT = {"width": 1440, "height": 1000}
"""The first screen: everything the page must answer is inside it, without scrolling."""


@pytest.fixture
def sync_playwright() -> Any:
    """Playwright's ``sync_playwright``, or a skip saying what is missing (a failure under REQUIRE_BROWSER)."""
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "needs the playwright package (pip install -e '.[dev]')"
    if reason is None and not Path(CHROMIUM).is_file():
        reason = f"needs Chromium at {CHROMIUM} (apt-get install chromium, or set TRAINBENCH_CHROMIUM)"
    if reason is not None:
        if os.environ.get("TRAINBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"TRAINBENCH_REQUIRE_BROWSER=1, but the browser test {reason}")
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture
def server(tmp_path: Path, empty_store_template: Path) -> Iterator[MlflowServer]:
    root = tmp_path / "server"
    root.mkdir()
    s = MlflowServer(root, store=empty_store_template)
    s.start()
    yield s
    s.stop()


def _text(markdown: str) -> str:
    """What the browser shows for a line of our Markdown (backslash escapes and entities undone, bold dropped)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", markdown)).replace("**", "")


def _on_first_screen(locator: Any) -> bool:
    box = locator.bounding_box()
    return bool(box) and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def test_the_run_page_shows_name_throughput_ci_and_hardware_on_the_first_screen(
    sync_playwright: Any, server: MlflowServer, tmp_path: Path
) -> None:
    proc = trainbench(
        "run", "resnet50-cpu", *TINY_RUN, "--set", "precision=fp32", "--set", "measure_steps=8",
        "--output-dir", str(tmp_path / "o"), "--tracking-uri", server.uri, "--system", "ui-box", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = list((tmp_path / "o").rglob("result.json"))
    result = read_result(path)
    assert result.summary is not None
    client = MlflowClient(tracking_uri=server.uri)
    exp = client.get_experiment_by_name("resnet50-cpu")
    assert exp is not None
    [run] = client.search_runs([exp.experiment_id])
    url = f"{server.uri}/#/experiments/{exp.experiment_id}/runs/{run.info.run_id}?workflowType=machine_learning"
    headline = _text(f"{number(result.summary.throughput)} samples/s · {interval_words(result)[1]}")
    env = result.environment
    hardware = {
        "trainbench.cores": labels.cores_text(env),
        "trainbench.isa": labels.isa_summary(env),
        "trainbench.gpu": labels.gpu_text(env),
        "trainbench.torch": env["torch"]["version"],
        "trainbench.cpu_model": str(env["cpu"]["model"]),
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            args=FLAGS,
            headless=True,
            viewport=VIEWPORT,
        )
        try:
            page = browser.new_page()
            page.goto(url, wait_until="load", timeout=120_000)
            name = page.get_by_role("heading", name=run.info.run_name, exact=True)
            name.wait_for(state="visible", timeout=60_000)
            assert run.info.run_name == "resnet50-cpu fp32 bs2 [image_size=64] @ ui-box"
            page.get_by_text("trainbench.cores", exact=True).wait_for(state="visible", timeout=30_000)
            close = page.get_by_role("button", name="Close")  # MLflow 3.17's assistant panel takes a third
            if close.count():
                close.first.click()
            page.wait_for_timeout(1000)

            assert _on_first_screen(name)
            top = page.get_by_text(headline)
            assert top.is_visible() and _on_first_screen(top), headline
            assert page.get_by_text(f"{number(result.summary.throughput)} samples/s", exact=True).is_visible()

            metrics = [m for m in page.locator("a[href*='model-metrics']").all_inner_texts() if m.strip()]
            assert "system/cpu_utilization_percentage" in metrics
            # the metrics table scrolls and renders only the rows in view, and the store returns metrics logged at
            # the same step in no fixed order: the headline's place is what the description above asserts, and
            # here a user's search of the table must find all the headline metrics. A CI that a loaded machine
            # leaves unbounded is logged as no metric at all (the headline above says so in words), never as NaN.
            page.get_by_placeholder("Search metrics").fill("throughput_")
            headline_metrics, ci_metrics = {"throughput_samples_per_s"}, {"throughput_ci95_low", "throughput_ci95_high"}
            bounded = result.summary.throughput_ci95 is not None and result.summary.throughput_ci95.high is not None
            if bounded:
                headline_metrics |= ci_metrics
            else:
                assert "unbounded" in client.get_run(run.info.run_id).data.tags["trainbench.throughput_ci95"]
            for key in sorted(headline_metrics):
                page.locator("a[href*='model-metrics']", has_text=key).first.wait_for(state="visible", timeout=30_000)
            found = {m for m in page.locator("a[href*='model-metrics']").all_inner_texts() if m.strip()}
            assert headline_metrics <= found, found
            assert bounded or not ci_metrics & found, found
            page.get_by_placeholder("Search metrics").fill("")

            for key, value in hardware.items():
                assert value, key
                chip_key, chip_value = page.locator(f'span[title="{key}"]'), page.locator(f'span[title="{value}"]')
                assert chip_key.first.is_visible() and _on_first_screen(chip_key.first), key
                assert chip_value.first.is_visible() and chip_value.first.inner_text() == f": {value}", (key, value)
            page.screenshot(path=str(ARTIFACTS / "mlflow-run-page.png"))

            page.get_by_role("tab", name="System metrics").click()
            chart = page.get_by_text("cpu_utilization_percentage", exact=True)
            chart.first.wait_for(state="visible", timeout=30_000)
            assert page.get_by_text("process_tree_rss_megabytes", exact=True).first.is_visible()
            page.locator("svg.main-svg").first.wait_for(state="visible", timeout=60_000)  # plotted, not loading
            page.wait_for_timeout(1500)
            page.screenshot(path=str(ARTIFACTS / "mlflow-system-metrics.png"))
        finally:
            browser.close()
    assert (ARTIFACTS / "mlflow-run-page.png").stat().st_size > 50_000
