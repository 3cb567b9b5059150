"""Who this process is within a multi-node job, from the launcher's environment (SLURM, torchrun).

A run spans nodes: one agent per node measures it, and every agent must agree
on the job, the node's place in it and how many nodes there are, so that the
ledger can say "8 of 64 nodes measured". SLURM and torchrun already say so::

    SLURM_JOB_ID=4242  SLURM_NODELIST=node[01-04,07]  SLURM_NNODES=5  SLURM_NODEID=2  SLURM_PROCID=9
    RANK=9  LOCAL_RANK=1  WORLD_SIZE=40  LOCAL_WORLD_SIZE=8  MASTER_ADDR=node01

:func:`job_identity` reads them (torchrun's names win where both are set, as
they describe the training processes; SLURM's fill the rest), and
:func:`expand_nodelist` / :func:`compress_nodelist` handle SLURM's hostlist
syntax. Pure functions of the mapping they are given: nothing here reads the
process environment unless asked, opens files or talks to the network.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wattlog.errors import ConfigError

ENV_SAMPLE_NODES = "WATTLOG_SAMPLE_NODES"
"""How many of the job's nodes are measured (the others only report steps); unset = all."""

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")
_LEADING_INT = re.compile(r"^\s*(\d+)")


@dataclass(frozen=True, slots=True)
class JobIdentity:
    """This process's place in its job.

    Attributes:
        host: This node's name (the `host` label and ledger host).
        job_id: The scheduler's job id (SLURM_JOB_ID), None outside a scheduler.
        nodes: The job's nodes, expanded from SLURM_NODELIST (empty when unknown).
        node_count: Nodes in the job (SLURM_NNODES, the node list, or WORLD_SIZE / LOCAL_WORLD_SIZE).
        node_index: This node's index in 0..node_count-1.
        rank: Global rank of this process.
        local_rank: Rank within the node.
        world_size: Processes in the job.
        local_world_size: Processes on this node.
        master_addr: torchrun's rendezvous host, if any.
    """

    host: str
    job_id: str | None = None
    nodes: tuple[str, ...] = ()
    node_count: int = 1
    node_index: int = 0
    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    master_addr: str | None = None

    def __post_init__(self) -> None:
        if self.node_count < 1 or not 0 <= self.node_index < self.node_count:
            raise ConfigError(
                f"node index {self.node_index} is outside the job's {self.node_count} node(s): "
                "check SLURM_NODEID / SLURM_NNODES (or GROUP_RANK / WORLD_SIZE / LOCAL_WORLD_SIZE)"
            )

    @property
    def multi_node(self) -> bool:
        """Whether the job spans more than one node."""
        return self.node_count > 1

    def measured(self, sample_nodes: int | None) -> bool:
        """Whether this node is one of the `sample_nodes` measured ones (None: every node is)."""
        return self.node_index in sampled_nodes(self.node_count, sample_nodes)


def sampled_nodes(node_count: int, sample_nodes: int | None) -> frozenset[int]:
    """Indices of the nodes measured when `sample_nodes` of `node_count` are: spread evenly over the job.

    Evenly spread rather than the first K, so that nodes of one rack or one
    pipeline stage do not stand for all of them.

    >>> sorted(sampled_nodes(16, 4))
    [0, 4, 8, 12]

    Raises:
        ConfigError: `sample_nodes` is below 1.
    """
    if sample_nodes is None or sample_nodes >= node_count:
        return frozenset(range(node_count))
    if sample_nodes < 1:
        raise ConfigError(f"--sample-nodes must be >= 1 (or unset to measure every node), got {sample_nodes}")
    return frozenset(i * node_count // sample_nodes for i in range(sample_nodes))


def sample_nodes_from(environ: Mapping[str, str], given: int | None = None) -> int | None:
    """The number of nodes to measure: `given`, else $WATTLOG_SAMPLE_NODES, else None (all).

    Raises:
        ConfigError: The variable is not a positive integer.
    """
    if given is not None:
        if given < 1:
            raise ConfigError(f"--sample-nodes must be >= 1, got {given}")
        return given
    text = environ.get(ENV_SAMPLE_NODES, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"${ENV_SAMPLE_NODES} must be a positive integer, got {text!r}")
    return int(text)


def job_identity(environ: Mapping[str, str], host: str | None = None) -> JobIdentity:
    """Read the job's identity from SLURM and torchrun variables.

    Args:
        environ: The environment (pass os.environ).
        host: This node's name; None = socket.gethostname().

    Raises:
        ConfigError: A variable is malformed (not an integer, a bad node list, an index out of range).
    """
    name = host or socket.gethostname()
    nodes = tuple(expand_nodelist(environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST", "")))
    rank = _int(environ, "RANK", "SLURM_PROCID", default=0)
    local_rank = _int(environ, "LOCAL_RANK", "SLURM_LOCALID", default=0)
    world_size = _int(environ, "WORLD_SIZE", "SLURM_NTASKS", default=1)
    local_world_size = _int(environ, "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", default=1, prefix=True)
    derived = max(1, world_size // max(1, local_world_size))
    node_count = _int(environ, "SLURM_NNODES", "SLURM_JOB_NUM_NODES", default=len(nodes) or derived)
    short = name.split(".")[0]
    position = nodes.index(short) if short in nodes else (nodes.index(name) if name in nodes else None)
    fallback = position if position is not None else rank // max(1, local_world_size)
    if fallback >= node_count:  # a guess from RANK without WORLD_SIZE: the job's shape is unknown
        fallback = 0
    node_index = _int(environ, "SLURM_NODEID", "GROUP_RANK", default=fallback)
    return JobIdentity(
        host=name,
        job_id=environ.get("SLURM_JOB_ID") or environ.get("TORCHELASTIC_RUN_ID") or None,
        nodes=nodes,
        node_count=node_count,
        node_index=node_index,
        rank=rank,
        local_rank=local_rank,
        world_size=world_size,
        local_world_size=local_world_size,
        master_addr=environ.get("MASTER_ADDR") or None,
    )


def expand_nodelist(text: str) -> list[str]:
    """Expand a SLURM host list: ``node[01-04,07],gpu-a[1-2]-x`` -> node01 .. node04, node07, gpu-a1-x, ...

    Zero padding follows the start of each range (``[08-10]`` -> 08, 09, 10); several
    bracket groups in one name multiply out, left to right.

    Raises:
        ConfigError: Unbalanced brackets, an empty item, or a range that runs backwards.
    """
    names: list[str] = []
    for item in _split_top_level(text.strip()):
        names.extend(_expand_item(item))
    return names


def compress_nodelist(hosts: Sequence[str]) -> str:
    """The SLURM host list of `hosts`, order kept: ``node01,node02,node03,node07`` -> ``node[01-03,07]``.

    Neighbouring names with the same prefix and digit count share one bracket.
    """
    parts: list[str] = []
    group: list[tuple[str, str]] = []  # (prefix, digits) of the current bracket

    def close() -> None:
        if len(group) == 1:
            parts.append(group[0][0] + group[0][1])
        elif group:
            parts.append(f"{group[0][0]}[{_ranges([d for _, d in group])}]")
        group.clear()

    for host in hosts:
        match = _TRAILING_DIGITS.match(host)
        if match is None or not match.group(1):
            close()
            parts.append(host)
            continue
        prefix, digits = match.groups()
        if group and (group[0][0] != prefix or len(group[0][1]) != len(digits)):
            close()
        group.append((prefix, digits))
    close()
    return ",".join(parts)


def _ranges(numbers: list[str]) -> str:
    """``["01", "02", "03", "07"]`` -> ``"01-03,07"`` (runs of +1 in the given order)."""
    runs: list[list[str]] = []
    for digits in numbers:
        if runs and int(digits) == int(runs[-1][-1]) + 1:
            runs[-1].append(digits)
        else:
            runs.append([digits])
    return ",".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _split_top_level(text: str) -> list[str]:
    if not text:
        return []
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise ConfigError(f"nested brackets in node list {text!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ConfigError(f"unbalanced ']' in node list {text!r}")
        elif char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ConfigError(f"unbalanced '[' in node list {text!r}")
    items.append(text[start:])
    if any(not item.strip() for item in items):
        raise ConfigError(f"empty name in node list {text!r}")
    return [item.strip() for item in items]


def _expand_item(item: str) -> list[str]:
    open_at = item.find("[")
    if open_at < 0:
        return [item]
    close_at = item.index("]", open_at)
    head, body, tail = item[:open_at], item[open_at + 1 : close_at], item[close_at + 1 :]
    values: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise ConfigError(f"bad range {part!r} in node list item {item!r}: use e.g. node[01-04,07]")
        first, last = match.group(1), match.group(2) or match.group(1)
        if int(last) < int(first):
            raise ConfigError(f"range {part!r} in node list item {item!r} runs backwards")
        values.extend(str(n).zfill(len(first)) for n in range(int(first), int(last) + 1))
    return [head + value + rest for value in values for rest in _expand_item(tail)]


def _int(environ: Mapping[str, str], *names: str, default: int, prefix: bool = False) -> int:
    """The first of `names` set in `environ`, as an integer (SLURM's "8(x2)" forms read 8 with prefix)."""
    for name in names:
        text = environ.get(name, "").strip()
        if not text:
            continue
        match = _LEADING_INT.match(text) if prefix else None
        if match is not None:
            return int(match.group(1))
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"${name} must be an integer, got {text!r}") from None
    return default
