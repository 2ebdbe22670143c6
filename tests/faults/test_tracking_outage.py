"""A tracking outage never loses a run: the result is written first, the run waits in the outbox, sync is idempotent.

These tests stop and restart a real `mlflow server` on loopback.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from suite.results import read_result
from suite.run.outbox import pending
from suite.tracking import log_result
from tests.conftest import TINY_RUN, trainbench
from tests.faults.helpers import EXE, MlflowServer, start_run, wait_for_measurement


def _runs(uri: str) -> list[str]:
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("resnet50-cpu")
    return [] if exp is None else [r.info.run_id for r in client.search_runs([exp.experiment_id])]


@pytest.fixture
def server(tmp_path: Path, empty_store_template: Path) -> Iterator[MlflowServer]:
    root = tmp_path / "server"
    root.mkdir()
    s = MlflowServer(root, store=empty_store_template)
    yield s
    s.stop()


def test_server_down_then_sync_after_restart(tmp_path: Path, server: MlflowServer) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--output-dir",
        str(tmp_path / "o"),
        "--tracking-uri",
        server.uri,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 3, proc.stderr
    assert "trainbench sync" in proc.stderr and "safe in" in proc.stderr
    [result_path] = list((tmp_path / "o").rglob("result.json"))
    assert read_result(result_path).status == "complete"
    assert len(pending(tmp_path / "o")) == 1

    server.start()
    sync = subprocess.run(
        [EXE, "sync", "--output-dir", str(tmp_path / "o")], capture_output=True, text=True, timeout=300
    )
    assert sync.returncode == 0, sync.stderr
    assert pending(tmp_path / "o") == []
    [rid] = _runs(server.uri)
    run = MlflowClient(tracking_uri=server.uri).get_run(rid)
    assert run.info.status == "FINISHED"
    assert run.data.tags["trainbench.digest"] == read_result(result_path).digest
    again = subprocess.run([EXE, "sync", "--output-dir", str(tmp_path / "o")], capture_output=True, text=True)
    assert again.returncode == 0 and "nothing queued" in again.stdout
    assert len(_runs(server.uri)) == 1


def test_server_dies_mid_run(tmp_path: Path, server: MlflowServer) -> None:
    server.start()
    run = start_run(tmp_path, "--set", "measure_seconds=8", tracking=["--tracking-uri", server.uri])
    wait_for_measurement(tmp_path)
    server.stop()
    _, stderr = run.communicate(timeout=600)
    assert run.returncode == 3, stderr
    assert len(list((tmp_path / "o").rglob("result.json"))) == 1
    server.start()
    sync = subprocess.run(
        [EXE, "sync", "--output-dir", str(tmp_path / "o")], capture_output=True, text=True, timeout=300
    )
    assert sync.returncode == 0, sync.stderr
    assert len(_runs(server.uri)) == 1


def test_logging_is_idempotent_and_replaces_a_broken_off_run(tmp_path: Path, store_uri: str) -> None:
    proc = trainbench(
        "run", "resnet50-cpu", *TINY_RUN, "--output-dir", str(tmp_path / "o"), "--no-tracking", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    [path] = list((tmp_path / "o").rglob("result.json"))
    result = read_result(path)
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.create_experiment("resnet50-cpu")
    broken = client.create_run(exp, tags={"trainbench.result_id": result.run_id}).info.run_id  # broke off
    first = log_result(result, path, [], store_uri)
    assert log_result(result, path, [], store_uri) == first
    assert _runs(store_uri) == [first]
    assert client.get_run(broken).info.lifecycle_stage == "deleted"


def test_two_runs_logging_to_one_sqlite_store_at_once(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    dirs = [tmp_path / f"r{i}" for i in range(2)]
    for d in dirs:
        d.mkdir()
    # One thread each: two runs with a thread per core each would share 2 vCPUs four ways, and OpenMP's spinning
    # barriers then made each step 40x slower (7.3 s, not 0.18 s; 39 s a run instead of 10), for no more coverage.
    one_thread = ("--set", "omp_num_threads=1")
    runs = [start_run(d, *one_thread, tracking=["--tracking-uri", uri]) for d in dirs]
    for r in runs:
        _, stderr = r.communicate(timeout=600)
        assert r.returncode == 0, stderr
    assert len(_runs(uri)) == 2
    with sqlite3.connect(tmp_path / "shared.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for rid in _runs(uri):
        assert MlflowClient(tracking_uri=uri).get_run(rid).info.status == "FINISHED"


LOGGER = """
import sys, time
from pathlib import Path
from suite.results import read_result
from suite.tracking import log_result
path, uri, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
result = read_result(path)
while not go.exists():
    time.sleep(0.01)
print(log_result(result, path, [], uri))
"""


def test_concurrent_writers_to_one_sqlite_store_all_land_whole(tmp_path: Path) -> None:
    """Four processes released at the same instant each log a run into one new SQLite store."""
    from suite.results import seal, write_result

    proc = trainbench(
        "run", "resnet50-cpu", *TINY_RUN, "--output-dir", str(tmp_path / "o"), "--no-tracking", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    [path] = list((tmp_path / "o").rglob("result.json"))
    doc = read_result(path).model_dump(mode="json")
    doc.pop("digest")
    paths = []
    for i in range(4):
        doc["run_id"] = f"{i:032x}"  # four distinct results (the store keys runs by result id)
        paths.append(write_result(seal(doc), tmp_path / f"result-{i}.json"))
    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", LOGGER, str(p), uri, str(go)],
            cwd=Path(__file__).resolve().parents[2],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in paths
    ]
    time.sleep(8)  # let every writer import MLflow and wait at the line
    go.touch()
    ids = []
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        ids.append(out.strip().splitlines()[-1])
    assert sorted(ids) == sorted(_runs(uri)) and len(set(ids)) == 4
    with sqlite3.connect(tmp_path / "shared.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    client = MlflowClient(tracking_uri=uri)
    measured = len([s for s in read_result(paths[0]).steps if s.phase.value == "measurement"])
    for rid in ids:
        run = client.get_run(rid)
        assert run.info.status == "FINISHED"
        assert len(client.get_metric_history(rid, "step_time_s")) == measured  # every write landed
