"""Fixtures that start real servers (Prometheus, Alertmanager, Pushgateway) on 127.0.0.1.

`servers` hands out starters and stops everything it started at teardown. A
missing binary skips the test with the apt-get line to run, except in CI (env
CI set), where it fails: CI installs them, so a missing one is a broken setup.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.integration import servers as srv


class Servers:
    """Starts servers in per-server folders under one temp dir and remembers them for teardown."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._started: list[srv.Server] = []

    def _folder(self, name: str) -> Path:
        return self._root / f"{name}-{len(self._started)}"

    def prometheus(self, targets: Sequence[str] = (), **options: Any) -> srv.Prometheus:
        """See :func:`tests.integration.servers.start_prometheus`."""
        return self._keep(lambda: srv.start_prometheus(self._folder("prometheus"), targets, **options))

    def victoria_metrics(self) -> srv.Prometheus:
        """See :func:`tests.integration.servers.start_victoria_metrics`."""
        return self._keep(lambda: srv.start_victoria_metrics(self._folder("victoria-metrics")))

    def alertmanager(self, config: str | Mapping[str, Any]) -> srv.Server:
        """See :func:`tests.integration.servers.start_alertmanager`."""
        return self._keep(lambda: srv.start_alertmanager(self._folder("alertmanager"), config))

    def pushgateway(self) -> srv.Server:
        """See :func:`tests.integration.servers.start_pushgateway`."""
        return self._keep(lambda: srv.start_pushgateway(self._folder("pushgateway")))

    def _keep(self, start: Any) -> Any:
        try:
            server = start()
        except srv.BinaryMissing as missing:
            if os.environ.get("CI"):
                pytest.fail(f"{missing} (CI installs it: the setup is broken)")
            pytest.skip(str(missing))
        self._started.append(server)
        return server

    def stop_all(self) -> None:
        """Stop every server started here, newest first."""
        while self._started:
            self._started.pop().stop()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    """Start real servers with `servers.prometheus(targets)`, `.alertmanager(cfg)`, `.pushgateway()`."""
    started = Servers(tmp_path / "servers")
    try:
        yield started
    finally:
        started.stop_all()
