"""Text from outside (run, site, host names, notes quoting them) escaped for each output, one function each.

A run's name is whatever its user typed: on 38e5f82 `wattlog runs --format csv` printed
``=HYPERLINK(...)``, ``+cmd|...`` and ``@SUM(...)`` names raw for a spreadsheet to run, and
the notes under every table printed raw newlines, TAB, CR and ESC sequences (a name can
rewrite the terminal). Every renderer passes outside text through the function of its
output: :func:`for_terminal`, :func:`for_csv`, :func:`for_html`, :func:`for_markdown`,
:func:`for_latex`.
"""

from __future__ import annotations

import html

MISSING = "-"
"""The missing mark of every table (never taken for a formula)."""

_CONTROL = {i: f"\\x{i:02x}" for i in (*range(32), *range(127, 160))} | {9: "\\t", 10: "\\n", 13: "\\r"}
# bidirectional overrides and isolates reorder what a terminal shows (CVE-2021-42574, "Trojan Source")
_CONTROL |= {c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F)}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_MARKDOWN = {ord("|"): "\\|", ord("<"): "&lt;", ord(">"): "&gt;", ord("`"): "\\`"}
_LATEX = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
    "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip


def for_terminal(text: str) -> str:
    r"""`text` with control characters (C0, DEL, C1, ESC, bidi overrides) shown as escapes.

    >>> for_terminal("run\n1\x1b[2J")
    'run\\n1\\x1b[2J'
    """
    return text.translate(_CONTROL)


def for_csv(text: str) -> str:
    """A CSV cell: printable, and never read as a formula by a spreadsheet.

    A cell starting with = + - @ (or TAB, CR) is prefixed with ' (OWASP's CSV-injection
    advice); numbers (-1.5) and the missing mark (-) are left as they are.

    >>> for_csv("=1+1"), for_csv("@SUM(A1)"), for_csv("-"), for_csv("-1.5")
    ("'=1+1", "'@SUM(A1)", '-', '-1.5')
    """
    if text.startswith(_FORMULA_START) and text != MISSING and not _is_number(text):
        text = "'" + text
    return for_terminal(text)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def for_html(text: str) -> str:
    """Text for HTML content or a quoted attribute: markup characters and control characters escaped."""
    return html.escape(for_terminal(text), quote=True)


def for_markdown(text: str) -> str:
    """Text for a Markdown table cell or list item: one line, no pipe, no raw HTML, no code span."""
    return for_terminal(text).translate(_MARKDOWN)


def for_latex(text: str) -> str:
    """Text for LaTeX: control characters shown as escapes, then LaTeX's specials escaped."""
    return "".join(_LATEX.get(c, c) for c in for_terminal(text))
