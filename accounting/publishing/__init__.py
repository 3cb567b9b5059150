"""Publishing: the footprint, Table-19-style tables, their units and renderers, exports, validity, audit."""
