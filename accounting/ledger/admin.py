"""Keeping the ledger tidy: relabel a run (its role), rename it, or delete it with all its rows.

Each change is one transaction: it lands whole or not at all. Deleting finds
the rows to remove from the tables' foreign keys to ``run.id``, so a table
added later (with its foreign key) is deleted with its run without a change here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Table, delete, func, select
from sqlalchemy.orm import Session
from sqlmodel import SQLModel, col

from wattlog.accounting.ledger.models import Role, Run, Status
from wattlog.accounting.ledger.reader import find_run
from wattlog.accounting.ledger.runs import member
from wattlog.accounting.ledger.spool_lines import run_key
from wattlog.accounting.ledger.store import Ledger
from wattlog.accounting.ledger.views import RunInfo
from wattlog.errors import ConfigError, LedgerError, RunNotFound

_NAME_LIMIT = 200  # Run.name's column width


@dataclass(frozen=True, slots=True)
class Deleted:
    """What deleting a run removed.

    Attributes:
        run: The run as it was.
        rows: Rows removed per table (the run's own row not counted), tables with none left out.
    """

    run: RunInfo
    rows: dict[str, int]

    def line(self) -> str:
        """One line: "run r1 deleted with 12 energy_record, 3 event rows"."""
        parts = [f"{count} {table}" for table, count in sorted(self.rows.items())]
        return f"run {self.run.name} deleted" + (f" with {', '.join(parts)} rows" if parts else " (no rows)")


def relabel_run(ledger: Ledger, run: int | str, role: Role | str) -> RunInfo:
    """Set a run's role (final: a Table 19 row; development and the others: the project's development).

    The run's phase then follows its role (a phase recorded at start is cleared: it said the opposite).

    Raises:
        ConfigError: An unknown role.
        RunNotFound: No such run.
    """
    checked = member(Role, role, "role")
    with ledger.transaction(f"relabel run {run!r}") as session:
        row = find_run(session, run)
        row.role = checked.value
        row.phase = ""
        session.flush()
        return RunInfo.of(row)


def rename_run(ledger: Ledger, run: int | str, new_name: str) -> RunInfo:
    """Give a run another name (its id, rows and history stay).

    Raises:
        ConfigError: An empty or too long name.
        LedgerError: Another run has that name.
        RunNotFound: No such run.
    """
    name = new_name.strip()
    if not name or len(name) > _NAME_LIMIT:
        raise ConfigError(f"a run name has 1 to {_NAME_LIMIT} characters, got {new_name!r}")
    with ledger.transaction(f"rename run {run!r}") as session:
        row = find_run(session, run)
        taken = session.execute(select(Run).where(col(Run.name) == name)).scalars().first()
        if taken is not None and taken.id != row.id:
            raise LedgerError(f"a run named {name!r} exists already: choose another name")
        row.name = name
        session.flush()
        return RunInfo.of(row)


def run_deleted(error: BaseException, run: int | str) -> bool:
    """Whether `error` says that the run a writer writes by id is gone: deleted (`--force`) while live.

    A run written by name (its start spooled while the ledger was down) is no such case: replay creates it.
    """
    return isinstance(error, RunNotFound) and isinstance(run, int)


def set_aside_if_deleted(path: Path, runs: Iterable[str], error: LedgerError) -> str | None:
    """Set a spool file of a deleted run aside (`<file>.deleted-run`, never replayed); a note, or None.

    Its rows have no run to go to: replaying it would fail on every try.
    """
    if not all(run_deleted(error, run_key(run)) for run in runs):
        return None
    aside = path.rename(path.with_name(path.name + ".deleted-run"))
    return f"{path}: its run was deleted from the ledger ({error}); set aside as {aside}"


class RunLive(LedgerError):
    """The run is still being written (its lease is held): deleting it needs `force`."""


def delete_run(ledger: Ledger, run: int | str, *, force: bool = False) -> Deleted:
    """Delete a run and every row that belongs to it (energy, gaps, events, windows, nodes, ranks).

    A run whose agent still holds its lease is refused unless `force`: its writer would go on
    writing rows to a run that is gone (each refused, its spool dropped with a note).

    Raises:
        RunLive: The run is being written and `force` is False.
        RunNotFound: No such run.
        LedgerError: The database fails (nothing is deleted).
    """
    now_s = ledger.wall_s()
    with ledger.transaction(f"delete run {run!r}") as session:
        row = find_run(session, run)
        lease_s = row.lease_until_s
        if not force and row.status == Status.RUNNING.value and lease_s is not None and lease_s > now_s:
            raise RunLive(
                f"run {row.name} is being written (its agent holds its lease for {lease_s - now_s:.0f} s "
                "more): stop it first, or pass --force (its later rows are then refused)"
            )
        info = RunInfo.of(row)
        removed = {
            table.name: count for table in _run_tables() if (count := _delete_rows(session, table, info.id))
        }
        session.delete(row)
        session.flush()
        return Deleted(info, removed)


def _run_tables() -> list[Table]:
    """The tables with a foreign key to run.id, children first (safe to delete in this order)."""
    run_table = SQLModel.metadata.tables["run"]
    return [
        table
        for table in reversed(SQLModel.metadata.sorted_tables)
        if any(fk.column.table is run_table for fk in table.foreign_keys)
    ]


def _delete_rows(session: Session, table: Table, run_id: int) -> int:
    """Delete one table's rows of a run; returns how many there were."""
    column = next(fk.parent for fk in table.foreign_keys if fk.column.table.name == "run")
    count = session.execute(select(func.count()).select_from(table).where(column == run_id)).scalar_one()
    if count:
        session.execute(delete(table).where(column == run_id))
    return int(count)
