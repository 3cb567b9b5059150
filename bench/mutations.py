"""The mutations `python -m bench.mutation` applies: each a one-line change to core logic and the
test files that own that code (the files that should notice).

Twenty in the code the issue names (integrator, uncertainty, the ledger's rollups, revisions,
compaction and spool replay, render, footprint) plus the four that survived on 38e5f82 (issue 38:
`named=True`), so the figure the issue asks for (at least 19 of 20 unnamed killed) reads apart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Mutation:
    """One change: `old` (found exactly once in `path`) becomes `new`; `tests` should fail on it."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    named: bool = False


_INTEGRATOR = ("tests/telemetry/test_integrator.py",)
_BAND = ("tests/telemetry/test_uncertainty.py", "tests/telemetry/test_band_sizes.py")
_RECORDS = ("tests/test_records.py",)
_REVISIONS = ("tests/accounting/test_band_revisions.py", "tests/accounting/test_band_readers.py")
_ROLLUPS = ("tests/accounting/test_float_residue.py", "tests/accounting/test_ledger_store.py")
_COMPACTION = ("tests/faults/test_replay_after_compact.py", "tests/accounting/test_ledger_store.py")
_SPOOL = ("tests/accounting/test_spool_other_ledger.py", "tests/faults/test_ledger_outage.py")
_RENDER = ("tests/accounting/test_render.py",)
_FOOTPRINT = ("tests/accounting/test_footprint.py",)
_TABLE = (
    "tests/accounting/test_efficiency.py",
    "tests/accounting/test_one_band.py",
    "tests/accounting/test_gaps.py",
)

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "trapezoid becomes the last reading x dt", "telemetry/accumulate.py",
        "else 0.5 * (power_w + last_w) * dt", "else power_w * dt", _INTEGRATOR,
    ),
    Mutation(
        "counter wrap accepted up to the whole range", "telemetry/accumulate.py",
        "if wrapped < (range_mj or 0) / 2 and", "if wrapped < (range_mj or 0) and", _INTEGRATOR,
    ),
    Mutation(
        "publications not decorrelated (n_eff = n)", "telemetry/uncertainty.py",
        "n_eff = max(publications / self.correlated_publications, 1.0)", "n_eff = max(publications, 1.0)",
        _BAND,
    ),
    Mutation(
        "the floor counted as sampling error", "telemetry/uncertainty.py",
        "random = max(po - self.floor_rel, 0.0)", "random = po", _BAND,
    ),
    Mutation(
        "a gap no longer widens the band", "telemetry/uncertainty.py",
        "gap_j = x.gap_s * x.p_max_w", "gap_j = 0.0", _BAND,
    ),
    Mutation(
        "a sum's high side adds random parts linearly", "wattlog/records.py",
        "high = high_j - random_high_j + math.sqrt(max(random_high_sq, 0.0))", "high = high_j", _RECORDS,
    ),
    Mutation(
        "a revision shared evenly, not by energy", "wattlog/records.py",
        "share = part_j / total_j if total_j > 0 else 1.0 / len(energy_j)", "share = 1.0 / len(energy_j)",
        _REVISIONS,
    ),
    Mutation(
        "a retried revision stored twice", "accounting/ledger/revisions.py",
        "if (r.host, r.device, r.end_s) not in held:", "if True:", _REVISIONS,
    ),
    Mutation(
        "any negative sampling part clamped, not only a residue", "accounting/ledger/rollups.py",
        "case(((total < 0) & (total >= -tolerance), 0.0), else_=total)",
        "case(((total < 0), 0.0), else_=total)",
        _ROLLUPS,
    ),
    Mutation(
        "compaction folds rows across a hole", "accounting/ledger/compaction.py",
        'if acc is None or row["start_s"] > acc["end_s"] + CONTIGUOUS_S:', "if acc is None:", _COMPACTION,
    ),
    Mutation(
        "a folded row keeps its first row's end", "accounting/ledger/compaction.py",
        'acc["end_s"] = max(acc["end_s"], row["end_s"])', "pass", _COMPACTION,
    ),
    Mutation(
        "a spooled run's start not registered on replay", "accounting/ledger/spool.py",
        "if batch.start is not None and isinstance(key, str) and ledger.find_run(key) is None:",
        "if False:", _SPOOL,
    ),
    Mutation(
        "a range printed by its low end only", "accounting/render.py",
        "return texts[0] if texts[0] == texts[1] else f\"{texts[0]}{RANGE_SEP}{texts[1]}\"",
        "return texts[0]", _RENDER,
    ),
    Mutation(
        "PUE figures with 3 decimals", "accounting/render.py",
        'texts = [format(x, ".2f").rstrip("0").rstrip(".") for x in (lo, hi)]',
        'texts = [format(x, ".3f") for x in (lo, hi)]', _RENDER,
    ),
    Mutation(
        "facility energy without PUE", "accounting/footprint.py",
        "facility_energy_j=site.pue * energy.it_j,", "facility_energy_j=energy.it_j,", _FOOTPRINT,
    ),
    Mutation(
        "paper water convention drops on-site WUE", "accounting/footprint.py",
        "return facility * (wue_onsite_l_per_kwh + wue_offsite_l_per_kwh)",
        "return facility * wue_offsite_l_per_kwh",
        _FOOTPRINT,
    ),
    Mutation(
        "overlapping gaps counted twice in GPU-seconds", "accounting/run_table.py",
        "            reached = end_s\n", "", _TABLE,
    ),
    Mutation(
        "the gap widening left out of the run's band", "accounting/it_energy.py",
        "high_j = sum(f.high_j for f in self.figures) + self.unmeasured_j",
        "high_j = sum(f.high_j for f in self.figures)", _TABLE,
    ),
    Mutation(
        "downtime between attempts not widened", "accounting/gaps.py",
        "widen += run_w * gap.duration_s", "widen += 0.0", _TABLE,
    ),
    Mutation(
        "a window's band not clamped to [0, inf)", "wattlog/records.py",
        "return min(max(low_j, 0.0), max(energy_j, 0.0)), max(high_j, energy_j)", "return low_j, high_j",
        ("tests/accounting/test_windows_cli.py",),
    ),
    # the four that survived on 38e5f82 (issue 38)
    Mutation(
        "replay_folder replays another ledger's spool", "accounting/ledger/spool.py",
        "if header_of(path) != where:", "if False:", _SPOOL, named=True,
    ),
    Mutation(
        "publication cv x1.41", "telemetry/devicestate.py",
        "return math.sqrt(self.pub_d2 / (2 * (self.pub_n - 1))) / self.pub_mean",
        "return math.sqrt(self.pub_d2 / (self.pub_n - 1)) / self.pub_mean",
        ("tests/telemetry/test_uncertainty.py", "tests/telemetry/test_integrator.py", *_BAND[1:]), named=True,
    ),
    Mutation(
        "the counter's quantisation step dropped from the band's high side", "telemetry/uncertainty.py",
        "low, high = max(low - step_j, 0.0), high + step_j", "low, high = max(low - step_j, 0.0), high",
        _BAND, named=True,
    ),
    Mutation(
        "the ends of a range-valued mean intensity swapped", "accounting/footprint.py",
        "for x, y in ((e.lo, f.lo), (e.hi, f.hi)) if y > 0",
        "for x, y in ((e.lo, f.hi), (e.hi, f.lo)) if y > 0",
        _FOOTPRINT, named=True,
    ),
)  # fmt: skip
