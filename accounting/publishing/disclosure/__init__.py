"""Disclosure: one model of what was measured and how, and the published forms written from it.

- ``model``    Boundary, BoundaryEnergy, SiteFactors, PhaseFigures, Disclosure: the one model.
- ``gather``   disclosure_of_run / disclosure_of_project: the model from the ledger.
- ``mdf``      The EU AI Act Model Documentation Form's energy and compute items (Markdown).
- ``records``  JSON, SPDX 3.0 AI and CycloneDX 1.6 ML-BOM records.
- ``sci``      ISO/IEC 21031 Software Carbon Intensity per token and per FLOP (location-based).
- ``estimate`` Energy estimated from GPU-hours or from tokens, parameters and MFU, with a band.
- ``cards``    Checks of a published card's energy table (totals, tonnes, water, hours).
- ``cli``      ``wattlog disclose``, ``wattlog estimate``, ``wattlog card check``.
"""
