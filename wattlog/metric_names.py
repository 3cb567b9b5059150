"""Every Prometheus metric name wattlog exports or reads, defined once.

Each member's value is the name as a PromQL query or a scrape's text spells it, so a
counter's value ends in ``_total``: prometheus_client's ``CounterMetricFamily`` strips
that suffix from the name it is given and adds it back when it exposes the samples, so
producers pass the member itself. Exporters, the Prometheus reader, the trainer's join
on its agent and the dashboards' PromQL builders all use these members;
tests/test_metric_names.py checks that no other product module spells a
``wattlog_`` name and that the shipped rules and dashboards name only these.

Recording rules (``wattlog:...``) are not here: rules.yml and sites.rules.yml define them.
"""

from __future__ import annotations

from enum import StrEnum


class MetricName(StrEnum):
    """The closed set of ``wattlog_`` series names (base units, DESIGN.md "Prometheus naming")."""

    # telemetry: one series per device (labels host, device, kind, source, run)
    ENERGY_JOULES_TOTAL = "wattlog_energy_joules_total"
    ENERGY_UNCERTAINTY_JOULES = "wattlog_energy_uncertainty_joules"
    POWER_WATTS = "wattlog_power_watts"
    POWER_LIMIT_WATTS = "wattlog_power_limit_watts"
    DEVICE_SAMPLES_TOTAL = "wattlog_device_samples_total"
    GAPS_TOTAL = "wattlog_gaps_total"
    GAP_SECONDS_TOTAL = "wattlog_gap_seconds_total"
    DEVICE_LOST = "wattlog_device_lost"
    DEVICE_INFO = "wattlog_device_info"
    # telemetry: the sampler's and the agent's own health (labels host, run)
    SAMPLES_TOTAL = "wattlog_samples_total"
    SENSOR_READS_TOTAL = "wattlog_sensor_reads_total"
    SAMPLE_ERRORS_TOTAL = "wattlog_sample_errors_total"
    SAMPLE_OVERRUNS_TOTAL = "wattlog_sample_overruns_total"
    SAMPLE_PERIOD_SECONDS = "wattlog_sample_period_seconds"
    SAMPLE_LATENESS_SECONDS = "wattlog_sample_lateness_seconds"
    SAMPLER_RUNNING = "wattlog_sampler_running"
    SAMPLER_CPU_SECONDS_TOTAL = "wattlog_sampler_cpu_seconds_total"
    AGENT_FINISHED = "wattlog_agent_finished"
    SINK_ROWS_TOTAL = "wattlog_sink_rows_total"
    SINK_REJECTED_ROWS_TOTAL = "wattlog_sink_rejected_rows_total"
    SINK_DROPPED_ROWS_TOTAL = "wattlog_sink_dropped_rows_total"
    SINK_FAILURES_TOTAL = "wattlog_sink_failures_total"
    # trainer: one series per rank (labels run, rank, host)
    TRAIN_TOKENS_TOTAL = "wattlog_train_tokens_total"
    TRAIN_STEP = "wattlog_train_step"
    TRAIN_LOSS = "wattlog_train_loss"
    TRAIN_GRAD_NORM = "wattlog_train_grad_norm"
    TRAIN_LOSS_SCALE = "wattlog_train_loss_scale"
    TRAIN_TOKENS_PER_SECOND = "wattlog_train_tokens_per_second"
    TRAIN_TOKENS_PER_JOULE = "wattlog_train_tokens_per_joule"
    TRAIN_MFU_RATIO = "wattlog_train_mfu_ratio"
    TRAIN_EVENTS_TOTAL = "wattlog_train_events_total"
    BOOKKEEPING_DROPPED_TOTAL = "wattlog_bookkeeping_dropped_total"
    BOOKKEEPING_FAILURES_TOTAL = "wattlog_bookkeeping_failures_total"
    # provided by the user (a recording rule or the Pushgateway), read by rules.yml: see USER_PROVIDED
    RUN_PLANNED_TOKENS = "wattlog_run_planned_tokens"
    RUN_CO2_BUDGET_TONNES = "wattlog_run_co2_budget_tonnes"


class OtelName(StrEnum):
    """The OpenTelemetry metric names the OTLP exporter emits (semantic conventions, hardware namespace).

    Source: https://opentelemetry.io/docs/specs/semconv/hardware/common/ (``hw.energy``, a counter
    in J; ``hw.power``, a gauge in W; status Development) and .../hardware/host/ (``hw.host.*``:
    a whole host's figures go there only, so they are never summed with its components').
    """

    HW_ENERGY = "hw.energy"
    HW_POWER = "hw.power"
    HW_HOST_ENERGY = "hw.host.energy"
    HW_HOST_POWER = "hw.host.power"


USER_PROVIDED = frozenset({MetricName.RUN_PLANNED_TOKENS, MetricName.RUN_CO2_BUDGET_TONNES})
"""Names wattlog reads but never exports: without them projections and the budget alert stay empty."""

__all__ = ["USER_PROVIDED", "MetricName", "OtelName"]
