"""The audit bundle: a run's rows, band revisions, gaps, events and figures in one file anyone can check.

- ``bundle``    build_bundle / verify_bundle / write_series: the bundle written, and read back and checked.
- ``contents``  What the bundle holds beside the rows (site, intensity, options, series), read back.
- ``rows``      The energy rows, one file per column, coded exactly in a few bytes a row.
- ``series``    Power and counter series per device, and their digest, from the rows.
- ``files``     The tar.xz with its SHA-256 manifest, and its members read back under caps (untrusted input).
"""
