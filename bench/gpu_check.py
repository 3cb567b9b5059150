"""The prepared check of a real NVIDIA GPU through wattlog's NVIDIA backend (a few minutes, hard budget).

Run where a GPU is at hand: ``bench/gpu_check.sh`` (python3 with a CUDA torch and
nvidia-ml-py; writes ``$OUT/gpu_check.json``). Without one, the same steps run on
the simulated GPU through the pynvml-compatible fake, in about a second::

    .venv/bin/python -m bench.gpu_check --simulate true|observed [--out PATH]

Steps (each skipped, and listed as skipped, when the time budget would not hold it):

1. List the GPUs through ``telemetry.sensors.nvml.NvmlSensor``: UUID, counter or not,
   power from field 186 (NVML_FI_DEV_POWER_INSTANT) or nvmlDeviceGetPowerUsage, limit.
2. The cost of each NVML query wattlog uses: median and p99 over ~1000 calls
   each of nvmlDeviceGetFieldValues([186, 83]) (the hot path: one call per GPU
   per tick), the slow metrics read at 1 Hz (utilisation, temperature, memory,
   power limit), the fallbacks (GetTotalEnergyConsumption, GetFieldValues([186]),
   GetPowerUsage), and the backend's read with and without the slow metrics.
3. Update periods under a steady load: readings every 2 ms, the time between
   changes of the counter and of field 186, and the cadence of the driver's
   field timestamps (how often each field publishes, how old a value is when
   read). The publication period found is the one the locked waves lock to,
   and the last change anchors their phase.
4. 20 s of steady bf16 matrix products, sampled every 25 ms by wattlog's Sampler
   into its Integrator: counter energy against the trapezoid over field 186 and
   against the trapezoid over GetPowerUsage, with their relative differences.
   Then 5 s idle.
5. Square waves: 50/50 and 30/70 with the period locked to the publication period,
   each first played at a period 7 % longer (the reference run: not locked, its
   phase drifts through every window), then locked at two phases (the 25 ms window
   in the middle of the off phase, then of the on phase); and a 37/63 wave at
   137 ms (not locked), a control.
6. The agent's cost to the step: the load's step (a matmul and a device sync)
   timed in interleaved blocks without and with a wattlog Agent sampling the
   GPU every 25 ms (ratio of median step times).

Decision rule: does the energy counter integrate true power, or only the 25 ms
observed of every 100 ms? (SC24, Yang, Adamek, Armour: on A100/H100 each value
published every ~100 ms averages only the last ~25 ms.) A load whose period equals
the publication period is seen at the same phase every time, so the published
values, and the 25 ms-sampled trapezoid over them, show one phase (or a fixed
blend) instead of the duty-weighted mean. Then a counter that integrates true
power reports about the duty-weighted mean, which is what the same wave gives
when played unlocked (the reference run: the expected mix); a counter that
integrates only the observed windows reports what the sampled readings show.
Per locked run, with sampled figures first scaled by the counter/field ratio of
the steady run (so a plain gain difference between counter and field is not
taken for either answer):

- lock seen: the sampled mean differs from the expected mix by >= 10 %;
  otherwise the readings saw a blend and the run decides nothing;
- "true": the counter is within 5 % of the expected mix and nearer it than the sampled mean;
- "observed": the counter is within 5 % of the sampled mean and nearer it than the mix;
- else inconclusive.

The answer is the one every decisive locked run gives; it is "inconclusive" when
none is decisive, when they disagree, or when an unlocked run (the references and
the 37/63 control, where both answers predict counter = sampled) shows counter and
sampled more than 5 % apart. The on/off mix of the steady and idle runs
(duty x P_steady + (1 - duty) x P_idle) is printed beside the expected mix, not
used to decide: a GPU idle for 50 ms need not draw its steady idle power.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.gpu_cost import StampSink, Tee, agent_step_ratio
from bench.gpu_loads import Load, LoadUnavailable, Pattern, TorchLoad, simulated_gpu
from bench.gpu_probe import (
    ChangeSink,
    PowerUsageSensor,
    SpanSink,
    call_cost,
    update_period,
)
from bench.gpu_verdict import Role, RunFigures, analyse, print_table
from wattlog.clock import Clock, FakeClock, SystemClock
from wattlog.errors import ConfigError, WattlogError
from wattlog.telemetry.integrator import Integrator
from wattlog.telemetry.sampler import Sampler
from wattlog.telemetry.sensors.nvml import NvmlSensor
from wattlog.telemetry.types import DeviceInfo

_WINDOW_S = 0.025  # the observed window at the end of each publication (SC24)
_ANCHOR_S = 1.5  # steady poll before each locked run, to re-anchor its phase


@dataclass(frozen=True, slots=True)
class Wave:
    """A square wave to play: busy for `duty` of each period.

    Attributes:
        name: e.g. "50/50".
        duty: Busy share of each period, in (0, 1).
        period_s: Its period; None locks it to the measured publication period.
    """

    name: str
    duty: float
    period_s: float | None = None


DEFAULT_WAVES = (Wave("50/50", 0.5), Wave("30/70", 0.3), Wave("37/63", 0.37, 0.137))


@dataclass
class CheckConfig:
    """How long each step runs and how the decision is made."""

    steady_s: float = 20.0
    """Steady matmul load sampled at `period_s`."""
    idle_s: float = 5.0
    """Idle, right after the steady load."""
    wave_s: float = 12.0
    """Each square-wave run."""
    poll_s: float = 4.0
    """Steady load read every `poll_period_s` for update periods."""
    settle_s: float = 1.2
    """Each sampled run counts from this long after its pattern started (GetPowerUsage's 1 s
    average and the counter's ~100 ms updates still show the previous pattern before)."""
    period_s: float = 0.025
    """Sampling period of the sampled runs (the agent's default)."""
    poll_period_s: float = 0.002
    """Reading period while timing updates."""
    calls: int = 1000
    """Calls per NVML function timed."""
    budget_s: float = 420.0
    """Hard budget: a step that would end past it is skipped."""
    publication_s: float = 0.1
    """Publication period assumed when none could be measured."""
    drift: float = 0.07
    """Reference runs play the locked wave at a period this much longer."""
    tol_rel: float = 0.05
    """Counter within this of an expectation counts as matching it."""
    lock_min_rel: float = 0.10
    """Sampled this far from the expected mix counts as a lock seen."""
    waves: tuple[Wave, ...] = DEFAULT_WAVES
    """The square waves."""
    agent_rounds: int = 4
    """Interleaved plain/agent block pairs of the step-time comparison."""
    agent_block_s: float = 2.0
    """Each timed block of steps."""

    def __post_init__(self) -> None:
        times = (self.steady_s, self.idle_s, self.wave_s, self.poll_s, self.period_s, self.poll_period_s)
        if min(times) <= 0 or self.settle_s < 0 or self.calls < 1 or self.budget_s <= 0:
            raise ConfigError("every duration and period must be > 0 s, settle_s >= 0 and calls >= 1")
        if self.agent_rounds < 1 or self.agent_block_s <= 0:
            raise ConfigError("agent_rounds must be >= 1 and agent_block_s > 0")
        if not all(0 < w.duty < 1 for w in self.waves):
            raise ConfigError("wave duties must lie in (0, 1)")


@dataclass(frozen=True, slots=True)
class _Step:
    """One sampled run of the plan; its pattern is fixed only when it runs (after re-anchoring)."""

    name: str
    role: Role
    wave: str
    duty: float
    seconds: float
    period_s: float | None = None
    where: str = ""

    def duration_s(self, pub_s: float, drift: float) -> float:
        """A reference run lasts whole beats (its window phase sweeps the wave evenly); others `seconds`."""
        if self.role != "reference":
            return self.seconds
        beat_s = pub_s * (1 + drift) / drift
        return max(round(self.seconds / beat_s), 1) * beat_s

    def pattern(self, pub_s: float, anchor_s: float | None, drift: float) -> Pattern:
        if self.role == "locked":
            return _locked(self.duty, pub_s, anchor_s, self.where == "on")
        if self.role == "reference":
            return Pattern(self.duty, pub_s * (1 + drift))
        return Pattern(self.duty, self.period_s or pub_s)


class GpuCheck:
    """Runs the steps of the module docstring and writes every figure to `out` as it goes.

    Args:
        load: The load generator (TorchLoad on a GPU, SimulatedLoad without).
        config: Durations and decision thresholds.
        nvml: The NVML module; None imports pynvml (a FakeNvml installed with
            telemetry.sensors.fake_pynvml.install is what that import then returns).
        clock: The clock the load, sampler and integrator share.
        timer: High-resolution seconds for call costs and the budget.
        out: JSON file to write (None: don't write).
        echo: Where progress lines go.
    """

    def __init__(
        self,
        load: Load,
        config: CheckConfig | None = None,
        *,
        nvml: Any = None,
        clock: Clock | None = None,
        timer: Callable[[], float] = time.perf_counter,
        out: Path | None = None,
        echo: Callable[[str], None] = print,
    ) -> None:
        self._load = load
        self.config = config if config is not None else CheckConfig()
        self._nvml = nvml
        self._clock = clock if clock is not None else SystemClock()
        self._timer = timer
        self._out = out
        self._echo = echo
        self.report: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        """Every step that fits the budget; the report (also written to `out`)."""
        self._end_s = self._timer() + self.config.budget_s
        self.report = {"check": "wattlog bench.gpu_check", "started_unix_s": time.time(), "skipped": []}
        self.report["config"] = asdict(self.config)
        self.report["host"] = {"python": platform.python_version(), "machine": platform.node()}
        nvml = self._nvml if self._nvml is not None else importlib.import_module("pynvml")
        lister = NvmlSensor(nvml)
        try:
            devices = lister.devices()
        except WattlogError as e:
            self.report["error"] = str(e)
            self._save()
            raise
        try:
            self._steps(nvml, devices)
        finally:
            lister.close()
            self.report["elapsed_s"] = self.config.budget_s - (self._end_s - self._timer())
            self._save()
        return self.report

    def _steps(self, nvml: Any, devices: list[DeviceInfo]) -> None:
        self.report["nvml"] = _versions(nvml)
        self.report["devices"] = [asdict(d) for d in devices]
        if not devices:
            self.report["error"] = "NVML lists no GPU"
            return
        try:
            self.report["load"] = self._load.prepare()
            loaded = True
        except LoadUnavailable as e:
            self.report["load"] = {"error": str(e)}
            loaded = False
        uuid = self._load.gpu_uuid() if loaded else None
        target = next((d for d in devices if d.uuid == uuid), devices[0])
        self.report["target"] = target.uuid
        # unpaced: these steps study the sensor itself (every 2 ms poll, each tick's reading);
        # the agent's own (paced) reads are what the step-time step measures
        sensor = NvmlSensor(nvml, include=lambda _index, u: u == target.uuid, paced=False)
        try:
            sensor.devices()
            self._echo(f"timing NVML calls on {target.uuid} ...")
            self.report["call_cost"] = call_cost(nvml, sensor, target, self.config.calls, self._timer)
            self._save()
            if not loaded:
                self.report["skipped"].append(f"every load step: {self.report['load']['error']}")
                return
            self._sampled_steps(nvml, sensor, target)
            self._agent_cost(nvml, target)
        finally:
            sensor.close()

    def _agent_cost(self, nvml: Any, target: DeviceInfo) -> None:
        """Step time of the load's step (a matmul, a sync) with the agent at 25 ms vs without."""
        c = self.config
        seconds = 2 * c.agent_rounds * c.agent_block_s + 2.0
        if not self._fits("step time with the agent", seconds):
            return
        self._echo(f"step time with the agent at {c.period_s * 1e3:g} ms vs without, ~{seconds:.0f} s ...")
        self.report["agent_cost"] = agent_step_ratio(
            self._load.step,
            nvml,
            target.uuid,
            rounds=c.agent_rounds,
            block_s=c.agent_block_s,
            period_s=c.period_s,
        )
        self._save()

    def _sampled_steps(self, nvml: Any, sensor: NvmlSensor, target: DeviceInfo) -> None:
        c = self.config
        pub_s, anchor_s = self._poll(sensor, c.poll_s, record=True)
        runs: list[RunFigures] = []
        for step in self._plan():
            seconds = step.duration_s(pub_s or c.publication_s, c.drift)
            anchor = _ANCHOR_S if step.role == "locked" else 0.0
            if not self._fits(step.name, c.settle_s + seconds + anchor):
                continue
            if step.role == "locked":
                pub_s, anchor_s = self._reanchor(sensor, pub_s, anchor_s)
            pattern = step.pattern(pub_s or c.publication_s, anchor_s, c.drift)
            self._echo(f"{step.name}: {pattern.label()} for {seconds:.2f} s ...")
            runs.append(self._sampled(nvml, sensor, target, step, pattern, seconds))
            self.report["runs"] = [r.as_json() for r in runs]
            self._save()
        self.report["publication_s_used"] = pub_s or c.publication_s
        self.report["analysis"] = analyse(runs, c.tol_rel, c.lock_min_rel)

    def _plan(self) -> list[_Step]:
        c = self.config
        steps = [_Step("steady", "steady", "", 1.0, c.steady_s), _Step("idle", "idle", "", 0.0, c.idle_s)]
        for w in c.waves:
            if w.period_s is not None:
                steps.append(
                    _Step(
                        f"{w.name} @{w.period_s * 1e3:.0f} ms",
                        "control",
                        w.name,
                        w.duty,
                        c.wave_s,
                        w.period_s,
                    )
                )
                continue
            steps.append(_Step(f"{w.name} reference", "reference", w.name, w.duty, c.wave_s))
            for where in ("off", "on"):
                steps.append(
                    _Step(
                        f"{w.name} locked, window in {where}", "locked", w.name, w.duty, c.wave_s, where=where
                    )
                )
        return steps

    def _reanchor(
        self, sensor: NvmlSensor, pub_s: float | None, anchor_s: float | None
    ) -> tuple[float | None, float | None]:
        """A short poll re-anchors the phase; the span since the last anchor refines the period."""
        fitted_s, new_anchor_s = self._poll(sensor, _ANCHOR_S, record=False)
        if new_anchor_s is None:
            return pub_s, anchor_s
        period_s = pub_s or fitted_s
        if anchor_s is not None and period_s:
            n = round((new_anchor_s - anchor_s) / period_s)
            period_s = (new_anchor_s - anchor_s) / n if n > 0 else period_s
        self.report.setdefault("anchors", []).append({"anchor_s": new_anchor_s, "publication_s": period_s})
        return period_s, new_anchor_s

    def _fits(self, name: str, seconds: float) -> bool:
        if self._timer() + seconds + 2.0 <= self._end_s:
            return True
        self.report["skipped"].append(
            f"{name}: {seconds:g} s would overrun the {self.config.budget_s:g} s budget"
        )
        return False

    def _poll(self, sensor: NvmlSensor, seconds: float, *, record: bool) -> tuple[float | None, float | None]:
        """Steady load read every poll period: (publication period, time of the last field change)."""
        if not self._fits("update periods", seconds):
            return None, None
        sink, stamps = ChangeSink(), StampSink()
        sampler = Sampler(
            [sensor], Tee([sink, stamps]), period_s=self.config.poll_period_s, clock=self._clock
        )
        self._load.play(Pattern(1.0), seconds, sampler)
        if record:
            self.report["field_cadence"] = stamps.cadence()
        power = update_period(sink.power_changes_s)
        if record:
            self.report["updates"] = {
                "counter": update_period(sink.counter_changes_s),
                "power_field": power,
                "poll_period_s": self.config.poll_period_s,
                "sampler": _sampler_stats(sampler),
            }
            self._save()
        fitted = power["fitted_s"]
        usable = fitted is not None and 0.05 <= fitted <= 0.2
        anchor = sink.power_changes_s[-1] if usable and sink.power_changes_s else None
        return (fitted if usable else None), anchor

    def _sampled(
        self,
        nvml: Any,
        sensor: NvmlSensor,
        target: DeviceInfo,
        step: _Step,
        pattern: Pattern,
        seconds: float,
    ) -> RunFigures:
        c = self.config
        average = PowerUsageSensor(nvml, target)
        avg_uuid = average.devices()[0].uuid
        # a late tick is interpolated over (40 periods): the figures compare methods, they don't ledger
        integrator = Integrator(
            [*sensor.devices(), *average.devices()],
            host="gpu-check",
            clock=self._clock,
            period_s=c.period_s,
            max_gap_periods=40,
        )
        sink = SpanSink(integrator, from_s=self._clock.monotonic() + c.settle_s)
        sampler = Sampler([sensor, average], sink, period_s=c.period_s, clock=self._clock)
        self._load.play(pattern, c.settle_s + seconds, sampler)
        energy = {e.device.uuid: e for e in integrator.snapshot()}
        main = energy[target.uuid]
        stats = sampler.stats()
        return RunFigures(
            name=step.name,
            role=step.role,
            wave=step.wave,
            duty=pattern.duty,
            period_s=pattern.period_s,
            phase_s=pattern.phase_s,
            span_s=sink.span_s(target.uuid),
            counter_j=main.energy_j if target.has_counter else None,
            counter_w=sink.counter_mean_w(target.uuid) if target.has_counter else None,
            instant_j=integrator.sampled_energy_j(target.uuid) if main.power_w is not None else None,
            power_usage_j=energy[avg_uuid].energy_j if energy[avg_uuid].samples > 1 else None,
            power_usage_span_s=sink.span_s(avg_uuid),
            samples=main.samples,
            failures=sink.failures,
            overruns=stats.overruns_total,
            lateness_p99_s=stats.lateness_p99_s,
            notes=main.notes,
        )

    def _save(self) -> None:
        if self._out is not None:
            self._out.parent.mkdir(parents=True, exist_ok=True)
            self._out.write_text(json.dumps(self.report, indent=2, default=str) + "\n")


def _locked(duty: float, pub_s: float, anchor_s: float | None, window_in_on: bool) -> Pattern:
    """A wave of period `pub_s` placed so the 25 ms window before each publication sits mid-on or mid-off."""
    center_s = (anchor_s if anchor_s is not None else 0.0) - _WINDOW_S / 2
    on_s = duty * pub_s
    start_s = center_s - on_s / 2 if window_in_on else center_s - on_s - (pub_s - on_s) / 2
    return Pattern(duty, pub_s, start_s % pub_s)


def _versions(nvml: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, name in (("driver", "nvmlSystemGetDriverVersion"), ("nvml", "nvmlSystemGetNVMLVersion")):
        try:
            value = getattr(nvml, name)()
            out[key] = value.decode() if isinstance(value, bytes) else str(value)
        except Exception as e:  # a version string is nice to have, never a reason to stop
            out[key] = f"unknown ({e})"
    return out


def _sampler_stats(sampler: Sampler) -> dict[str, Any]:
    s = sampler.stats()
    return {
        "achieved_period_s": s.achieved_period_s,
        "lateness_p99_s": s.lateness_p99_s,
        "overruns": s.overruns_total,
        "errors": s.errors_total,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the check; exit 0 when it ran (whatever the verdict), 2 when no GPU could be read."""
    p = argparse.ArgumentParser(prog="python -m bench.gpu_check", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="JSON file (default: $OUT/gpu_check.json, else ./gpu_check.json)")
    p.add_argument(
        "--simulate",
        choices=("true", "observed"),
        help="no GPU: a simulated H100 whose counter integrates true power or the observed windows",
    )
    p.add_argument("--device-index", type=int, default=0, help="CUDA device to load (torch numbering)")
    defaults = CheckConfig()
    for name in ("steady_s", "idle_s", "wave_s", "poll_s", "settle_s", "period_s", "budget_s"):
        p.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(defaults, name))
    p.add_argument("--calls", type=int, default=defaults.calls)
    p.add_argument("--agent-rounds", type=int, default=defaults.agent_rounds)
    p.add_argument("--agent-block-s", type=float, default=defaults.agent_block_s)
    args = p.parse_args(argv)
    out = args.out or Path(os.environ.get("OUT") or ".") / "gpu_check.json"
    config = CheckConfig(
        steady_s=args.steady_s,
        idle_s=args.idle_s,
        wave_s=args.wave_s,
        poll_s=args.poll_s,
        settle_s=args.settle_s,
        period_s=args.period_s,
        budget_s=args.budget_s,
        calls=args.calls,
        agent_rounds=args.agent_rounds,
        agent_block_s=args.agent_block_s,
    )
    if args.simulate:
        from wattlog.telemetry.sensors.fake_pynvml import FakeNvml  # imports pynvml: only when simulating

        clock = FakeClock()
        gpu, load = simulated_gpu(args.simulate, clock)
        check = GpuCheck(load, config, nvml=FakeNvml([gpu], clock), clock=clock, out=out)
    else:
        check = GpuCheck(TorchLoad(args.device_index), config, out=out)
    try:
        report = check.run()
    except WattlogError as e:
        print(f"gpu_check: {e}", file=sys.stderr)
        return 2
    print_table(report)
    print(f"figures: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
