"""The OpenTelemetry exporter: the agent's snapshots as OTLP metrics (``pip install 'wattlog[otlp]'``).

Observability stacks that speak OTLP rather than Prometheus (VictoriaMetrics >= 1.92,
Prometheus >= 2.47 with its OTLP receiver, an OpenTelemetry Collector, most vendors) get
the same figures the Prometheus exporter serves, named by the semantic conventions
(:class:`~wattlog.metric_names.OtelName`):

- ``hw.energy`` (J): a cumulative sum per device (kinds gpu, cpu, dram), monotonic;
- ``hw.power`` (W): a gauge per device, only where the device gave a reading (never 0 for missing);
- ``hw.host.energy`` / ``hw.host.power``: the node boundary (kind node), kept apart from the
  components as the conventions require, so a backend never sums a host with its own GPUs.

Point attributes are the conventions' ``hw.id`` (the device UUID), ``hw.type`` (gpu, cpu,
memory), ``hw.name`` and ``hw.vendor`` (where known), plus ``wattlog.source``
(counter|sampled|estimated|simulated: an estimate never passes for a measurement). The
resource carries ``host.name``, ``service.name`` and the run (``wattlog.run``).

Like the scrape collectors, the callbacks read the snapshot function they are handed and
never touch hardware. Constructors do no I/O; start() builds the meter provider and the
periodic reader's thread, and close() exports one last time (after the agent's final
reading, when the composition root closes the agent first).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wattlog.errors import ConfigError
from wattlog.extras import require
from wattlog.http_adapters import bounded_session
from wattlog.metric_names import OtelName
from wattlog.records import Kind
from wattlog.telemetry.types import DeviceEnergy

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Observation
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader

log = logging.getLogger(__name__)

HW_TYPE = {Kind.GPU: "gpu", Kind.CPU: "cpu", Kind.DRAM: "memory", Kind.NODE: "host"}
"""wattlog's device kind -> the conventions' ``hw.type`` (its well-known values name DRAM ``memory``)."""

SCOPE = "wattlog.telemetry.otlp"
_MAX_ANSWER_BYTES = 1 << 20  # a collector answers an ExportMetricsServiceResponse: a few bytes


@dataclass
class OtlpConfig:
    """Where and how often the agent's figures go over OTLP/HTTP."""

    endpoint: str
    """The receiver's metrics URL, e.g. ``http://collector:4318/v1/metrics`` (OTLP/HTTP, protobuf)."""
    interval_s: float = 10.0
    """Seconds between exports (cumulative values: a lost export loses no energy, only resolution)."""
    timeout_s: float = 10.0
    """Seconds one export may take before it is given up (the next export carries the totals)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers (an ingestion token, a tenant id)."""

    def __post_init__(self) -> None:
        if not self.endpoint.startswith(("http://", "https://")):
            raise ConfigError(f"OTLP endpoint {self.endpoint!r}: give an http:// or https:// URL")
        if self.interval_s <= 0 or self.timeout_s <= 0:
            raise ConfigError("OTLP interval_s and timeout_s must be > 0")


def _attributes(row: DeviceEnergy) -> dict[str, str]:
    d = row.device
    out = {"hw.id": d.uuid, "hw.type": HW_TYPE[d.kind], "hw.name": d.name, "wattlog.source": str(d.source)}
    if d.vendor is not None:
        out["hw.vendor"] = str(d.vendor)
    return out


class OtlpExport:
    """The agent's energy and power as OTLP metrics, exported periodically and once more at close().

    Args:
        snapshot: Returns the latest cumulative energy per device (no hardware access).
        host: The resource's ``host.name``.
        run: The resource's ``wattlog.run`` ("" for a plain agent: left out).
        config: Endpoint and interval; ignored when `reader` is given.
        reader: A metric reader to use instead of the OTLP/HTTP one (tests: ``InMemoryMetricReader``).
    """

    def __init__(
        self,
        snapshot: Callable[[], Sequence[DeviceEnergy]],
        host: str,
        run: str = "",
        config: OtlpConfig | None = None,
        *,
        reader: MetricReader | None = None,
    ) -> None:
        if config is None and reader is None:
            raise ConfigError("OtlpExport needs an OtlpConfig (endpoint) or a metric reader")
        self._snapshot = snapshot
        self._host = host
        self._run = run
        self._config = config
        self._reader = reader
        self._provider: MeterProvider | None = None
        self._last_export_ok = True

    def start(self) -> OtlpExport:
        """Build the meter provider, its instruments and reader (starts the export thread); returns self."""
        user = "the OTLP exporter"
        sdk_metrics = require("opentelemetry.sdk.metrics", "otlp", user)
        resources = require("opentelemetry.sdk.resources", "otlp", user)
        attributes = {"host.name": self._host, "service.name": "wattlog"}
        if self._run:
            attributes["wattlog.run"] = self._run
        reader = self._reader if self._reader is not None else self._http_reader()
        provider = sdk_metrics.MeterProvider(
            metric_readers=[reader], resource=resources.Resource.create(attributes)
        )
        meter = provider.get_meter(SCOPE)
        for name, unit, doc, host, energy in (
            (OtelName.HW_ENERGY, "J", "Energy consumed by the component.", False, True),
            (OtelName.HW_POWER, "W", "Latest power reading of the component.", False, False),
            (OtelName.HW_HOST_ENERGY, "J", "Energy consumed by the host (node boundary).", True, True),
            (OtelName.HW_HOST_POWER, "W", "Latest power reading of the host (node boundary).", True, False),
        ):
            make = meter.create_observable_counter if energy else meter.create_observable_gauge
            make(str(name), callbacks=[self._callback(host, energy)], unit=unit, description=doc)
        self._provider = provider
        return self

    def _http_reader(self) -> MetricReader:
        assert self._config is not None
        cfg = self._config
        exporter_module = require("opentelemetry.exporter.otlp.proto.http.metric_exporter", "otlp")
        export = require("opentelemetry.sdk.metrics.export", "otlp")
        requests = require("requests", "otlp")
        # requests' timeout bounds each read: the adapter bounds each whole answer and its size
        session = bounded_session(requests.Session(), max_bytes=_MAX_ANSWER_BYTES, timeout_s=cfg.timeout_s)
        exporter = exporter_module.OTLPMetricExporter(
            endpoint=cfg.endpoint, headers=dict(cfg.headers), timeout=cfg.timeout_s, session=session
        )
        # The periodic reader logs a refused export and still reports its flush as done: keep the
        # exporter's own verdict, so close() can say the last figures did not arrive.
        send = exporter.export

        def export_and_note(*args: Any, **kwargs: Any) -> Any:
            result = send(*args, **kwargs)
            self._last_export_ok = result is export.MetricExportResult.SUCCESS
            return result

        exporter.export = export_and_note
        return export.PeriodicExportingMetricReader(  # type: ignore[no-any-return]
            exporter, export_interval_millis=cfg.interval_s * 1000, export_timeout_millis=cfg.timeout_s * 1000
        )

    def _callback(self, host: bool, energy: bool) -> Callable[[CallbackOptions], Iterable[Observation]]:
        observation = require("opentelemetry.metrics", "otlp").Observation

        def observe(options: CallbackOptions) -> Iterable[Observation]:
            for row in self._snapshot():
                if (row.device.kind is Kind.NODE) != host:
                    continue
                value = row.energy_j if energy else row.power_w
                if value is not None:  # a device without a power reading has no point, never a 0
                    yield observation(value, _attributes(row))

        return observe

    def collect_now(self) -> bool:
        """Export the current figures now (blocking); False if the export failed or timed out."""
        return self._provider is not None and self._provider.force_flush() and self._last_export_ok

    def close(self) -> bool:
        """Export the last figures and stop the reader (idempotent); False if that last export failed."""
        provider, self._provider = self._provider, None
        if provider is None:
            return True
        flushed = provider.force_flush() and self._last_export_ok
        provider.shutdown()
        if not flushed:
            log.warning(
                "the last OTLP export did not reach %s",
                self._config.endpoint if self._config else "the reader",
            )
        return flushed

    def __enter__(self) -> OtlpExport:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["HW_TYPE", "OtlpConfig", "OtlpExport"]
