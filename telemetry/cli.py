"""Telemetry commands: `wattlog sensors` and `wattlog agent`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the telemetry commands to the root app."""
    del app  # commands are added by the sensors and agent modules as they land
