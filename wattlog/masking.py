"""One masking function for every place a secret could be printed: URLs, headers and errors.

A key may reach a message as itself or encoded the way it travelled: percent-encoded
in a path (``quote``), form-encoded in a query (``quote_plus``: a space becomes ``+``,
``/`` becomes ``%2F``), with lower- or upper-case hex, or base64 in a Basic header.
On 38e5f82 a key holding ``/``, ``+``, a space, ``&`` or ``=`` was masked only raw, so
errors printed it URL-encoded. :func:`mask` replaces every such form by ``***``, and
also the password of a URL's ``user:password@`` and the value of credential headers
and query parameters, known or not.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Iterable

HIDDEN = "***"
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*):[^@\s]*@")
_HEADER = re.compile(
    r"(?P<name>\b(?:authorization|proxy-authorization|x-api-key|auth-token|api-key|x-wattlog-signature)"
    r"['\"]?\s*[:=]\s*['\"]?)(?P<scheme>(?:bearer|basic|token)\s+)?[^\s,;'\"]+",
    re.IGNORECASE,
)
_QUERY = re.compile(
    r"(?P<name>[?&](?:api_?key|apikey|token|access_token|password|secret|key)=)[^&#\s'\"]+", re.IGNORECASE
)


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each of `secrets` (in every encoding it may travel in) and any credential as ***.

    Args:
        text: A message, URL, header line or error text.
        secrets: Values known to be secret (keys, tokens, passwords); empty ones are ignored.

    >>> mask("GET https://api/x?key=a%2Fb+c failed", ["a/b c"])
    'GET https://api/x?key=*** failed'
    >>> mask("http://ops:s3cret@gw:9091/metrics")
    'http://ops:***@gw:9091/metrics'
    """
    for form in sorted({f for s in secrets if s for f in encodings(s)}, key=len, reverse=True):
        text = text.replace(form, HIDDEN)
    text = _USERINFO.sub(rf"\g<scheme>\g<user>:{HIDDEN}@", text)
    text = _HEADER.sub(lambda m: f"{m['name']}{m['scheme'] or ''}{HIDDEN}", text)
    return _QUERY.sub(rf"\g<name>{HIDDEN}", text)


def encodings(secret: str) -> set[str]:
    """The forms `secret` can take in a URL, a form, a header or a log line (itself included)."""
    forms = {
        secret,
        urllib.parse.quote(secret),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        urllib.parse.quote_plus(secret, safe=""),
        repr(secret)[1:-1],
        base64.b64encode(secret.encode()).decode(),
    }
    forms |= {re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), form) for form in forms}
    return {form for form in forms if form}
