"""The Streamlit carbon report: data.py reads the ledger (no Streamlit), app.py draws the page."""

from __future__ import annotations

__all__: list[str] = []
