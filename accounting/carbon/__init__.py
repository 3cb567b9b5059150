"""Carbon: intensity sources and providers, sites, grids, Scope 2, market, grid water."""
