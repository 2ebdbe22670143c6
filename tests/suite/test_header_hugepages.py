"""The run header's line on transparent huge pages (suite.run.header.hugepages_text)."""

from __future__ import annotations

from pathlib import Path

from harness.hugepages import thp_facts
from suite.run.header import header_lines, hugepages_text


def _facts(tmp_path: Path, enabled: str, env: dict[str, str]) -> dict[str, object]:
    root = tmp_path / enabled
    root.mkdir()
    (root / "enabled").write_text(" ".join(f"[{w}]" if w == enabled else w for w in ("always", "madvise", "never")))
    (root / "defrag").write_text("[madvise]")
    return dict(thp_facts(root, env))


def test_madvise_without_torchs_switch_names_the_switch(tmp_path: Path) -> None:
    text = hugepages_text(_facts(tmp_path, "madvise", {}))
    assert text == "kernel policy madvise; torch's tensors in 4 KiB pages (THP_MEM_ALLOC_ENABLE=1 asks for huge pages)"


def test_each_policy_in_words(tmp_path: Path) -> None:
    on = {"THP_MEM_ALLOC_ENABLE": "1"}
    assert hugepages_text(_facts(tmp_path, "always", {})) == "kernel policy always; torch's large tensors in huge pages"
    assert hugepages_text(_facts(tmp_path, "never", on)) == "kernel policy never; torch's tensors in 4 KiB pages"
    madvise = _facts(tmp_path, "madvise", on)
    assert hugepages_text(madvise) == "kernel policy madvise; torch's large tensors in huge pages"
    assert hugepages_text(None) == hugepages_text({"enabled": None}) == "not recorded"
    lines = header_lines({"cpu_model": "m", "logical_cores": 2, "transparent_hugepages": madvise})
    assert lines[-1] == "transparent huge pages: kernel policy madvise; torch's large tensors in huge pages"


def test_the_result_table_and_the_ranks_line_say_it(tmp_path: Path) -> None:
    """A result that recorded the facts shows a "huge pages" row; the rank's environment line
    in the live output carries the same words; a result from before has no row."""
    import io

    from rich.console import Console

    from suite.run.progress import LiveProgress
    from suite.run.summary import summary_table
    from suite.specs import resolve
    from tests.compare import synth

    facts = _facts(tmp_path, "madvise", {})
    steps = [synth.jittered(0.5, 4, 1)]
    out = io.StringIO()
    console = Console(file=out, width=300, color_system=None)
    console.print(summary_table(synth.result(steps, environment={"memory": {"transparent_hugepages": facts}})))
    assert "huge pages" in out.getvalue() and "kernel policy madvise; torch's tensors in 4 KiB pages" in out.getvalue()
    out.truncate(0)
    console.print(summary_table(synth.result(steps)))
    assert "huge pages" not in out.getvalue()
    out.truncate(0)
    LiveProgress(resolve("resnet50-cpu"), console).on_event(
        "environment", {"rank": 0, "hostname": "h", "transparent_hugepages": facts}
    )
    assert "rank 0 on h:" in out.getvalue() and "transparent huge pages: kernel policy madvise" in out.getvalue()


def test_the_plan_header_reads_the_environment_the_rank_will_inherit() -> None:
    """``make run`` prints the facts before the rank starts, from the caller's environment."""
    from suite.run.header import planned_header
    from suite.specs import resolve

    on = planned_header(resolve("resnet50-cpu"), {"THP_MEM_ALLOC_ENABLE": "1"})["transparent_hugepages"]
    assert on == thp_facts(env={"THP_MEM_ALLOC_ENABLE": "1"})
    off = planned_header(resolve("resnet50-cpu"), {})
    assert off["transparent_hugepages"] == thp_facts(env={})
    assert [line.split(":")[0] for line in header_lines(off)] == [
        "CPU",
        "matrix ISA",
        "transparent huge pages",
        "precision",
    ]
