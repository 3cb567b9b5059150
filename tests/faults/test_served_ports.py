"""Fault: what anyone on the network can send to `wattlog webhook serve`.

On 38e5f82 400 kB of nested JSON made the receiver raise RecursionError and the client
got no answer; a client that stalled mid-body held Ctrl-C for ~5 s, and SIGTERM killed
the receiver without closing it. Now JSON deeper than 32 levels is a 400, and Ctrl-C and
SIGTERM close the receiver within 1 s whatever its clients do.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.dashboards.test_webhooks import TOKEN, post
from wattlog.accounting.ledger import Ledger, make_engine
from wattlog.dashboards.webhooks import AlertRecorder, Auth, WebhookReceiver
from wattlog.errors import UntrustedInput
from wattlog.untrusted import MAX_JSON_DEPTH, loads_json


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(
        AlertRecorder(Ledger(make_engine("sqlite://"))), Auth(token=TOKEN), port=0
    ) as server:
        yield server


def test_deeply_nested_json_gets_an_answer(receiver: WebhookReceiver) -> None:
    status, answer = post(receiver, b"[" * 200_000 + b"]" * 200_000)
    assert status == 400 and "nested deeper than 32 levels" in answer["error"]


def test_the_depth_is_counted_outside_strings_only() -> None:
    assert loads_json(b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\""}') == {"a": "[" * 40 + '"'}
    assert loads_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(UntrustedInput):
        loads_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2000) | st.text(alphabet='[]{}",:\\ 0a', max_size=2000))
def test_any_body_is_json_or_a_value_error(body: bytes | str) -> None:
    with contextlib.suppress(ValueError):  # json's own errors and UntrustedInput are ValueErrors
        loads_json(body)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_end_the_receiver_within_1_s(tmp_path: Path, signum: int) -> None:
    env = {**os.environ, "WATTLOG_WEBHOOK_TOKEN": TOKEN}
    command = [sys.executable, "-m", "wattlog", "webhook", "serve", "--port", "0"]
    server = subprocess.Popen(
        [*command, "--db", f"sqlite:///{tmp_path / 'w.db'}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        port = int(re.search(r":(\d+)/alerts", server.stdout.readline()).group(1))  # type: ignore[union-attr]
        stalled = socket.create_connection(("127.0.0.1", port))  # a client that stops mid-body
        stalled.sendall(b"POST /alerts HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        time.sleep(0.3)  # lets the worker take it: the stall being tested, not a wait before asserting
        started = time.monotonic()
        server.send_signal(signum)
        server.wait(10)
        took_s = time.monotonic() - started
        stalled.close()
    finally:
        server.kill()
        server.wait()
    assert server.returncode == 0 and took_s < 1.0, (server.returncode, took_s)
