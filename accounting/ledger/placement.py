"""Rows the DEFAULT partition holds moved to their days, and days made ahead: `wattlog partitions`.

An agent whose role may not create partitions, or a bulk import of days that had none, leaves rows
in DEFAULT (ledger.day_plan): they read and count as any other, but their day can have no partition,
so compaction folds them by the slow DELETE path. The table's owner moves them, a day per
transaction, in the server (partitions.move_default_day), and can make a run's days ahead of it.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy.orm import Session

from wattlog.accounting.ledger.partitions import (
    can_create,
    create_days,
    day_partitions,
    default_rows,
    is_partitioned,
    move_default_day,
)
from wattlog.errors import LedgerError

Transaction = Callable[[str], AbstractContextManager[Session]]


@dataclass(frozen=True, slots=True)
class Placement:
    """What :func:`place` did: DEFAULT's rows moved per day, and the days created ahead."""

    partitioned: bool
    moved: dict[int, int]
    created: list[int]


def place(transaction: Transaction, first_day: int, ahead_days: int) -> Placement:
    """Move every day's rows out of DEFAULT, then create days first_day .. first_day + ahead_days.

    Raises:
        LedgerError: This role may not create partitions (name the table's owner's), or the database fails.
    """
    with transaction("list the rows in DEFAULT") as session:
        connection = session.connection()
        if not is_partitioned(connection):
            return Placement(partitioned=False, moved={}, created=[])
        if not can_create(connection):
            raise LedgerError(
                "this role may not create the energy table's partitions: run `wattlog partitions` as "
                "the table's owner (the role that ran the migrations)"
            )
        held = default_rows(connection)
        existing = set(day_partitions(connection))
    moved = {}
    for day in held:
        with transaction(f"move day {day}'s rows out of DEFAULT") as session:
            moved[day] = move_default_day(session, day)
    wanted = set(range(first_day, first_day + ahead_days + 1)) - existing - set(moved)
    with transaction(f"create {len(wanted)} days ahead") as session:
        created = create_days(session, wanted)
    return Placement(partitioned=True, moved=moved, created=sorted(created))
