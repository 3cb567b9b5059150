"""The accounting commands: every `wattlog` command registered from accounting/."""
