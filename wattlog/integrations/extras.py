"""Optional dependencies of the integrations: :mod:`wattlog.extras`, re-exported where they began."""

from __future__ import annotations

from wattlog.extras import MissingExtra, require

__all__ = ["MissingExtra", "require"]
