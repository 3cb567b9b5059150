"""Dashboards commands: `wattlog dashboards build|provision`, `wattlog webhook serve|send`, `wattlog report`.

Only typer is imported here; each command imports what it needs (grafana-client,
the HTTP server, streamlit) when it runs, so `wattlog --help` stays light.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import typer

from wattlog.help_layout import PLAIN_HELP
from wattlog.options import DbOption


def register(app: typer.Typer) -> None:
    """Add the dashboards, webhook and report commands to the root app."""
    dashboards = typer.Typer(
        name="dashboards",
        help="Grafana dashboards: build the JSON, provision Grafana.",
        no_args_is_help=True,
        **PLAIN_HELP,
    )
    dashboards.command("build")(build)
    dashboards.command("provision")(provision)
    app.add_typer(dashboards)
    webhook = typer.Typer(
        name="webhook",
        help="Receive alerts into the ledger; send wattlog's events out.",
        no_args_is_help=True,
        **PLAIN_HELP,
    )
    webhook.command("serve")(serve)
    webhook.command("send")(send)
    app.add_typer(webhook)
    app.command("report")(report)


def build(check: bool = typer.Option(False, "--check", help="Exit 1 if the committed JSON is stale.")) -> int:
    """Write dashboards/grafana/*.json from the code (or check that they are up to date)."""
    from wattlog.dashboards.build import main

    return main(["--check"] if check else [])


def provision(
    url: str = typer.Option(..., "--url", help="Grafana's base URL, e.g. http://127.0.0.1:3000."),
    prometheus_url: str = typer.Option(
        "http://prometheus:9090", help="Prometheus URL as Grafana's server sees it."
    ),
    folder: str = typer.Option("wattlog", help="uid and title of the dashboards' folder."),
) -> None:
    """Create or update the data source, folder and dashboards in Grafana (token from $GRAFANA_TOKEN)."""
    from wattlog.dashboards.provision import ProvisionConfig, Provisioner, connect

    config = ProvisionConfig(prometheus_url=prometheus_url, folder_uid=folder, folder_title=folder)
    for done in Provisioner(connect(url), config).run():
        print(f"{done.kind} {done.uid}: {done.outcome}")


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(9465, help="Port to listen on."),
    db: DbOption = None,
) -> None:
    """Receive Alertmanager/Grafana webhooks on POST /alerts and record each alert in the ledger.

    Credentials come from the environment only: WATTLOG_WEBHOOK_TOKEN (bearer) and/or
    WATTLOG_WEBHOOK_SECRET (HMAC-SHA256 of the body in X-Wattlog-Signature).
    """
    import contextlib
    import signal
    import threading

    from wattlog.accounting.ledger import Ledger, describe_url, make_engine
    from wattlog.dashboards.webhooks import AlertRecorder, Auth, WebhookReceiver
    from wattlog.numbers import check_port

    check_port("--port", port)
    log_alerts()
    auth = Auth.from_env()
    ledger = Ledger(make_engine(db))
    # Ctrl-C and SIGTERM close it at once (even started where SIGINT was ignored, as `cmd &` does); a
    # handler that does not return is waited for 2 s, so a loaded machine is not mistaken for a stuck one
    before = {
        signum: signal.signal(signum, signal.default_int_handler)
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        with WebhookReceiver(
            AlertRecorder(ledger), auth, host=host, port=port, close_timeout_s=2.0
        ) as receiver:
            print(
                f"receiving alerts on {receiver.url}/alerts into {describe_url(db)} (Ctrl-C stops)",
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                # waits in slices: Ctrl-C may reach a worker thread, and then a wait without a
                # timeout never returns to run the main thread's handler
                while not threading.Event().wait(0.5):
                    pass
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def log_alerts() -> logging.Logger:
    """Show the receiver's line per alert (accepted or rejected) on stderr, with the time (UTC).

    The root CLI logs warnings only; a receiver that says nothing about what arrives cannot be
    checked, so `webhook serve` turns its own module's INFO lines on.
    """
    logger = logging.getLogger("wattlog.dashboards.webhooks")
    logger.setLevel(logging.INFO)
    if not any(getattr(h, "name", "") == "wattlog-webhook-serve" for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.set_name("wattlog-webhook-serve")
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%dT%H:%M:%SZ")
        formatter.converter = time.gmtime
        handler.setFormatter(formatter)
        logger.addHandler(handler)
        logger.propagate = False  # one line per alert, not a second copy through the root's handler
    return logger


def send(
    run: str = typer.Option(..., "--run", help="Run whose events to send."),
    url: str = typer.Option(
        "",
        "--url",
        envvar="WATTLOG_NOTIFY_URL",
        show_default=False,
        help="Webhook URL (or $WATTLOG_NOTIFY_URL, better for URLs holding a secret).",
    ),
    slack: bool = typer.Option(False, "--slack", help='Slack-compatible body ({"text": ...}).'),
    attempts: int = typer.Option(4, help="Tries per event, with exponential backoff."),
    db: DbOption = None,
) -> None:
    """Send a run's instability events and failed health checks to a webhook.

    A bearer token and an HMAC secret for the target come from $WATTLOG_NOTIFY_TOKEN and
    $WATTLOG_NOTIFY_SECRET, never from the command line.
    """
    import os

    from wattlog.accounting.ledger import Ledger, make_engine
    from wattlog.accounting.ledger.lease import reap_before_reading
    from wattlog.dashboards.notify import Notifier, events_to_send
    from wattlog.errors import ConfigError
    from wattlog.numbers import check_number

    check_number("--attempts", attempts, low=1, high=100, hint="e.g. 4")
    if not url:
        raise ConfigError("give --url or set WATTLOG_NOTIFY_URL")
    notifier = Notifier(
        url,
        style="slack" if slack else "json",
        attempts=attempts,
        token=os.environ.get("WATTLOG_NOTIFY_TOKEN", ""),
        secret=os.environ.get("WATTLOG_NOTIFY_SECRET", ""),
    )
    ledger = Ledger(make_engine(db))
    reap_before_reading(ledger)  # a run whose agent died is closed as lost: that is news too
    events = events_to_send(ledger.events(run), ledger.get_run(run).name)
    for event in events:
        notifier.send(event)
    print(f"sent {len(events)} events of run {run}")


def streamlit_command(host: str, port: int, app: Path | None = None) -> list[str]:
    """The `streamlit run` command line of the carbon report, or of another page `app` served the same
    way (bench.report_speed's floor), headless, with no usage statistics."""
    app = app or Path(__file__).parent / "report" / "app.py"
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        # No file watcher: it re-walks every imported module's path after each page's script run
        # (~0.4 s of the server's CPU per view here), a development feature a served report never uses.
        "--server.fileWatcherType",
        "none",
    ]


def report(
    db: DbOption = None,
    port: int = typer.Option(8501, help="Port of the report."),
    host: str = typer.Option("127.0.0.1", help="Address to serve on (loopback unless you mean to share it)."),
    grafana: str = typer.Option(
        "",
        "--grafana",
        envvar="WATTLOG_GRAFANA_URL",
        show_default=False,
        help="Base URL of the Grafana with wattlog's boards: each report links to its run there.",
    ),
) -> int:
    """Serve the carbon report (Streamlit) on the ledger: http://HOST:PORT.

    A run's report is http://HOST:PORT/?run=NAME (the boards' links open it). Ctrl-C or SIGTERM
    stops the Streamlit server with it (exit 130 or 143, by shell convention).
    """
    import os

    from wattlog.accounting.ledger import ENV_VAR, describe_url
    from wattlog.extras import MissingExtra, installed
    from wattlog.telemetry.supervise import Supervisor

    if not installed("streamlit"):  # before the URL: a report that cannot start has no address
        raise MissingExtra("streamlit", "dashboards", "wattlog report")
    env = {**os.environ, ENV_VAR: db} if db else dict(os.environ)
    if grafana:
        env["WATTLOG_GRAFANA_URL"] = grafana  # the page reads it (report/app.py, GRAFANA_ENV)
    print(f"carbon report of {describe_url(db)} on http://{host}:{port} (Ctrl-C stops)", flush=True)
    with Supervisor(grace_s=5.0) as supervisor:
        outcome = supervisor.run(streamlit_command(host, port), env=env)
    if outcome.message:
        print(f"wattlog report: {outcome.message}", file=sys.stderr)
    return outcome.exit_code
