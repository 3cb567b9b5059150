"""What bench.gpu_check concludes from its runs, and the tables it prints (pure: no NVML, no torch).

The decision rule is explained in bench/gpu_check.py's module docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

Role = Literal["steady", "idle", "locked", "reference", "control"]


@dataclass(frozen=True, slots=True)
class RunFigures:
    """Energy of one sampled run of the target GPU, three ways (None where the GPU lacks one).

    counter_j is the integrator's figure over the readings' span; counter_w the
    mean power between the first and last counter changes seen (no end lag).
    power_usage_span_s is the span of the nvmlDeviceGetPowerUsage readings: they
    are taken on every tick, the paced field reads once per publication.
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
    power_usage_span_s: float
    samples: int
    failures: int
    overruns: int
    lateness_p99_s: float | None
    notes: tuple[str, ...]

    def mean_w(self, energy_j: float | None, span_s: float | None = None) -> float | None:
        """Mean power over `span_s` (default: the run's span), watts."""
        span_s = self.span_s if span_s is None else span_s
        return energy_j / span_s if energy_j is not None and span_s > 0 else None

    def best_w(self) -> float | None:
        """The counter's mean power, else the field's."""
        return self.counter_w if self.counter_w is not None else self.mean_w(self.instant_j)

    def as_json(self) -> dict[str, Any]:
        """All fields plus mean powers and relative differences to the counter."""
        out = asdict(self)
        for name, span_s in (("instant", self.span_s), ("power_usage", self.power_usage_span_s)):
            out[f"{name}_w"] = power_w = self.mean_w(getattr(self, f"{name}_j"), span_s)
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


def analyse(runs: list[RunFigures], tol_rel: float, lock_min_rel: float) -> dict[str, Any]:
    """The decision from the sampled runs (see bench/gpu_check.py's docstring for the rule)."""
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
            controls[-1]["ok"] = abs(rel) <= tol_rel
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
            says, why = classify(counter_w, gain * instant_w, expected_w, tol_rel, lock_min_rel)
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


def _ms(value: float | None) -> str:
    return f"{value:.2f} ms" if value is not None else "-"


def _w(value: float | None) -> str:
    return f"{value:9.1f}" if value is not None else f"{'-':>9}"


def _pct(value: float | None) -> str:
    return f"{value:+8.2%}" if value is not None else f"{'-':>8}"


def _vs(run: dict[str, Any], label: str) -> str:
    """Trapezoid energies of a run against its counter energy, with the relative differences."""
    parts = []
    for key, name in (("instant_j", "field-186 trapezoid"), ("power_usage_j", "GetPowerUsage trapezoid")):
        if run[key] is not None:
            rel = (run[key] - run["counter_j"]) / run["counter_j"]
            parts.append(f"{name} {run[key]:.1f} J ({label}, {rel:+.2%})")
    return "; ".join(parts)


def print_table(report: dict[str, Any], echo: Callable[[str], None] = print) -> None:
    """The report as compact tables: GPUs, call costs, update periods, runs, locked runs, verdict."""
    for section in (_print_devices, _print_call_cost, _print_updates, _print_cadence, _print_runs):
        section(report, echo)
    _print_analysis(report, echo)
    cost = report.get("agent_cost")
    if cost:
        echo(
            f"\nstep time (matmul + sync): {cost['plain_step_ms']:.3f} ms without the agent, "
            f"{cost['agent_step_ms']:.3f} ms with it at {cost['period_s'] * 1e3:g} ms: "
            f"ratio {cost['ratio']:.4f}"
        )
    for skipped in report.get("skipped", []):
        echo(f"skipped: {skipped}")
    echo(f"elapsed {report.get('elapsed_s', 0):.1f} s of a {report['config']['budget_s']:g} s budget")


def _print_devices(report: dict[str, Any], echo: Callable[[str], None]) -> None:
    echo(f"NVML: {report.get('nvml', {})}")
    for d in report.get("devices", []):
        limit = f"{d['power_limit_w']:.0f} W" if d["power_limit_w"] else "limit ?"
        mark = "*" if d["uuid"] == report.get("target") else " "
        echo(f"{mark}[{d['index']}] {d['uuid']}  {d['name']}  source={d['source']}  {limit}  {d['note']}")
    if "error" in report:
        echo(f"error: {report['error']}")
    echo(f"load: {report.get('load', {})}")


def _print_call_cost(report: dict[str, Any], echo: Callable[[str], None]) -> None:
    if not report.get("call_cost"):
        return
    echo(f"\n{'NVML call (one GPU)':40} {'calls':>6} {'median us':>10} {'p99 us':>10} {'max us':>10}")
    for name, c in report["call_cost"].items():
        cells = [
            f"{c[k]:10.1f}" if c[k] is not None else f"{'-':>10}" for k in ("median_us", "p99_us", "max_us")
        ]
        echo(f"{name:40} {c['calls']:6d} {' '.join(cells)}  {c['error']}")


def _print_updates(report: dict[str, Any], echo: Callable[[str], None]) -> None:
    if "updates" not in report:
        return
    u = report["updates"]

    def ms(x: float | None) -> str:
        return f"{x * 1e3:.2f} ms" if x is not None else "-"

    echo(
        f"\nupdates under steady load (read every {u['poll_period_s'] * 1e3:g} ms): "
        f"counter every {ms(u['counter']['median_s'])} (fitted {ms(u['counter']['fitted_s'])}), "
        f"field 186 every {ms(u['power_field']['median_s'])} "
        f"(fitted {ms(u['power_field']['fitted_s'])})"
    )


def _print_cadence(report: dict[str, Any], echo: Callable[[str], None]) -> None:
    cadence = report.get("field_cadence")
    if not cadence:
        return
    for name in ("field 186 (power)", "field 83 (energy)"):
        f = cadence[name]
        echo(
            f"{name} timestamps: {f['publications']} publications, every {_ms(f['median_ms'])} "
            f"(p10 {_ms(f['p10_ms'])}, p90 {_ms(f['p90_ms'])})"
        )
    echo(
        f"reads per publication {cadence['reads_per_publication'] or 0:.1f}, "
        f"a value's age when read: median {_ms(cadence['age_median_ms'])}"
    )


def _print_runs(report: dict[str, Any], echo: Callable[[str], None]) -> None:
    runs = report.get("runs", [])
    if not runs:
        return
    src = next((d["source"] for d in report["devices"] if d["uuid"] == report["target"]), "?")
    trap = "simulated" if src == "simulated" else "sampled"
    echo(f"\nmean power, W (counter: {src}; field 186 and GetPowerUsage trapezoids at 25 ms: {trap})")
    echo(
        f"{'run':32} {'s':>6} {'counter':>9} {'field186':>9} {'GetPwrUsg':>9} {'186 vs c':>8} {'avg vs c':>8}"
    )
    for r in runs:
        echo(
            f"{r['name']:32} {r['span_s']:6.1f} {_w(r['counter_w'])} {_w(r['instant_w'])} "
            f"{_w(r['power_usage_w'])} {_pct(r['instant_vs_counter_rel'])} "
            f"{_pct(r['power_usage_vs_counter_rel'])}"
        )
    for r in runs:
        if r["role"] == "steady" and r["counter_j"]:
            echo(
                f"steady energy over {r['span_s']:.1f} s: counter {r['counter_j']:.1f} J ({src}); "
                + _vs(r, trap)
            )


def _print_analysis(report: dict[str, Any], echo: Callable[[str], None]) -> None:
    analysis = report.get("analysis")
    if not analysis:
        return
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
