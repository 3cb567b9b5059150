"""Publishing: what leaves wattlog (tables, exports, audit bundles, disclosures), with sources and bands."""
