"""The accounting commands (`wattlog ...`), one module per command group."""
