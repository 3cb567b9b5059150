"""Commands: the accounting CLI modules, each with its `register(app)`."""
