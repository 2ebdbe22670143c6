"""GPU capture (harness/gpus.py): the CUDA version encoding everywhere, NVML's answers on GPU hosts."""

from __future__ import annotations

import pytest

from harness.gpus import cuda_version_text, gpu_devices
from harness.system import capture_system


def test_nvml_cuda_version_encoding() -> None:
    # NVML encodes 1000 * major + 10 * minor (seen on an H100 with driver 580.159.04: 13000)
    assert cuda_version_text(13000) == "13.0"
    assert cuda_version_text(12040) == "12.4"
    assert cuda_version_text(11080) == "11.8"
    with pytest.raises(ValueError, match="bad CUDA driver version"):
        cuda_version_text(-1)


def test_without_a_gpu_the_capture_says_why() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    gpus = gpu_devices()
    assert gpus["devices"] == [] and gpus["note"]


@pytest.mark.gpu
def test_a_gpu_host_records_model_memory_driver_cuda_and_capability() -> None:
    import torch

    gpus = capture_system()["gpus"]
    assert len(gpus["devices"]) == torch.cuda.device_count()
    assert gpus["driver"] and gpus["cuda_driver_version"].count(".") == 1
    # the driver supports at least the CUDA that torch was built with
    major, minor = (int(p) for p in gpus["cuda_driver_version"].split("."))
    built = tuple(int(p) for p in str(torch.version.cuda).split(".")[:2])
    assert (major, minor) >= built
    for dev in gpus["devices"]:
        i = dev["index"]
        assert dev["name"] == torch.cuda.get_device_name(i)
        # NVML's total and CUDA's may differ by the driver's reservation: within 2%
        assert dev["memory_bytes"] == pytest.approx(torch.cuda.get_device_properties(i).total_memory, rel=0.02)
        assert dev["compute_capability"] == "{}.{}".format(*torch.cuda.get_device_capability(i))
        assert dev["max_sm_clock_mhz"] > 0 and dev["power_limit_w"] > 0
