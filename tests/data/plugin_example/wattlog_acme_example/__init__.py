"""A third party's wattlog plugin: the Acme accelerator and Acme's grid intensity (a test fixture)."""
