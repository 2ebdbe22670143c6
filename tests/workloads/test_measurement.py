"""The typed record a rank hands to the runner: the JSON the rank always wrote, read as a model."""

from __future__ import annotations

import json
from pathlib import Path

from harness.records import Phase, StepRecord, WindowRecord
from harness.sampler import UtilizationSample
from workloads.measurement import RankMeasurement

STEP = {
    "repeat": 0,
    "phase": "measurement",
    "index": 0,
    "start_s": 1.5,
    "data_wait_s": 0.01,
    "compute_s": 0.2,
    "samples": 16,
    "rank": 1,
    "device_s": None,  # a CPU rank has no device timer
}
WINDOW = {"repeat": 0, "phase": "measurement", "start_s": 1.5, "seconds": 0.21, "steps": 1, "samples": 16, "rank": 1}


def test_the_json_a_rank_writes_reads_back_as_typed_records(tmp_path: Path) -> None:
    on_disk = {
        "rank": 1,
        "world_size": 2,
        "complete": True,
        "error": None,
        "workload_info": {"per_rank_batch_size": 16},
        "run_uid": "0123abcd",  # the supervisor's run id, as the harness held it
        "origin_unix_s": 1_790_000_000.5,
        "plan": {"warmup_steps": 1, "measure_steps": 1, "repeats": 1},
        "system": {"host": {"hostname": "box"}},
        "steps": [STEP],
        "windows": [WINDOW],
        "utilization": [  # a reading with the interference fields (CPU-seconds of the machine, the run, others, steal)
            {
                "t_s": 0.5,
                "cpu_percent": [90.0, 10.0],
                "rss_bytes": 10**9,
                "machine_cpu_s": 1.0,
                "run_cpu_s": 0.9,
                "others_cpu_s": 0.05,
                "steal_s": 0.0,
                "gpus": None,  # a CPU run reads no GPU
                "gpu_error": None,
            }
        ],
    }
    path = tmp_path / "measurement-rank1.json"
    path.write_text(json.dumps(on_disk))
    m = RankMeasurement.read(path)
    assert m is not None and m.finished and m.rank == 1 and m.world_size == 2
    assert m.steps == [StepRecord(0, Phase.MEASUREMENT, 0, 1.5, 0.01, 0.2, 16, rank=1)]
    assert m.windows == [WindowRecord(0, Phase.MEASUREMENT, 1.5, 0.21, 1, 16, rank=1)]
    assert m.utilization == [UtilizationSample(0.5, [90.0, 10.0], 10**9, 1.0, 0.9, 0.05, 0.0)]
    assert m.to_json() == on_disk  # the same keys and values: no "ranks" until they are gathered
    older = json.loads(json.dumps(on_disk))  # written before device times and GPU readings existed
    del older["steps"][0]["device_s"], older["utilization"][0]["gpus"], older["utilization"][0]["gpu_error"]
    path.write_text(json.dumps(older))
    assert RankMeasurement.read(path) == m
    gathered = m.model_copy(update={"ranks": [m, m]})
    gathered.write(tmp_path / "measurement.json")
    back = RankMeasurement.read(tmp_path / "measurement.json")
    assert back is not None and back.ranks is not None and [r.rank for r in back.ranks] == [1, 1]


def test_still_running_failed_and_unreadable_files(tmp_path: Path) -> None:
    running = tmp_path / "running.json"
    running.write_text(json.dumps({"rank": 0, "world_size": 1, "complete": False, "error": None}))
    m = RankMeasurement.read(running)
    assert m is not None and not m.finished and m.steps == [] and m.windows == []
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({"rank": 0, "world_size": 1, "complete": False, "error": "bad job file j.json: x"}))
    m = RankMeasurement.read(failed)
    assert m is not None and m.finished and not m.complete
    torn = tmp_path / "torn.json"
    torn.write_text('{"rank": 0, "steps": [')
    assert RankMeasurement.read(torn) is None
    assert RankMeasurement.read(tmp_path / "missing.json") is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"world_size": 0}))
    assert RankMeasurement.read(bad) is None
