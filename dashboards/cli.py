"""Dashboards commands: `wattlog dashboards build|provision`, `wattlog webhook serve|send`, `wattlog report`.

Only typer is imported here; each command imports what it needs (grafana-client,
the HTTP server, streamlit) when it runs, so `wattlog --help` stays light.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the dashboards, webhook and report commands to the root app."""
    dashboards = typer.Typer(
        name="dashboards", help="Grafana dashboards: build the JSON, provision Grafana.", no_args_is_help=True
    )
    dashboards.command("build")(build)
    dashboards.command("provision")(provision)
    app.add_typer(dashboards)


def build(check: bool = typer.Option(False, "--check", help="Exit 1 if the committed JSON is stale.")) -> int:
    """Write dashboards/grafana/*.json from the code (or check that they are up to date)."""
    from dashboards.build import main

    return main(["--check"] if check else [])


def provision(
    url: str = typer.Option(..., "--url", help="Grafana's base URL, e.g. http://127.0.0.1:3000."),
    prometheus_url: str = typer.Option(
        "http://prometheus:9090", help="Prometheus URL as Grafana's server sees it."
    ),
    folder: str = typer.Option("wattlog", help="uid and title of the dashboards' folder."),
) -> None:
    """Create or update the data source, folder and dashboards in Grafana (token from $GRAFANA_TOKEN)."""
    from dashboards.provision import ProvisionConfig, Provisioner, connect

    config = ProvisionConfig(prometheus_url=prometheus_url, folder_uid=folder, folder_title=folder)
    for done in Provisioner(connect(url), config).run():
        print(f"{done.kind} {done.uid}: {done.outcome}")
