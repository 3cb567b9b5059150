"""A run started again under a name the ledger has: a new attempt under the next free name.

Re-running a training script is what engineers do dozens of times a day, so a
name that exists is not an error: ``my-run`` exists, so this run is recorded
as ``my-run-2`` (then ``my-run-3``...), and one line says so and how to
continue the first one instead (``resume=True``, ``--resume``).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import col

from wattlog.accounting.ledger import Ledger
from wattlog.accounting.ledger.models import Run

__all__ = ["MAX_ATTEMPTS", "free_run_name", "new_attempt_line"]

MAX_ATTEMPTS = 10_000
"""Suffixes tried before giving up (the ledger then refuses the name as before)."""


def free_run_name(ledger: Ledger, name: str) -> str:
    """The first of ``name-2``, ``name-3``, ... that the ledger has no run of (`name` if all are taken).

    Args:
        ledger: The ledger.
        name: The run name that exists.
    """
    with ledger.transaction(f"find a free name after {name!r}") as session:
        query = select(col(Run.name)).where(col(Run.name).startswith(f"{name}-", autoescape=True))
        taken = set(session.execute(query).scalars())
    for n in range(2, MAX_ATTEMPTS):
        candidate = f"{name}-{n}"
        if candidate not in taken:
            return candidate
    return name


def new_attempt_line(first: str, new: str) -> str:
    """The one line that says a re-run became a new run, and how to continue the first instead."""
    return (
        f"run {first} exists, so this one is recorded as {new}; to continue {first} instead, "
        "pass resume=True (Python) or --resume (wattlog run)"
    )
