"""Workload specs, profiles and --set overrides."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from suite.launchers import InlineLaunch, RunCpuLaunch, TorchrunLaunch
from suite.specs import SPECS_DIR, ConfigError, load_spec, load_specs, resolve


def test_specs_load_and_profiles_follow_the_seed_study() -> None:
    specs = load_specs()
    assert "resnet50-cpu" in specs
    official = resolve("resnet50-cpu", "official")
    assert official.params["batch_size"] == 128
    assert official.windows.warmup_steps >= 10 and official.windows.measure_steps >= 90
    quick = resolve("resnet50-cpu")
    assert quick.profile == "quick" and quick.overrides == []


def test_overrides_are_typed_and_sectioned() -> None:
    c = resolve(
        "resnet50-cpu",
        None,
        ["batch_size=32", "windows.repeats=2", "allocator=tcmalloc", "channels_last=false", "lr=0.1"],
    )
    assert c.params["batch_size"] == 32 and c.params["channels_last"] is False and c.params["lr"] == 0.1
    assert c.windows.repeats == 2 and c.launch.allocator == "tcmalloc"
    assert c.overrides[0] == "batch_size=32"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("batch_size=0", "batch_size: Input should be greater than or equal to 1"),
        ("precision=fp16", "precision: Input should be 'auto', 'fp32' or 'bf16'"),
        ("warmup_steps=-1", "warmup_steps: Input should be greater than or equal to 1"),
        ("measure_seconds=nan", "measure_seconds"),
        ("repeats=0", "repeats"),
        ("nosuch=1", "unknown setting"),
        ("params.nosuch=1", "params has no setting 'nosuch'"),
        ("bogus.batch_size=1", "unknown section 'bogus'"),
        ("batch_size", "expected key=value"),
        ("=3", "the key is empty"),
        ("data=imagefolder", "data=imagefolder needs data_dir"),
        ("allocator=mimalloc", "allocator"),
    ],
)
def test_bad_overrides_say_what_to_change(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        resolve("resnet50-cpu", None, [override])
    assert message in str(info.value)


def test_unknown_workload_and_profile_list_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"valid workloads: .*resnet50-cpu"):
        resolve("resnet-50")
    with pytest.raises(ConfigError, match="profiles: official, quick"):
        resolve("resnet50-cpu", "fast")


def _spec(tmp_path: Path, name: str, **changes: object) -> Path:
    raw = yaml.safe_load((SPECS_DIR / "resnet50-cpu.yaml").read_text())
    raw.update(changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_invalid_spec_files_are_errors_not_skipped(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must match the file name"):
        load_spec(_spec(tmp_path, "other"))
    with pytest.raises(ConfigError, match="unknown workload 'nope'"):
        load_spec(_spec(tmp_path, "resnet50-cpu", workload="nope"))
    with pytest.raises(ConfigError, match="default_profile"):
        load_spec(_spec(tmp_path, "resnet50-cpu", default_profile="missing"))
    with pytest.raises(ConfigError, match="spec_version"):
        load_spec(_spec(tmp_path, "resnet50-cpu", spec_version=2))
    (tmp_path / "broken.yaml").write_text("name: [unclosed")
    with pytest.raises(ConfigError, match="cannot read spec"):
        load_specs(tmp_path)


def test_profile_params_are_checked_at_load(tmp_path: Path) -> None:
    raw = yaml.safe_load((SPECS_DIR / "resnet50-cpu.yaml").read_text())
    raw["profiles"]["quick"]["params"]["batch_size"] = "big"
    path = tmp_path / "resnet50-cpu.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="profile 'quick': batch_size"):
        load_spec(path)


def test_yaml_tags_are_not_executed(tmp_path: Path) -> None:
    path = tmp_path / "resnet50-cpu.yaml"
    path.write_text("!!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="cannot read spec"):
        load_spec(path)


def test_yaml_1_1_words_stay_strings_so_compile_off_works() -> None:
    # YAML 1.1 reads `off` as false; the override keeps the word, and bool settings still accept it
    config = resolve("resnet50-cpu", overrides=["compile=off", "channels_last=off"])
    assert config.params["compile"] == "off" and config.params["channels_last"] is False
    assert resolve("resnet50-cpu", overrides=["channels_last=yes"]).params["channels_last"] is True


def test_oversized_or_special_spec_files_are_refused(tmp_path: Path) -> None:
    from suite.files import MAX_FILE_BYTES

    big = tmp_path / "resnet50-cpu.yaml"
    with big.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(ConfigError, match=r"over the .*-byte limit"):
        load_spec(big)
    fifo = tmp_path / "fifo" / "resnet50-cpu.yaml"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):  # refused at once, never blocks on the FIFO
        load_spec(fifo)


def test_launch_settings_are_the_variant_of_the_launcher() -> None:
    """One typed variant per launcher: a spec or ``--set`` key keeps its meaning, a key the
    run's launcher lacks is an error, and a profile's keys follow its own launcher."""
    inline = resolve("resnet50-cpu", None, ["cpus=0", "launch.numa_nodes=0", "omp_num_threads=2"])
    assert isinstance(inline.launch, InlineLaunch) and inline.launch.cpus == "0" and inline.launch.numa_nodes == "0"
    assert "topology" not in inline.launch.model_dump() and "launch.topology" not in inline.flat_params()
    torchrun = resolve("resnet50-cpu", None, ["launcher=torchrun", "topology=0;1", "compare_single=false"])
    assert isinstance(torchrun.launch, TorchrunLaunch) and torchrun.launch.topology == "0;1"
    assert isinstance(resolve("resnet50-cpu", None, ["launcher=run_cpu", "cpus=0"]).launch, RunCpuLaunch)
    for overrides, message in (
        (["topology=0;1"], "--set topology applies to launcher=torchrun only, and this run's launcher is inline"),
        (["launcher=horovodrun", "cpus=0"], "--set cpus applies to launcher=inline or run_cpu only"),
        (["nproc_per_node=2"], "applies to launcher=torchrun or horovodrun only"),
        (["launcher=slurm"], "launcher: Input should be 'inline', 'run_cpu', 'torchrun' or 'horovodrun'"),
    ):
        with pytest.raises(ConfigError) as info:
            resolve("resnet50-cpu", None, overrides)
        assert message in str(info.value) and info.value.exit_code == 2
    # numa-ddp's profile sets compare_single for torchrun: another launcher leaves it out
    single = resolve("numa-ddp", None, ["launcher=inline"])
    assert isinstance(single.launch, InlineLaunch) and "compare_single" not in single.launch.model_dump()


def test_a_spec_with_a_setting_its_launcher_lacks_is_refused(tmp_path: Path) -> None:
    spec = yaml.safe_load((SPECS_DIR / "resnet50-cpu.yaml").read_text())
    spec["profiles"]["quick"]["launch"]["topology"] = "0;1"  # inline has no topology
    path = tmp_path / "resnet50-cpu.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ConfigError, match=r"profiles\.quick\.launch\.inline\.topology: Extra inputs"):
        load_spec(path)
