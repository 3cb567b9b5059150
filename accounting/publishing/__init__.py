"""Publishing: what leaves the ledger (footprint, tables, render, units, exports, validity, audit bundle)."""
