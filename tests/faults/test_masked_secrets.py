"""Fault: a provider key holding `/`, `+`, a space, `&` or `=` printed URL-encoded in errors.

On 38e5f82 only the raw key and its `quote()` form were masked, but a key travels
form-encoded in a query (`quote_plus`), so `a%2Fb%2Bc+d%26e%3Df` was printed. Now one
function (wattlog/masking.py) masks every form, and credential headers and URL passwords.
"""

from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_httpserver import HTTPServer

from wattlog.accounting.carbon.intensity.live.client import HttpClient, ProviderError
from wattlog.masking import encodings, mask
from wattlog.telemetry.private import hide_password

KEY = "a/b+c d&e=f"


def test_a_key_with_url_characters_never_reaches_an_error(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/x").respond_with_data(f"bad key {urllib.parse.quote(KEY)}", status=403)
    client = HttpClient("p", httpserver.url_for(""), secrets=[KEY], retries=0)
    with pytest.raises(ProviderError) as caught:
        client.get_json("x", params={"api_key": KEY, "zone": "GB"})
    said = str(caught.value)
    assert "HTTP 403" in said and "zone=GB" in said
    assert not any(form in said for form in encodings(KEY)), said


def test_headers_urls_and_unknown_credentials_are_masked() -> None:
    assert mask("Authorization: Bearer abc.def") == "Authorization: Bearer ***"
    assert mask("{'X-Api-Key': 'k1'}") == "{'X-Api-Key': '***'}"
    assert mask("https://x/y?token=t0k&zone=DE") == "https://x/y?token=***&zone=DE"
    assert hide_password("postgresql://u:p%2Fw@db/w") == "postgresql://u:***@db/w"


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=6, max_size=40).filter(lambda s: s.strip() == s and len(set(s)) > 3))
def test_no_encoding_of_a_secret_survives(secret: str) -> None:
    for form in sorted(encodings(secret)):
        text = f"GET https://api/x?zone=GB&k={form} failed: {form}"
        assert secret not in mask(text, [secret])
        assert urllib.parse.quote_plus(secret) not in mask(text, [secret])
