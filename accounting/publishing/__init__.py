"""Publishing: footprint, Table 19 and project tables, exports, validity, the audit bundle."""
