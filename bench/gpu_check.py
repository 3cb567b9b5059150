"""The prepared check of a real NVIDIA GPU through wattlog's NVIDIA backend (a few minutes, hard budget).

Run where a GPU is at hand: ``bench/gpu_check.sh`` (python3 with a CUDA torch and
nvidia-ml-py; writes ``$OUT/gpu_check.json``). Without one, the same steps run on
the simulated GPU through the pynvml-compatible fake, in about a second::

    .venv/bin/python -m bench.gpu_check --simulate true|observed [--out PATH]

Steps (each skipped, and listed as skipped, when the time budget would not hold it):

1. List the GPUs through ``telemetry.sensors.nvml.NvmlSensor``: UUID, counter or not,
   power from field 186 (NVML_FI_DEV_POWER_INSTANT) or nvmlDeviceGetPowerUsage, limit.
2. The cost of one NVML call: median and p99 over ~1000 calls each of
   nvmlDeviceGetTotalEnergyConsumption, nvmlDeviceGetFieldValues([186]),
   nvmlDeviceGetPowerUsage, and of one full backend read (all metrics of one GPU).
3. Update periods under a steady load: readings every 2 ms, the time between
   changes of the counter and of field 186. The publication period found is the
   one the locked waves lock to, and the last change anchors their phase.
4. 20 s of steady bf16 matrix products, sampled every 25 ms by wattlog's Sampler
   into its Integrator: counter energy against the trapezoid over field 186 and
   against the trapezoid over GetPowerUsage, with their relative differences.
   Then 5 s idle.
5. Square waves: 50/50 and 30/70 with the period locked to the publication period,
   each first played at a period 7 % longer (the reference run: not locked, its
   phase drifts through every window), then locked at two phases (the 25 ms window
   in the middle of the off phase, then of the on phase); and a 37/63 wave at
   137 ms (not locked), a control.

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
from typing import Any, Literal

from bench.gpu_loads import Load, LoadUnavailable, Pattern, TorchLoad, simulated_gpu
from bench.gpu_probe import (
    ChangeSink,
    PowerUsageSensor,
    SpanSink,
    call_cost,
    update_period,
)
from telemetry.clock import Clock, FakeClock, SystemClock
from telemetry.errors import ConfigError, WattlogError
from telemetry.integrator import Integrator
from telemetry.sampler import Sampler
from telemetry.sensors.nvml import NvmlSensor
from telemetry.types import DeviceInfo

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


Role = Literal["steady", "idle", "locked", "reference", "control"]
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

    def __post_init__(self) -> None:
        times = (self.steady_s, self.idle_s, self.wave_s, self.poll_s, self.period_s, self.poll_period_s)
        if min(times) <= 0 or self.settle_s < 0 or self.calls < 1 or self.budget_s <= 0:
            raise ConfigError("every duration and period must be > 0 s, settle_s >= 0 and calls >= 1")
        if not all(0 < w.duty < 1 for w in self.waves):
            raise ConfigError("wave duties must lie in (0, 1)")


@dataclass(frozen=True, slots=True)
class RunFigures:
    """Energy of one sampled run of the target GPU, three ways (None where the GPU lacks one).

    counter_j is the integrator's figure over the readings' span; counter_w the
    mean power between the first and last counter changes seen (no end lag).
    """

    name: str
    role: Role
    wave: str
    duty: float
    period_s: float
    phase_s: float
    span_s: float
    counter_j: float | None
    counter_w: float | None
    instant_j: float | None
    power_usage_j: float | None
    samples: int
    failures: int
    overruns: int
    lateness_p99_s: float | None
    notes: tuple[str, ...]

    def mean_w(self, energy_j: float | None) -> float | None:
        """Mean power over the run's span, watts."""
        return energy_j / self.span_s if energy_j is not None and self.span_s > 0 else None

    def best_w(self) -> float | None:
        """The counter's mean power, else the field's."""
        return self.counter_w if self.counter_w is not None else self.mean_w(self.instant_j)

    def as_json(self) -> dict[str, Any]:
        """All fields plus mean powers and relative differences to the counter."""
        out = asdict(self)
        for name in ("instant", "power_usage"):
            out[f"{name}_w"] = power_w = self.mean_w(getattr(self, f"{name}_j"))
            rel = None
            if self.counter_w and power_w is not None:
                rel = (power_w - self.counter_w) / self.counter_w
            out[f"{name}_vs_counter_rel"] = rel
        return out


def classify(
    counter_w: float, sampled_w: float, expected_w: float, tol_rel: float, lock_min_rel: float
) -> tuple[str, str]:
    """What one locked run says: ("true" | "observed" | "not locked" | "inconclusive", why)."""
    if expected_w <= 0 or sampled_w <= 0:
        return "inconclusive", "no power to compare"
    lock = (sampled_w - expected_w) / expected_w
    if abs(lock) < lock_min_rel:
        return "not locked", f"sampled {lock:+.1%} from the expected mix: the readings saw a blend"
    d_true = abs(counter_w - expected_w) / expected_w
    d_obs = abs(counter_w - sampled_w) / sampled_w
    why = f"sampled {lock:+.1%} from the mix; counter {d_true:.1%} from the mix, {d_obs:.1%} from sampled"
    if d_true <= tol_rel and d_true < d_obs:
        return "true", why
    if d_obs <= tol_rel and d_obs < d_true:
        return "observed", why
    return "inconclusive", why


def analyse(runs: list[RunFigures], config: CheckConfig) -> dict[str, Any]:
    """The decision (see the module docstring) from the sampled runs; pure."""
    by_role = {r.role: r for r in runs if r.role in ("steady", "idle")}
    steady, idle = by_role.get("steady"), by_role.get("idle")
    gain = 1.0
    if steady is not None and steady.counter_w and steady.instant_j:
        gain = steady.counter_w / (steady.mean_w(steady.instant_j) or steady.counter_w)
    on_w = steady.best_w() if steady else None
    idle_w = idle.best_w() if idle else None
    references = {r.wave: r for r in runs if r.role == "reference"}
    calls: list[dict[str, Any]] = []
    controls: list[dict[str, Any]] = []
    for r in runs:
        counter_w, instant_w = r.counter_w, r.mean_w(r.instant_j)
        if r.role in ("reference", "control") and counter_w and instant_w:
            rel = (gain * instant_w - counter_w) / counter_w
            controls.append(
                {"run": r.name, "counter_w": counter_w, "sampled_w": gain * instant_w, "rel": rel}
            )
            controls[-1]["ok"] = abs(rel) <= config.tol_rel
        if r.role != "locked":
            continue
        mix_w = r.duty * on_w + (1 - r.duty) * idle_w if on_w is not None and idle_w is not None else None
        ref = references.get(r.wave)
        expected_w = ref.best_w() if ref is not None else None
        call = {"run": r.name, "wave": r.wave, "counter_w": counter_w, "expected_w": expected_w}
        call.update(sampled_w=gain * instant_w if instant_w else None, onoff_mix_w=mix_w)
        if counter_w is None:
            call.update(says="inconclusive", why="no energy counter")
        elif expected_w is None or instant_w is None:
            call.update(
                says="inconclusive", why="no unlocked reference run of this wave, or no power readings"
            )
        else:
            says, why = classify(counter_w, gain * instant_w, expected_w, config.tol_rel, config.lock_min_rel)
            call.update(says=says, why=why)
        calls.append(call)
    answer, reasons = _verdict(calls, controls)
    return {
        "gain_counter_over_field": gain,
        "calls": calls,
        "controls": controls,
        "verdict": {"answer": answer, "reasons": reasons},
    }


def _verdict(calls: list[dict[str, Any]], controls: list[dict[str, Any]]) -> tuple[str, list[str]]:
    says = {c["says"] for c in calls if c["says"] in ("true", "observed")}
    reasons = [f"{c['run']}: {c['says']} ({c['why']})" for c in calls]
    failed = [c["run"] for c in controls if not c["ok"]]
    if failed:
        reasons.append(f"unlocked runs where counter and sampled disagree beyond tolerance: {failed}")
    if not calls:
        return "inconclusive", [*reasons, "no locked wave was run"]
    if len(says) != 1 or failed:
        why = "no locked run was decisive" if not says else "runs disagree or a control failed"
        return "inconclusive", [*reasons, why]
    return says.pop(), reasons


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
        sensor = NvmlSensor(nvml, include=lambda _index, u: u == target.uuid)
        try:
            sensor.devices()
            self._echo(f"timing NVML calls on {target.uuid} ...")
            self.report["call_cost"] = call_cost(nvml, sensor, target, self.config.calls, self._timer)
            self._save()
            if not loaded:
                self.report["skipped"].append(f"every load step: {self.report['load']['error']}")
                return
            self._sampled_steps(nvml, sensor, target)
        finally:
            sensor.close()

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
        self.report["analysis"] = analyse(runs, c)

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
        sink = ChangeSink()
        sampler = Sampler([sensor], sink, period_s=self.config.poll_period_s, clock=self._clock)
        self._load.play(Pattern(1.0), seconds, sampler)
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


def _w(value: float | None) -> str:
    return f"{value:9.1f}" if value is not None else f"{'-':>9}"


def _pct(value: float | None) -> str:
    return f"{value:+8.2%}" if value is not None else f"{'-':>8}"


def print_table(report: dict[str, Any], echo: Callable[[str], None] = print) -> None:
    """The report as compact tables: GPUs, call costs, update periods, runs, locked runs, verdict."""
    echo(f"NVML: {report.get('nvml', {})}")
    for d in report.get("devices", []):
        limit = f"{d['power_limit_w']:.0f} W" if d["power_limit_w"] else "limit ?"
        mark = "*" if d["uuid"] == report.get("target") else " "
        echo(f"{mark}[{d['index']}] {d['uuid']}  {d['name']}  source={d['source']}  {limit}  {d['note']}")
    if "error" in report:
        echo(f"error: {report['error']}")
    echo(f"load: {report.get('load', {})}")
    if report.get("call_cost"):
        echo(f"\n{'NVML call (one GPU)':40} {'calls':>6} {'median us':>10} {'p99 us':>10} {'max us':>10}")
        for name, c in report["call_cost"].items():
            cells = [
                f"{c[k]:10.1f}" if c[k] is not None else f"{'-':>10}"
                for k in ("median_us", "p99_us", "max_us")
            ]
            echo(f"{name:40} {c['calls']:6d} {' '.join(cells)}  {c['error']}")
    if "updates" in report:
        u = report["updates"]

        def ms(x: float | None) -> str:
            return f"{x * 1e3:.2f} ms" if x is not None else "-"

        echo(
            f"\nupdates under steady load (read every {u['poll_period_s'] * 1e3:g} ms): "
            f"counter every {ms(u['counter']['median_s'])} (fitted {ms(u['counter']['fitted_s'])}), "
            f"field 186 every {ms(u['power_field']['median_s'])} "
            f"(fitted {ms(u['power_field']['fitted_s'])})"
        )
    runs = report.get("runs", [])
    if runs:
        src = next((d["source"] for d in report["devices"] if d["uuid"] == report["target"]), "?")
        trap = "simulated" if src == "simulated" else "sampled"
        echo(f"\nmean power, W (counter: {src}; field 186 and GetPowerUsage trapezoids at 25 ms: {trap})")
        echo(
            f"{'run':32} {'s':>6} {'counter':>9} {'field186':>9} {'GetPwrUsg':>9} "
            f"{'186 vs c':>8} {'avg vs c':>8}"
        )
        for r in runs:
            echo(
                f"{r['name']:32} {r['span_s']:6.1f} {_w(r['counter_w'])} {_w(r['instant_w'])} "
                f"{_w(r['power_usage_w'])} {_pct(r['instant_vs_counter_rel'])} "
                f"{_pct(r['power_usage_vs_counter_rel'])}"
            )
    analysis = report.get("analysis")
    if analysis:
        echo(
            f"\nlocked runs, W (sampled x {analysis['gain_counter_over_field']:.4f}, "
            "the steady counter/field ratio)"
        )
        echo(f"{'run':32} {'expected':>9} {'on/off':>9} {'counter':>9} {'sampled':>9}  says")
        for c in analysis["calls"]:
            echo(
                f"{c['run']:32} {_w(c['expected_w'])} {_w(c['onoff_mix_w'])} {_w(c['counter_w'])} "
                f"{_w(c['sampled_w'])}  {c['says']}"
            )
        for c in analysis["controls"]:
            echo(
                f"control {c['run']:24} counter {c['counter_w']:.1f} W, sampled {c['sampled_w']:.1f} W "
                f"({c['rel']:+.2%}) {'ok' if c['ok'] else 'DISAGREE'}"
            )
        verdict = analysis["verdict"]
        answer = {"true": "integrates TRUE power", "observed": "integrates only the OBSERVED windows"}
        echo(f"\nverdict: the energy counter {answer.get(verdict['answer'], 'is INCONCLUSIVE')}")
        for reason in verdict["reasons"]:
            echo(f"  - {reason}")
    for skipped in report.get("skipped", []):
        echo(f"skipped: {skipped}")
    echo(f"elapsed {report.get('elapsed_s', 0):.1f} s of a {report['config']['budget_s']:g} s budget")


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
    )
    if args.simulate:
        from telemetry.sensors.fake_pynvml import FakeNvml  # imports pynvml: only when simulating

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
