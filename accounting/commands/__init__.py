"""Commands: the `wattlog` subcommands of accounting (each module a `register(app)`)."""
