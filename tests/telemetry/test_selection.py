from __future__ import annotations

import pytest

from wattlog.errors import ConfigError
from wattlog.telemetry.selection import (
    NVIDIA_VISIBILITY,
    GpuSelection,
    SlurmGpus,
    VisibleDevices,
    job_selection,
)
from wattlog.telemetry.sensors.nvidia import NvidiaBackend

UUID_A = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
UUID_B = "GPU-1f2e3d4c-0000-1111-2222-333344445555"


def test_no_environment_selects_all_visible_gpus() -> None:
    selection = job_selection({})
    assert selection.includes(0, UUID_A) and selection.includes(7, UUID_B)
    assert not selection.whole_node
    assert selection.describe() == (
        "measuring all visible GPUs (no CUDA_VISIBLE_DEVICES or SLURM allocation)"
    )


def test_whole_node_overrides_the_environment() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": "1"}, whole_node=True)
    assert selection.whole_node
    assert selection.includes(0, UUID_A)
    assert "whole node" in selection.describe()


def test_cuda_indices_select_only_those_gpus() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": "0,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [i for i in range(4) if selection.includes(i, f"GPU-{i}")] == [0, 2]
    assert selection.describe() == "measuring GPUs of this job: CUDA_VISIBLE_DEVICES=0,2"
    assert selection.notes == ()


def test_cuda_indices_without_pci_order_carry_a_note() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": "1"})
    assert any("CUDA_DEVICE_ORDER=PCI_BUS_ID" in note for note in selection.notes)


def test_cuda_list_stops_at_the_first_invalid_entry_as_cuda_does() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": "0,2,-1,1"})
    assert selection.indices == frozenset({0, 2})
    assert not selection.includes(1, UUID_B)
    assert any("-1" in note for note in selection.notes)


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles"])
def test_empty_or_invalid_cuda_value_selects_no_gpu(value: str) -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": value, "SLURM_JOB_GPUS": "0"})
    assert not selection.includes(0, UUID_A)
    assert selection.describe().startswith("measuring no GPUs")


@pytest.mark.parametrize(
    "entry",
    [UUID_A, UUID_A.lower(), UUID_A.upper(), "GPU-8932f937", "8932f937-d72c"],
)
def test_cuda_uuid_matches_full_abbreviated_and_unprefixed_forms(entry: str) -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": entry})
    assert selection.includes(5, UUID_A)
    assert not selection.includes(0, UUID_B)


def test_cuda_mixes_indices_and_uuids() -> None:
    selection = job_selection({"CUDA_VISIBLE_DEVICES": f"3,{UUID_B}"})
    assert selection.includes(3, UUID_A)
    assert selection.includes(0, UUID_B)
    assert not selection.includes(1, "GPU-ffffffff")


def test_mig_entries_select_the_parent_gpu() -> None:
    old_form = job_selection({"CUDA_VISIBLE_DEVICES": f"MIG-{UUID_A}/1/0"})
    assert old_form.includes(0, UUID_A)
    assert not old_form.includes(1, UUID_B)
    new_form = job_selection({"CUDA_VISIBLE_DEVICES": "MIG-aaaa1111-2222-3333-4444-555566667777"})
    assert not new_form.includes(0, UUID_A)
    assert new_form.includes(0, UUID_A, mig_uuids=["MIG-aaaa1111-2222-3333-4444-555566667777"])
    assert any("MIG" in note for note in new_form.notes)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"SLURM_STEP_GPUS": "1,3", "SLURM_JOB_GPUS": "0,1,2,3"}, {1, 3}),
        ({"SLURM_JOB_GPUS": "0-2"}, {0, 1, 2}),
        ({"GPU_DEVICE_ORDINAL": "2"}, {2}),
    ],
)
def test_slurm_allocation_is_used_without_cuda_visible_devices(
    environ: dict[str, str], expected: set[int]
) -> None:
    selection = job_selection(environ)
    assert {i for i in range(4) if selection.includes(i, f"GPU-{i}")} == expected
    assert selection.origin.split("=")[0] in environ
    assert selection.describe().startswith("measuring GPUs of this job: ")


def test_malformed_slurm_value_is_a_config_error_naming_the_fix() -> None:
    with pytest.raises(ConfigError, match="CUDA_VISIBLE_DEVICES or pass --whole-node"):
        job_selection({"SLURM_JOB_GPUS": "gpu:a100"})


def test_selection_is_frozen_data() -> None:
    selection = job_selection({})
    assert isinstance(selection, GpuSelection)
    with pytest.raises(AttributeError):
        selection.whole_node = True  # type: ignore[misc]


def test_a_vendor_adds_its_own_visibility_variable_before_slurms() -> None:
    hip = (VisibleDevices("HIP_VISIBLE_DEVICES", ""), SlurmGpus())
    selection = job_selection(
        {"HIP_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "0", "SLURM_JOB_GPUS": "3"}, rules=hip
    )
    assert selection.origin == "HIP_VISIBLE_DEVICES=1"
    assert selection.includes(1, UUID_A) and not selection.includes(0, UUID_A)
    assert selection.notes == ()  # no device-order variable: the runtime's order is the driver's
    assert job_selection({"SLURM_JOB_GPUS": "3"}, rules=hip).origin == "SLURM_JOB_GPUS=3"
    assert job_selection({"CUDA_VISIBLE_DEVICES": "0"}, rules=hip).describe() == (
        "measuring all visible GPUs (no HIP_VISIBLE_DEVICES or SLURM allocation)"
    )


def test_nvidias_rules_are_the_default() -> None:
    environ = {"CUDA_VISIBLE_DEVICES": "0,2", "SLURM_JOB_GPUS": "3"}
    assert job_selection(environ) == job_selection(environ, rules=NVIDIA_VISIBILITY)
    assert NvidiaBackend().visibility(environ) == job_selection(environ)
