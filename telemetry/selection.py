"""Which accelerators belong to this job: a vendor's visibility rules, else all of them.

Measuring every GPU of a shared node inflates a job's footprint (CodeCarbon
issue 567), so the sensors measure only the GPUs selected here unless the
whole node is asked for. Pure functions: the environment is passed in.

Each vendor backend names its rules (`Visibility`), most specific first, and
the first whose variable is set decides: NVIDIA's are CUDA_VISIBLE_DEVICES
(`VisibleDevices`) then SLURM's GPU binding (`SlurmGpus`); another runtime's
list of visible devices (HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES) is another
`VisibleDevices` of that backend. `job_selection` without rules applies NVIDIA's.

CUDA's rules for CUDA_VISIBLE_DEVICES (CUDA C Programming Guide, "CUDA
Environment Variables"): a comma-separated list of indices or UUIDs
(``GPU-8932f937-...``, abbreviated to any unique prefix, and ``MIG-...`` for
MIG instances); the list stops at the first invalid entry ("0,2,-1,1" shows 0
and 2); an empty value hides every GPU.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from wattlog.errors import ConfigError

# SLURM's variables, most specific first: the step's GPUs, the job's, then the gres plugin's ordinal list.
_SLURM_VARS = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "GPU_DEVICE_ORDINAL")
# Slurm writes this when a job step was given no GPU device files.
_NO_DEVICES = "NoDevFiles"
# A UUID written without its "GPU-" prefix: at least the first 8-hex-digit group.
_HEX_UUID = re.compile(r"^[0-9a-f]{8}[0-9a-f-]*$")
_RANGE = re.compile(r"^(\d+)-(\d+)$")


@dataclass(frozen=True, slots=True)
class GpuSelection:
    """The GPUs this job may measure, and where that choice came from.

    Attributes:
        whole_node: Every GPU of the node, whatever the environment says.
        indices: Selected NVML indices, or None when not selecting by index.
        uuids: Selected UUIDs (lower-case, ``GPU-``/``MIG-`` prefixed, possibly
            abbreviated), or None when not selecting by UUID.
        origin: Where the choice came from, e.g. "CUDA_VISIBLE_DEVICES=0,2".
        notes: Caveats about the match (index order, MIG), one line each.
    """

    whole_node: bool
    indices: frozenset[int] | None
    uuids: frozenset[str] | None
    origin: str
    notes: tuple[str, ...] = field(default=())

    @property
    def selects_all(self) -> bool:
        """Whether every GPU the driver shows is included."""
        return self.whole_node or (self.indices is None and self.uuids is None)

    def includes(self, index: int, uuid: str, mig_uuids: Iterable[str] = ()) -> bool:
        """Whether the GPU with NVML `index` and `uuid` belongs to the selection.

        A UUID entry matches the GPU's UUID exactly or as a prefix (CUDA accepts
        any unique prefix; an ambiguous one would hide the GPU from CUDA too, which
        this per-device check cannot see). A MIG instance has no power sensor of
        its own, so a MIG entry selects its whole parent GPU: the old form
        ``MIG-GPU-<uuid>/gi/ci`` names the parent; the new ``MIG-<uuid>`` form
        matches when the caller passes the GPU's MIG instance UUIDs.

        Args:
            index: The GPU's NVML index.
            uuid: The GPU's UUID as NVML reports it ("GPU-...").
            mig_uuids: UUIDs of the GPU's MIG instances, if any.

        Returns:
            True if the GPU is measured.
        """
        if self.selects_all:
            return True
        if self.indices is not None and index in self.indices:
            return True
        if not self.uuids:
            return False
        names = [_normalise(uuid), *(_normalise(mig) for mig in mig_uuids)]
        return any(name.startswith(entry) for entry in self.uuids for name in names)

    def describe(self) -> str:
        """One line for tables and `wattlog sensors`, saying which GPUs are measured and why."""
        if self.whole_node:
            return f"measuring every GPU of the node: {self.origin}"
        if self.selects_all:
            return f"measuring {self.origin}"
        if not self.indices and not self.uuids:
            return f"measuring no GPUs: {self.origin}"
        return f"measuring GPUs of this job: {self.origin}"


class Visibility(Protocol):
    """One way a job is told which of the node's accelerators it has (a variable, an allocation)."""

    def select(self, environ: Mapping[str, str]) -> GpuSelection | None:
        """The selection this rule makes from `environ`; None if its variable is not set.

        Raises:
            ConfigError: The variable is set but cannot be read without guessing.
        """
        ...


@dataclass(frozen=True, slots=True)
class VisibleDevices:
    """A runtime's list of visible devices, read by CUDA's rules (indices or UUIDs, see the module doc).

    Attributes:
        variable: The variable, e.g. "CUDA_VISIBLE_DEVICES".
        order_variable: The variable that makes the runtime number devices in PCI bus order
            (its value `pci_order`), or "" if the runtime always does.
        pci_order: The value of `order_variable` that means PCI bus order.
        runtime: The runtime that reads the variable, as notes name it.
        driver: The library whose numbering the sensor matches indices in, as notes name it.
    """

    variable: str = "CUDA_VISIBLE_DEVICES"
    order_variable: str = "CUDA_DEVICE_ORDER"
    pci_order: str = "PCI_BUS_ID"
    runtime: str = "CUDA"
    driver: str = "NVML"

    def select(self, environ: Mapping[str, str]) -> GpuSelection | None:
        """The devices listed in `variable`; None if it is not set."""
        value = environ.get(self.variable)
        if value is None:
            return None
        in_pci_order = not self.order_variable or environ.get(self.order_variable, "") == self.pci_order
        return _from_list(self, value, in_pci_order)


@dataclass(frozen=True, slots=True)
class SlurmGpus:
    """SLURM's GPU binding: the step's GPUs, the job's, then the gres plugin's ordinal list."""

    variables: tuple[str, ...] = _SLURM_VARS

    def select(self, environ: Mapping[str, str]) -> GpuSelection | None:
        """The node indices SLURM gave the job; None if none of its variables is set."""
        for name in self.variables:
            value = environ.get(name)
            if value is not None:
                return _from_slurm(name, value)
        return None


NVIDIA_VISIBILITY: tuple[Visibility, ...] = (VisibleDevices(), SlurmGpus())
"""NVIDIA's rules: CUDA_VISIBLE_DEVICES, else SLURM's GPU binding (the NVML backend's visibility)."""

_AMD_DRIVER = "amdsmi (HIP order, from amdsmi_get_gpu_enumeration_info)"
AMD_VISIBILITY: tuple[Visibility, ...] = (
    VisibleDevices("HIP_VISIBLE_DEVICES", order_variable="", runtime="HIP", driver=_AMD_DRIVER),
    VisibleDevices("ROCR_VISIBLE_DEVICES", order_variable="", runtime="ROCr", driver=_AMD_DRIVER),
    SlurmGpus(),
)
"""AMD's rules: HIP_VISIBLE_DEVICES, then ROCR_VISIBLE_DEVICES (what SLURM sets for AMD gres), then
SLURM's binding. HIP numbers devices in its own order, which the AMD backend maps to amdsmi's handles."""

GAUDI_VISIBILITY: tuple[Visibility, ...] = (
    VisibleDevices("HABANA_VISIBLE_MODULES", order_variable="", runtime="the Habana runtime", driver="HLML"),
    SlurmGpus(),
)
"""Intel Gaudi's rules: HABANA_VISIBLE_MODULES (module ids, as hlmlDeviceGetModuleID numbers them), then
SLURM's binding."""


def job_selection(
    environ: Mapping[str, str] = os.environ,
    *,
    whole_node: bool = False,
    rules: Sequence[Visibility] = NVIDIA_VISIBILITY,
) -> GpuSelection:
    """Select the job's GPUs from its environment.

    Args:
        environ: The process environment (injected for tests).
        whole_node: Measure every GPU of the node instead (one agent per node).
        rules: The vendor's visibility rules, most specific first (default: NVIDIA's).

    Returns:
        The selection, with its origin for display.

    Raises:
        ConfigError: A SLURM GPU variable is malformed (guessing would measure the wrong GPUs).
    """
    if whole_node:
        return GpuSelection(True, None, None, "whole node (--whole-node)")
    for rule in rules:
        selection = rule.select(environ)
        if selection is not None:
            return selection
    names = " or ".join(_variables(rules)) or "visibility rule"
    return GpuSelection(False, None, None, f"all visible GPUs (no {names})")


def _variables(rules: Sequence[Visibility]) -> list[str]:
    """How the rules are named in the origin of a selection none of them made."""
    return ["SLURM allocation" if isinstance(r, SlurmGpus) else getattr(r, "variable", "") for r in rules]


def _normalise(uuid: str) -> str:
    """Lower-case `uuid` with its GPU-/MIG- prefix, adding GPU- to a bare hex UUID."""
    lowered = uuid.strip().lower()
    return lowered if lowered.startswith(("gpu-", "mig-")) else f"gpu-{lowered}"


def _from_list(rule: VisibleDevices, value: str, in_pci_order: bool) -> GpuSelection:
    """The selection `value` of `rule`'s variable makes (CUDA's rules; see the module docstring)."""
    origin = f"{rule.variable}={value}"
    if value.strip() in ("", _NO_DEVICES):
        return GpuSelection(False, frozenset(), frozenset(), origin)
    indices: set[int] = set()
    uuids: set[str] = set()
    notes: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if entry.isdigit():
            indices.add(int(entry))
        elif entry.lower().startswith(("gpu-", "mig-")) or _HEX_UUID.match(entry.lower()):
            uuids.add(_mig_parent(_normalise(entry)))
        else:  # the runtime ignores this entry and everything after it
            notes.append(f"{rule.variable} stops at invalid entry {entry!r}, as {rule.runtime} does")
            break
    if indices and not in_pci_order:
        notes.append(
            f"indices are matched in {rule.driver}'s PCI bus order; {rule.runtime} numbers fastest-first "
            f"unless {rule.order_variable}={rule.pci_order}: on a node of mixed GPUs set it, or list UUIDs"
        )
    if any(entry.startswith("mig-") for entry in uuids):
        notes.append("MIG instances have no power sensor: their whole parent GPU is measured")
    return GpuSelection(False, frozenset(indices), frozenset(uuids), origin, tuple(notes))


def _mig_parent(entry: str) -> str:
    """``mig-gpu-<uuid>/gi/ci`` (pre-R470 form) names its parent GPU; other entries stay."""
    if entry.startswith("mig-gpu-"):
        return entry.removeprefix("mig-").split("/", 1)[0]
    return entry


def _from_slurm(name: str, value: str) -> GpuSelection:
    origin = f"{name}={value}"
    if value.strip() in ("", _NO_DEVICES):
        return GpuSelection(False, frozenset(), None, origin)
    indices: set[int] = set()
    for raw in value.split(","):
        entry = raw.strip()
        span = _RANGE.match(entry)
        if entry.isdigit():
            indices.add(int(entry))
        elif span and int(span[1]) <= int(span[2]):
            indices.update(range(int(span[1]), int(span[2]) + 1))
        else:
            raise ConfigError(
                f"{name}={value!r}: {entry!r} is not a GPU index; set CUDA_VISIBLE_DEVICES "
                "or pass --whole-node"
            )
    note = (
        f"{name} holds the node's physical indices; if the job's devices are constrained by "
        "cgroups, NVML renumbers them: set CUDA_VISIBLE_DEVICES to UUIDs to be sure"
    )
    return GpuSelection(False, frozenset(indices), None, origin, (note,))
