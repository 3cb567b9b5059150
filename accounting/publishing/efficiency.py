"""The units people now publish beside Table 19: J per token, J per 10^18 FLOP, average power / TDP.

SCI-for-AI's draft takes a functional unit (a token, 10^18 FLOP); model cards that assume
TDP x GPU-hours overstate energy where boards draw less (OLMo 3 measured 621-649 W on 700 W
boards). From the ledger, per run::

    j_per_token      = job energy (J) / every rank's tokens            (the job's, as job_speed)
    j_per_eflop      = job energy (J) / (tokens x FLOPs per token / 1e18)
    avg_power_w      = GPU energy (J) / (GPUs x the run's span - their gaps)  (mean per GPU)
    power_of_tdp     = avg_power_w / the device model's power limit     (devices.toml, with its source)

:func:`wattlog.accounting.publishing.job_speed.run_efficiency` computes them. Each is None ("-") when a
part is unknown: no tokens reported, no FLOPs per token, no GPU measured, or no device
model recorded (an assumed board's TDP would be another device's number).
"""

from __future__ import annotations

from dataclasses import dataclass

from wattlog.accounting.units import readable, sig3

EFLOP = 1e18
"""10^18 FLOP: SCI-for-AI's compute unit."""

MISSING = "-"


@dataclass(frozen=True, slots=True)
class Efficiency:
    """A run's energy per unit of work and its power against the board's limit; None = unknown.

    Attributes:
        j_per_token: Joules per token of the whole job.
        j_per_eflop: Joules per 10^18 FLOP (model FLOPs: tokens x FLOPs per token).
        avg_power_w: Mean measured power per GPU, W.
        tdp_w: The recorded device model's power limit, W.
        tdp_source: Where that limit comes from.
        device_model: The device model it belongs to.
    """

    j_per_token: float | None = None
    j_per_eflop: float | None = None
    avg_power_w: float | None = None
    tdp_w: float | None = None
    tdp_source: str = ""
    device_model: str = ""

    @property
    def power_of_tdp(self) -> float | None:
        """Mean power / power limit (0.9 = 90 %); None when either is unknown."""
        if self.avg_power_w is None or not self.tdp_w:
            return None
        return self.avg_power_w / self.tdp_w

    @property
    def known(self) -> bool:
        """Whether any figure is known."""
        return any(v is not None for v in (self.j_per_token, self.j_per_eflop, self.avg_power_w))

    def fields(self) -> dict[str, float | str | None]:
        """The figures for the exports (JSON fields, CSV columns): None where unknown."""
        return {
            "j_per_token": self.j_per_token,
            "j_per_1e18_flop": self.j_per_eflop,
            "avg_power_w_per_gpu": self.avg_power_w,
            "tdp_w": self.tdp_w,
            "power_of_tdp": self.power_of_tdp,
        }

    def line(self) -> str:
        """One line for a table's notes or the report; "-" where unknown."""
        # in the energy columns' units: "614 MWh", not "2,210,000,000,000" J
        per_token = MISSING if self.j_per_token is None else readable(self.j_per_token, "energy")
        per_eflop = MISSING if self.j_per_eflop is None else readable(self.j_per_eflop, "energy")
        head = f"Energy per token {per_token}, per 10^18 FLOP {per_eflop}, average GPU power"
        if self.avg_power_w is None:  # no GPU measured: no power, so nothing to set against a TDP
            return f"{head} {MISSING}"
        ratio = self.power_of_tdp
        tdp = (
            f"{100 * ratio:.0f} % of TDP {self.tdp_w:g} W ({self.device_model}; {self.tdp_source})"
            if ratio is not None and self.tdp_w is not None
            else f"{MISSING} of TDP (no TDP for this board)"
        )
        return f"{head} {sig3(self.avg_power_w)} W = {tdp}"
