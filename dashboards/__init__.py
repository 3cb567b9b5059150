"""dashboards package."""

from __future__ import annotations

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__: list[str] = []
