"""Market-based Scope 2 beside location-based: instruments matched to a run's energy, annually or hourly.

Location-based CO2 is the grid's intensity x energy
(:class:`wattlog.accounting.publishing.footprint.CarbonPath`).
Market-based CO2 (GHG Protocol Scope 2 Guidance, 2015) gives the energy an instrument covers
the instrument's factor and the rest the residual mix. Two ways to match:

- ``annual`` (the Guidance today): an instrument covers consumption in its vintage year, whatever
  the hour;
- ``hourly`` (the revision under way): an instrument covers only the hours it was generated in,
  its MWh spread evenly over them; a surplus in one hour does not cover another, and a
  whole-year certificate covers nothing.

Energy is facility energy (IT x PUE): what the site drew from the grid. Instruments are applied
cleanest first, and an :class:`Allocation` shared by several runs uses each MWh once; with the
uses the ledger recorded (:mod:`wattlog.accounting.carbon.instruments`), once across calls too.
Vintage: annual matching applies an instrument to consumption in its vintage year only, and an
instrument's hours must lie in its vintage (:class:`~wattlog.accounting.carbon.market.Instrument`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from wattlog.accounting.carbon.market import Instrument, Market
from wattlog.accounting.ranges import Quantity, bounds
from wattlog.errors import ConfigError


class Matching(StrEnum):
    """How instruments are matched to consumption."""

    ANNUAL = "annual"
    HOURLY = "hourly"

    @property
    def description(self) -> str:
        """The method as a table names it."""
        if self is Matching.ANNUAL:
            return "market-based, annual matching (GHG Protocol Scope 2 Guidance 2015)"
        return "market-based, hourly matching (as the Scope 2 revision proposes)"


@dataclass(frozen=True, slots=True)
class Use:
    """MWh of one instrument a run used in one matching period.

    Attributes:
        instrument: The instrument's id.
        period: The year (annual matching) or the hour start, Unix s (hourly).
        run: The run's name.
        mwh: MWh used.
    """

    instrument: str
    period: int
    run: str
    mwh: float


@dataclass(frozen=True, slots=True)
class MarketFigure:
    """One run's market-based emissions.

    Attributes:
        method: How instruments were matched.
        co2_t: Tonnes CO2e, market-based.
        facility_mwh: The energy drawn from the grid (IT x PUE), MWh.
        covered_mwh: The part instruments covered.
        used_mwh: MWh taken from each instrument, by id.
        residual_kg_per_kwh: The residual mix applied to the rest.
        uses: MWh taken per (instrument id, period: year or hour start), as the ledger records them.
    """

    method: Matching
    co2_t: float
    facility_mwh: float
    covered_mwh: float
    used_mwh: Mapping[str, float]
    residual_kg_per_kwh: float
    uses: Mapping[tuple[str, int], float] = field(default_factory=dict)


@dataclass(slots=True)
class Allocation:
    """A site's instruments and who used how much of each, shared by the runs they are applied to.

    Each run matches against what every other run left: uses recorded earlier (:meth:`record`,
    from the ledger) and those of runs applied before. Applying a run again replaces its own
    uses, so a run accounted twice never takes a second share.

    Attributes:
        market: The site's instruments and residual mix.
        method: Annual or hourly matching.
    """

    market: Market
    method: Matching
    _uses: dict[tuple[str, int], dict[str, float]] = field(default_factory=dict, init=False)
    _anonymous: int = field(default=0, init=False)

    def record(self, uses: Iterable[Use]) -> None:
        """Take uses recorded earlier (the ledger's) as spent by their runs."""
        for use in uses:
            self._uses.setdefault((use.instrument, use.period), {})[use.run] = use.mwh

    def apply(
        self, it_by_hour_mwh: Mapping[int, float], pue: Quantity, run: str | None = None
    ) -> MarketFigure:
        """Match a run's energy (IT MWh per hour start) to what the other runs left; its uses are kept.

        Args:
            it_by_hour_mwh: The run's IT energy per hour start, MWh.
            pue: The site's PUE (one value).
            run: The run's name (None: a run of its own, never the same as another).

        Raises:
            ConfigError: A PUE given as a range (market-based needs one facility energy).
        """
        factor, high = bounds(pue)
        if factor != high:
            raise ConfigError("market-based Scope 2 needs one PUE for the site, not a range")
        if run is None:
            self._anonymous += 1
            run = f"#{self._anonymous}"
        for by_run in self._uses.values():
            by_run.pop(run, None)  # applied again: its earlier uses are replaced, not added to
        facility = {h: e * factor for h, e in it_by_hour_mwh.items()}
        uses: dict[tuple[str, int], float] = {}
        co2_t = 0.0
        for key, demand in self._demands(facility).items():
            for instrument in self._candidates(key):
                slot = (instrument.id, key)
                take = min(demand, self._left(instrument, key))
                if take <= 0:
                    continue
                self._uses.setdefault(slot, {})[run] = take
                uses[slot] = take
                demand -= take
                co2_t += take * instrument.kg_per_kwh  # MWh x kg/kWh = t
        used: dict[str, float] = {}
        for (instrument_id, _), mwh in uses.items():
            used[instrument_id] = used.get(instrument_id, 0.0) + mwh
        total, covered = sum(facility.values()), sum(uses.values())
        co2_t += (total - covered) * self.market.residual_mix_kg_per_kwh
        residual = self.market.residual_mix_kg_per_kwh
        return MarketFigure(self.method, co2_t, total, covered, used, residual, uses)

    def _left(self, instrument: Instrument, key: int) -> float:
        """What the instrument still offers period `key` after every run's use of it."""
        spent = sum(self._uses.get((instrument.id, key), {}).values())
        return max(self._supply(instrument) - spent, 0.0)

    def _demands(self, facility: Mapping[int, float]) -> dict[int, float]:
        """Demand per matching period: per year (annual) or per hour (hourly)."""
        if self.method is Matching.HOURLY:
            return dict(sorted(facility.items()))
        by_year: dict[int, float] = {}
        for hour, mwh in facility.items():
            year = datetime.fromtimestamp(hour, UTC).year
            by_year[year] = by_year.get(year, 0.0) + mwh
        return dict(sorted(by_year.items()))

    def _candidates(self, key: int) -> list[Instrument]:
        """The instruments that may cover period `key`, cleanest first."""
        if self.method is Matching.HOURLY:
            fits = [i for i in self.market.instruments if i.hours is not None and key in i.hours]
        else:
            fits = [i for i in self.market.instruments if i.vintage == key]
        return sorted(fits, key=lambda i: (i.kg_per_kwh, i.id))

    def _supply(self, instrument: Instrument) -> float:
        """What one instrument offers one period: all of it (annual), its share of one hour (hourly)."""
        hours = instrument.hours
        if self.method is Matching.HOURLY and hours is not None:
            return instrument.mwh / len(hours)
        return instrument.mwh

    def unused(self) -> dict[str, float]:
        """MWh of each instrument not used so far; under hourly matching a whole-year one is all unused."""
        left: dict[str, float] = {}
        for instrument in self.market.instruments:
            hours = instrument.hours
            if self.method is Matching.HOURLY:
                periods: list[int] = list(hours) if hours is not None else []
            else:
                periods = [instrument.vintage]
            if not periods:
                left[instrument.id] = instrument.mwh
                continue
            left[instrument.id] = sum(self._left(instrument, p) for p in periods)
        return left
