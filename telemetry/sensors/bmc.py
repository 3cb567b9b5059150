"""Where the node's BMC is and how to reach it, read from the environment only; its meters' profiles.

A BMC (baseboard management controller) reports the node's input power, the
node boundary: GPUs, CPUs, DRAM, fans, disks, NICs and PSU losses together.
wattlog reads it over Redfish (`redfish_node`) or IPMI DCMI (`dcmi`). Where it
is and the credentials come from the environment, never from arguments, and
never appear in a note, a log line or a repr:

    WATTLOG_REDFISH_URL       e.g. https://10.0.0.5 (the BMC's Redfish service)
    WATTLOG_REDFISH_USER      Redfish user
    WATTLOG_REDFISH_PASSWORD  Redfish password
    WATTLOG_DCMI              "local" (the in-band BMC, /dev/ipmi0) or the BMC's host name for lanplus
    WATTLOG_IPMI_USER         IPMI user (lanplus only); the password is ipmitool's own IPMI_PASSWORD,
                              which `ipmitool -E` reads from the environment
    WATTLOG_IPMITOOL          the ipmitool executable (default: ipmitool on the PATH)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from wattlog.errors import ConfigError
from wattlog.telemetry.sensors.profiles import load_table
from wattlog.telemetry.types import SensorProfile

NODE_PROFILES = "node.toml"
"""The data file of the BMC meters' profiles (beside this module)."""
_NUM = r"(\d+(?:\.\d+)?)"
_DURATION = re.compile(rf"^P(?:{_NUM}D)?(?:T(?:{_NUM}H)?(?:{_NUM}M)?(?:{_NUM}S)?)?$")


@dataclass(frozen=True)
class BmcConfig:
    """How to reach this node's BMC (built by `from_environ`; secrets kept out of repr).

    Attributes:
        redfish_url: The Redfish service's base URL ("" = do not probe Redfish).
        redfish_user: Redfish user name.
        redfish_password: Redfish password (never shown).
        dcmi: "local" for the in-band BMC, a host name for lanplus, "" = do not probe DCMI.
        ipmi_user: IPMI user for lanplus.
        ipmitool: The ipmitool executable (WATTLOG_IPMITOOL; a stand-in where no BMC exists).
        timeout_s: How long one BMC request may take, seconds.
    """

    redfish_url: str = ""
    redfish_user: str = ""
    redfish_password: str = field(default="", repr=False)
    dcmi: str = ""
    ipmi_user: str = ""
    ipmitool: str = "ipmitool"
    timeout_s: float = 5.0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> BmcConfig:
        """The BMC settings the environment gives (all empty: no BMC is probed)."""
        return cls(
            redfish_url=environ.get("WATTLOG_REDFISH_URL", "").rstrip("/"),
            redfish_user=environ.get("WATTLOG_REDFISH_USER", ""),
            redfish_password=environ.get("WATTLOG_REDFISH_PASSWORD", ""),
            dcmi=environ.get("WATTLOG_DCMI", ""),
            ipmi_user=environ.get("WATTLOG_IPMI_USER", ""),
            ipmitool=environ.get("WATTLOG_IPMITOOL", "ipmitool"),
        )


def node_profile(
    family: str, *, accuracy_pct: float | None = None, period_s: float | None = None
) -> SensorProfile:
    """The profile of a BMC meter (`family` in node.toml), with what the BMC says of itself.

    Args:
        family: "Redfish" or "DCMI" (a name node.toml lists).
        accuracy_pct: The meter's own stated accuracy (Redfish Sensor `Accuracy`), percent.
        period_s: The BMC's stated update period (SensingInterval, DCMI sampling period), seconds.
    """
    profile = load_table(NODE_PROFILES).for_board(family)
    sources = dict(profile.sources)
    if accuracy_pct is not None and accuracy_pct > 0:
        profile = replace(profile, gain_low=-accuracy_pct / 100, gain_high=accuracy_pct / 100)
        sources["gain_low"] = sources["gain_high"] = "the BMC's own Accuracy property (DMTF Sensor schema)"
    if period_s is not None and period_s > 0:
        profile = replace(profile, publication_period_s=period_s)
        sources["publication_period_s"] = "the BMC's own update period (SensingInterval, DCMI period)"
    return replace(profile, sources=tuple(sorted(sources.items())))


def iso_duration_s(text: str | None) -> float | None:
    """Seconds of an ISO 8601 duration as Redfish writes them ("PT1S", "P0DT0H0M5S"); None if not one."""
    match = _DURATION.match(text or "")
    if not match or not any(match.groups()):
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


def check_config(config: BmcConfig) -> BmcConfig:
    """`config`, if it can be used.

    Raises:
        ConfigError: A Redfish URL that is not http(s).
    """
    if config.redfish_url and not config.redfish_url.startswith(("http://", "https://")):
        url = config.redfish_url
        raise ConfigError(f"WATTLOG_REDFISH_URL must start with http:// or https://, got {url!r}")
    return config
