"""Job identity from SLURM and torchrun variables, and SLURM's host-list syntax."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wattlog.errors import ConfigError
from wattlog.telemetry.job import (
    compress_nodelist,
    expand_nodelist,
    job_identity,
    sample_nodes_from,
    sampled_nodes,
)


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("node[08-10]", ["node08", "node09", "node10"]),
        ("n[8-10]", ["n8", "n9", "n10"]),
        ("a1,b[2-3],c", ["a1", "b2", "b3", "c"]),
        ("rack[1-2]-gpu[0-1]", ["rack1-gpu0", "rack1-gpu1", "rack2-gpu0", "rack2-gpu1"]),
        ("single", ["single"]),
        ("", []),
    ],
)
def test_expand_nodelist(text: str, hosts: list[str]) -> None:
    assert expand_nodelist(text) == hosts


@pytest.mark.parametrize("bad", ["node[01-04", "node01]", "node[04-01]", "node[a-b]", "a,,b", "n[[1]]"])
def test_malformed_nodelists_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError):
        expand_nodelist(bad)


def test_compress_keeps_padding_and_order() -> None:
    hosts = ["node01", "node02", "node03", "node07", "gpu9", "gpu10", "login"]
    assert compress_nodelist(hosts) == "node[01-03,07],gpu9,gpu10,login"
    assert expand_nodelist(compress_nodelist(hosts)) == hosts


_PREFIX = st.from_regex(r"[a-z][a-z-]{0,5}", fullmatch=True)
_DIGITS = st.from_regex(r"[0-9]{0,4}", fullmatch=True)


@given(st.lists(st.tuples(_PREFIX, _DIGITS).map("".join), min_size=0, max_size=40))
def test_compress_then_expand_is_the_identity(hosts: list[str]) -> None:
    assert expand_nodelist(compress_nodelist(hosts)) == hosts


@given(st.integers(1, 300), st.integers(1, 300))
def test_sampled_nodes_are_k_distinct_nodes_of_the_job(nodes: int, k: int) -> None:
    chosen = sampled_nodes(nodes, k)
    assert len(chosen) == min(nodes, k)
    assert all(0 <= i < nodes for i in chosen)
    assert 0 in chosen


def test_slurm_identity() -> None:
    env = {
        "SLURM_JOB_ID": "4242",
        "SLURM_NODELIST": "node[01-04,07]",
        "SLURM_NNODES": "5",
        "SLURM_PROCID": "9",
        "SLURM_LOCALID": "1",
        "SLURM_NTASKS": "10",
        "SLURM_NTASKS_PER_NODE": "2(x5)",
    }
    job = job_identity(env, host="node07.cluster.local")
    assert (job.job_id, job.node_count, job.node_index) == ("4242", 5, 4)  # found in the list
    assert (job.rank, job.local_rank, job.world_size, job.local_world_size) == (9, 1, 10, 2)
    assert job.nodes[:2] == ("node01", "node02") and job.multi_node
    assert job_identity({**env, "SLURM_NODEID": "3"}, host="elsewhere").node_index == 3


def test_torchrun_identity_without_slurm() -> None:
    env = {"RANK": "13", "LOCAL_RANK": "5", "WORLD_SIZE": "32", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "n0"}
    job = job_identity(env, host="n1")
    assert (job.node_count, job.node_index, job.master_addr) == (4, 1, "n0")
    assert job_identity({}, host="laptop").node_count == 1


def test_a_rank_without_a_world_size_is_one_node_not_an_error() -> None:
    job = job_identity({"RANK": "3", "LOCAL_RANK": "1"}, host="x")
    assert (job.rank, job.local_rank, job.node_count, job.node_index) == (3, 1, 1, 0)


def test_torchrun_names_win_over_slurm() -> None:
    env = {"SLURM_PROCID": "1", "RANK": "7", "SLURM_NNODES": "2", "SLURM_NODEID": "1"}
    job = job_identity(env, host="x")
    assert job.rank == 7 and job.node_index == 1


@pytest.mark.parametrize(
    "env",
    [{"RANK": "one"}, {"SLURM_NNODES": "2", "SLURM_NODEID": "2"}, {"SLURM_NODELIST": "n[1-"}],
)
def test_bad_variables_are_config_errors(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        job_identity(env, host="x")


def test_sample_nodes_from_flag_or_environment() -> None:
    assert sample_nodes_from({}) is None
    assert sample_nodes_from({"WATTLOG_SAMPLE_NODES": "4"}) == 4
    assert sample_nodes_from({"WATTLOG_SAMPLE_NODES": "4"}, given=2) == 2
    for bad in ("0", "-1", "x"):
        with pytest.raises(ConfigError):
            sample_nodes_from({"WATTLOG_SAMPLE_NODES": bad})
    job = job_identity({"SLURM_NNODES": "16", "SLURM_NODEID": "4"}, host="x")
    assert job.measured(4) and not job.measured(3) and job.measured(None)


def test_importing_the_environment_parser_loads_no_sampler_sensor_or_psutil() -> None:
    """wattlog.telemetry.job parses SLURM's environment: the package around it must not load the rest."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import wattlog.telemetry.job"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    loaded = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    assert "wattlog.telemetry.job" in loaded
    heavy = [
        name
        for name in loaded
        if name.split(".")[0] == "psutil"
        or name.startswith(
            ("wattlog.telemetry.sensors", "wattlog.telemetry.sampler", "wattlog.telemetry.integrator")
        )
    ]
    assert heavy == []
