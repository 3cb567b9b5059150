from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "powercap"


@pytest.fixture(autouse=True)
def _wide_terminal_and_no_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # rich wraps table cells at 80 columns otherwise
    for name in ("CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "GPU_DEVICE_ORDINAL"):
        monkeypatch.delenv(name, raising=False)


def test_machine_without_gpu_or_rapl_lists_the_estimate_and_one_nvidia_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the real pynvml: on this machine there is no NVIDIA driver
    assert main(["sensors", "--powercap-root", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "measuring all visible GPUs (no CUDA_VISIBLE_DEVICES or SLURM allocation)"
    assert "estimate:cpu" in out and "estimate:dram" in out
    assert out.count("estimated") >= 4  # source column and note of both devices
    nvidia = [line for line in lines if line.startswith("- NVIDIA:")]
    assert len(nvidia) == 1
    assert "Traceback" not in out
    assert any(line.startswith("- RAPL: no RAPL powercap tree") for line in lines)


def test_rapl_tree_rows_say_counter_yes_and_source_counter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sensors", "--powercap-root", str(DATA / "intel")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "rapl:intel-rapl:0 " in line)
    assert all(cell in row for cell in ("package-0", "cpu", "yes", "counter"))
    assert "estimate:cpu" not in out


def test_simulate_adds_labelled_simulated_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sensors", "--simulate", "2", "--powercap-root", str(tmp_path)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "GPU-sim-" in line]
    assert len(rows) == 2
    assert all("gpu" in row and "yes" in row and "simulated" in row for row in rows)


def test_selection_line_names_the_job_or_the_whole_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2")
    assert main(["sensors", "--powercap-root", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("measuring GPUs of this job: CUDA_VISIBLE_DEVICES=0,2\n")
    assert main(["sensors", "--whole-node", "--powercap-root", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("measuring every GPU of the node: whole node (--whole-node)\n")


def test_bad_slurm_variable_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLURM_JOB_GPUS", "gpu:a100")
    assert main(["sensors"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: SLURM_JOB_GPUS=") and err.count("\n") == 1
