"""Notes say one thing, with the number behind it; the estimate's notes speak of the estimate."""

from __future__ import annotations

from wattlog.clock import FakeClock
from wattlog.records import Kind, Source
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.types import DeviceInfo, Reading
from wattlog.telemetry.uncertainty import PhaseLock


def test_a_lock_from_repetition_gives_one_figure_for_how_far_readings_are_off() -> None:
    # the note said "readings may be off by up to 5 %" and, in the same breath, "tens of percent"
    note = PhaseLock(0.2, 1.0, "published power repeats at 2 phases of the load", 0.083).note(0.1, "NVML")
    assert "off by up to 8%" in note and "tens of percent" not in note
    assert note.count("off by") == 1 and "load period ~200 ms" in note


def test_a_lock_only_the_counter_shows_claims_no_load_period() -> None:
    # a 1.3 s load was reported as "load period ~100 ms": a lock at one phase shows no period
    note = PhaseLock(None, 0.44, "sampled -44% vs counter", 0.44).note(0.1, "NVML")
    assert "load period" not in note and "off by up to 44%" in note


def test_the_estimates_notes_speak_of_the_estimate_not_a_driver(fake_clock: FakeClock) -> None:
    cpu = DeviceInfo("cpu-est", "CPU (estimated)", Kind.CPU, Source.ESTIMATED, False, power_limit_w=200.0)
    integ = Integrator([cpu], host="h", clock=fake_clock)
    for k in range(40):  # one estimate a second, read every 0.25 s
        t_s = 0.25 * (k + 1)
        integ.add(Reading(cpu.uuid, t_s, power_w=50.0 + (k // 4) % 3, power_t_s=float(int(t_s))))
    [energy] = integ.snapshot()
    assert not any("driver" in note for note in energy.notes)
    assert any("estimate remade every 1000 ms" in note for note in energy.notes)
