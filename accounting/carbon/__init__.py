"""Carbon: intensity sources and providers, sites, Scope 2 and market matching, grid water."""
