"""``trainbench report`` on the committed submissions and bands (their cited figures include a GPU one,
the g5.2xlarge A10G run): one chart panel per device class, like-for-like rankings (bf16 emulated apart
from native), CI whiskers from the runs, readable MLflow keys, tables that fit the terminal, and
hostile names shown as literal text."""

from __future__ import annotations

import dataclasses
import io
import re
import shutil
from pathlib import Path

import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.patches import Rectangle
from mlflow.tracking import MlflowClient
from rich.console import Console

from suite.results import read_result, seal, write_result
from suite.rules import load_rules
from suite.tracking import log_report
from suite.validation import ranking
from suite.validation.bands_file import load_bands
from suite.validation.ranking import RankRow
from suite.validation.ranking_chart import chart_figure
from suite.validation.ranking_render import markdown, rich_tables
from suite.validation.tree import validate_tree
from tests.conftest import REPO, trainbench
from tests.run.test_sweep_tracking import sticks_out

SUBMISSIONS = REPO / "submissions"
CLOSED_RUNS = [f"result_{i}.json" for i in range(6, 11)]
"""The committed closed-division runs of epyc-zen4-2vcpu (the official profile, bf16)."""
KEY = re.compile(r"^[A-Za-z0-9_. /-]+$")
"""What an MLflow metric key may hold."""


def _rows(root: Path = SUBMISSIONS) -> list[RankRow]:
    bands = load_bands(root / "bands.yaml")
    return ranking.build_rows(validate_tree(root, load_rules(), bands), bands)


@pytest.fixture(scope="module")
def committed() -> list[RankRow]:
    return _rows()


def _bars(ax: object) -> list[Rectangle]:
    return [p for p in ax.patches if isinstance(p, Rectangle)]  # type: ignore[attr-defined]


def test_one_panel_per_device_class_with_whiskers_and_a_legend(committed: list[RankRow]) -> None:
    devices = {r.system: r.device for r in committed}
    assert devices["g5.2xlarge"] == "gpu" and devices["c7i.2xlarge"] == devices["epyc-zen4-2vcpu"] == "cpu"
    fig = chart_figure(committed)
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split(":")[0] for t in titles] == ["CPU", "CPU", "GPU", "GPU"]
    cpu_t, _, gpu_t, _ = fig.axes
    assert len(_bars(cpu_t)) == sum(r.device == "cpu" for r in committed)
    assert len(_bars(gpu_t)) == sum(r.device == "gpu" for r in committed) == 1
    assert gpu_t.get_xlim()[1] > 340 > cpu_t.get_xlim()[1]  # separate axes: 340 samples/s never dwarfs the CPUs
    whiskers = sum(isinstance(c, ErrorbarContainer) for c in cpu_t.containers)
    with_ci = [r for r in committed if r.ci95_low is not None]
    assert whiskers == len(with_ci) == 2  # the two submitted configs, 5 runs each; published figures have none
    for r in with_ci:
        assert r.ci_method == "Student t over the 5 runs" and r.ci95_low is not None and r.ci95_high is not None
        assert r.ci95_low < r.throughput < r.ci95_high
    [legend] = fig.legends
    labels = {t.get_text() for t in legend.get_texts()}
    assert labels == {"submitted, validated", "published figure (cited; no CI)", "95% CI over the runs"}
    assert max(sticks_out(fig)) <= 0.01  # every label fits


def test_rankings_and_recommendations_never_mix_classes(committed: list[RankRow]) -> None:
    for (_, comparable), members in ranking.rankings(committed).items():
        assert len({(r.device, r.precision, r.emulated, r.slug) for r in members}) == 1, comparable
    recs = {rec.comparable: rec for rec in ranking.recommend(committed)}
    gpu = recs["GPU, open: batch 128, fp32, 224 px, synthetic data"]
    cpu = recs["CPU, open: batch 128, fp32, 224 px, synthetic data"]
    assert gpu.for_throughput.system == "g5.2xlarge" and cpu.for_throughput.system == "c7i.2xlarge"


def test_emulated_bf16_is_ranked_apart_from_native(tmp_path: Path) -> None:
    """The committed official-profile runs, as an AVX2 machine would have recorded them (oneDNN capped below
    its bf16 ISAs): bf16 ran emulated, so they leave the closed ranking of native bf16 figures."""
    root = Path(shutil.copytree(SUBMISSIONS, tmp_path / "submissions"))
    runs = root / "trainbench" / "results" / "epyc-zen4-2vcpu" / "resnet50-cpu"
    for name in CLOSED_RUNS:
        doc = read_result(runs / name).model_dump(mode="json")
        doc["environment"]["env"]["ONEDNN_MAX_CPU_ISA"] = "AVX2"
        doc.pop("digest")
        write_result(seal(doc), runs / name)
    rows = {(r.system, r.config.split(":")[0]): r for r in _rows(root)}
    emulated, native = rows[("epyc-zen4-2vcpu", "closed")], rows[("c7i.2xlarge", "closed")]
    assert emulated.emulated and emulated.comparable == "CPU, closed division (the official config, bf16 emulated)"
    assert not native.emulated and native.comparable == "CPU, closed division (the official config, bf16)"
    assert emulated.slug == "cpu closed bf16-emulated"


def test_mlflow_keys_are_readable_and_accepted(committed: list[RankRow], tmp_path: Path, store_uri: str) -> None:
    hostile = dataclasses.replace(committed[0], system="../evil:/ sys\x1b[2J [x]", ref="a/b")
    rows = [*committed, hostile, dataclasses.replace(hostile, throughput=1.0, ref="c/d")]
    metrics = ranking.mlflow_metrics(rows)
    assert all(KEY.match(k) and "//" not in k and "/../" not in k for k in metrics)
    assert len([k for k in metrics if k.startswith("samples_per_s/")]) == len(rows)  # unique, none overwritten
    assert metrics["samples_per_s/resnet50-cpu/gpu open bs128 fp32 224px synthetic/g5.2xlarge published"] == 340
    assert "samples_per_s/resnet50-cpu/cpu closed bf16/epyc-zen4-2vcpu submitted" in metrics
    rid = log_report([], metrics, {"submissions": "committed"}, store_uri, description="- **advice**")
    logged = MlflowClient(tracking_uri=store_uri).get_run(rid)
    assert set(logged.data.metrics) == set(metrics) and logged.data.tags["mlflow.note.content"] == "- **advice**"


def test_hostile_names_are_literal_in_tables_markdown_and_chart(committed: list[RankRow]) -> None:
    evil = dataclasses.replace(committed[0], system="[bold red]evil[/] |x| $y$ \x1b[2J", config="open: a|b")
    out = io.StringIO()
    for table in rich_tables([evil], width=200):
        Console(file=out, width=200, color_system=None).print(table)
    text = out.getvalue()
    assert "[bold red]evil[/] |x| $y$" in text and "\x1b" not in text
    md = markdown([evil])
    assert "\\[bold red\\]evil\\[/\\] \\|x\\|" in md and "\x1b" not in md
    fig = chart_figure([evil])
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert any("\\$y\\$" in label and "\x1b" not in label for label in labels)
    assert max(sticks_out(fig)) <= 0.01


@pytest.mark.parametrize("columns", [200, 60])
def test_terminal_tables_fit_the_terminal(columns: int, tmp_path: Path) -> None:
    proc = trainbench(
        "report", str(SUBMISSIONS), "--output-dir", str(tmp_path), "--no-tracking", cwd=tmp_path,
        env={"COLUMNS": str(columns)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    tables = [line for line in proc.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= columns
    c7i = [line for line in tables if "c7i.2xlarge" in line]
    assert len(c7i) == 5 and all("published" in line for line in c7i) == (columns == 200)
    if columns == 200:  # wide: every column is there, each row on one line
        assert all("382,487" in line or "393,782" in line or "245,445" in line or "91,966" in line for line in c7i)
        assert max(len(line) for line in tables) > 80
    else:  # narrow: the columns that matter least are left out, the figures stay whole
        assert "left out" in proc.stdout
        assert any("37.93" in line for line in c7i) and any("epyc-zen4-2vcpu" in line for line in tables)


@pytest.mark.parametrize(("cap", "ran"), [(None, "bf16"), ("AVX2", "fp32")])
def test_auto_runs_without_a_recorded_decision_rank_by_what_auto_chose(
    cap: str | None, ran: str, tmp_path: Path
) -> None:
    """The committed official-profile runs as a trainbench that had ``precision: auto`` but did not yet
    record the rank's decision would have written them: they rank by what auto chooses on the hardware
    they recorded (Zen 4, avx512_bf16: bf16, beside the cited bf16 c7i figure; capped to AVX2: fp32,
    apart from it), never as 'auto'."""
    root = Path(shutil.copytree(SUBMISSIONS, tmp_path / "submissions"))
    runs = root / "trainbench" / "results" / "epyc-zen4-2vcpu" / "resnet50-cpu"
    for name in CLOSED_RUNS:
        doc = read_result(runs / name).model_dump(mode="json")
        assert doc["config"]["params"]["precision"] == "bf16" and "precision" not in doc["workload_info"]
        doc["config"]["params"]["precision"] = "auto"
        if cap is not None:
            doc["environment"]["env"]["ONEDNN_MAX_CPU_ISA"] = cap
        doc.pop("digest")
        write_result(seal(doc), runs / name)
    rows = {(r.system, r.config.split(":")[0]): r for r in _rows(root)}
    auto, cited = rows[("epyc-zen4-2vcpu", "closed")], rows[("c7i.2xlarge", "closed")]
    assert auto.precision == ran and not auto.emulated and f"{ran} (auto) + channels_last" in auto.config
    assert auto.comparable == f"CPU, closed division (the official config, {ran})"
    assert auto.slug == f"cpu closed {ran}"
    assert cited.precision == "bf16" and (auto.comparable == cited.comparable) == (ran == "bf16")
    assert all("auto" not in r.comparable and "auto" not in r.slug and r.precision != "auto" for r in rows.values())
