"""The AMD equivalent of bench.gpu_check: what amdsmi gives on a machine with Instinct GPUs.

For each AMD GPU wattlog sees: its HIP index and profile, whether its energy
counter passed the start-up check, and over `--seconds` of reads every 25 ms the
counter's energy against integrated power (their ratio, the counter's update
cadence from its changed values, gaps and resets). Needs the `amd` extra on a ROCm
machine; `--simulate` runs it on the amdsmi stand-in (no GPU).

    python -m bench.amd_check --seconds 20 --out amd_check.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from wattlog.clock import Clock, FakeClock, SystemClock
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sensors.amdsmi_sensor import AmdSmiSensor
from wattlog.telemetry.sensors.fake_amdsmi import FakeAmdSmi
from wattlog.telemetry.sensors.simulated import SimulatedGpu
from wattlog.telemetry.sensors.traces import TrainingTrace
from wattlog.telemetry.types import Vendor


def check(
    sensor: AmdSmiSensor, clock: Clock, seconds: float, period_s: float = 0.025
) -> list[dict[str, Any]]:
    """Read every AMD GPU for `seconds` through an integrator; one summary per GPU."""
    devices = sensor.devices()
    integ = Integrator(devices, host="amd-check", clock=clock, period_s=period_s)
    values: dict[str, set[float]] = {d.uuid: set() for d in devices}  # AMD's timestamps date reads
    end_s = clock.monotonic() + seconds
    while clock.monotonic() < end_s:
        clock.sleep(period_s)
        for device in devices:
            reading = sensor.read(device, clock.monotonic())
            integ.add(reading)
            if reading.energy_mj is not None:
                values[device.uuid].add(reading.energy_mj)
    rows = []
    for energy in integ.snapshot():
        d = energy.device
        updates = max(len(values[d.uuid]) - 1, 0)
        rows.append(
            {
                "uuid": d.uuid,
                "name": d.name,
                "hip_index": d.index,
                "profile": d.profile.family if d.profile else None,
                "counter": d.has_counter,
                "source": str(d.source),
                "note": d.note,
                "energy_j": energy.energy_j,
                "band_j": [energy.low_j, energy.high_j],
                "counter_updates_per_s": updates / seconds if updates else None,
                "gaps": energy.gap_count,
                "notes": list(energy.notes),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the check and print (and optionally write) one JSON summary per GPU; 2 if no AMD GPU answers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--simulate", action="store_true", help="the amdsmi stand-in, no GPU")
    args = parser.parse_args(argv)
    clock: Clock
    if args.simulate:
        clock = FakeClock()
        trace = TrainingTrace.generate(seed=1, duration_s=600.0)
        gpu = SimulatedGpu("GPU-amd-sim", "AMD Instinct MI300X", trace, vendor=Vendor.AMD)
        sensor = AmdSmiSensor(FakeAmdSmi([gpu], clock), clock=clock)
    else:
        clock = SystemClock()
        sensor = AmdSmiSensor(clock=clock)
    try:
        rows = check(sensor, clock, args.seconds)
    except Exception as error:  # one line, never a traceback, on a machine without ROCm
        print(f"amd_check: {error}")
        return 2
    finally:
        sensor.close()
    text = json.dumps(rows, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0 if rows else 2


if __name__ == "__main__":
    raise SystemExit(main())
