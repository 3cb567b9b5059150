"""A terminal table that never cuts a figure: a grid when it fits the width, else one block per row.

Rich shrinks a table that is wider than the terminal by wrapping cells, and
past a point by cropping them ("estim", "(0.318..."). :class:`FittedTable`
measures the narrowest grid in which no word of any header or cell is broken;
if the console is narrower it stacks the rows instead ("Header: value" lines,
one block per row). Notes are printed below as wrapped paragraphs, never as a
caption that rich may crop. Both layouts keep every character: a test renders
them at 80 and 60 columns and into a non-terminal file.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

_PADDING = 2  # rich's default cell padding: 1 left, 1 right
# SIMPLE_HEAD draws a (blank) character at each edge and between columns: ncols + 1 more.


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


@dataclass(frozen=True)
class FittedTable:
    """Headers, cells and notes that render as a grid or stacked, whichever fits without cutting.

    Attributes:
        headers: Column headers.
        cells: Rows of cell texts, one per header.
        notes: Footnotes, printed below as paragraphs.
        right: Indexes of right-aligned (figure) columns.
        title: Optional title line.
    """

    headers: Sequence[str]
    cells: Sequence[Sequence[str]]
    notes: Sequence[str] = ()
    right: Collection[int] = field(default_factory=frozenset)
    title: str = ""

    def min_grid_width(self) -> int:
        """The narrowest grid in which no word of a header or cell breaks (figures keep their spaces)."""
        total = 0
        for i, header in enumerate(self.headers):
            # A figure ("1,450 - 4,823") may wrap only at its spaces, like any text.
            widest = max([_longest_word(header), *(_longest_word(row[i]) for row in self.cells)])
            total += widest + _PADDING
        return total + len(self.headers) + 1

    def column_widths(self, max_width: int) -> list[int]:
        """Each column's width: whole cells first (a range on one line), then whole headers, as room allows.

        Every column gets at least its longest word. Rich's own shrinking squeezes every
        column alike once a table is too wide and crops what no longer fits, so the
        widths are fixed here instead.
        """
        texts = [[header, *(row[i] for row in self.cells)] for i, header in enumerate(self.headers)]
        mins = [max(_longest_word(t) for t in column) for column in texts]
        cells = [max([lo, *(len(t) for t in column[1:])]) for lo, column in zip(mins, texts, strict=True)]
        whole = [max(c, len(column[0])) for c, column in zip(cells, texts, strict=True)]
        room = max_width - (_PADDING + 1) * len(self.headers) - 1
        for low, high in ((cells, whole), (mins, cells)):
            if sum(low) <= room:
                spare = min(room - sum(low), sum(high) - sum(low))
                wants = [h - lo for lo, h in zip(low, high, strict=True)]
                total = sum(wants) or 1
                return [lo + spare * want // total for lo, want in zip(low, wants, strict=True)]
        return mins

    def grid(self, max_width: int = 10_000) -> Table:
        """The rows as a rich Table at most `max_width` wide (no caption: notes are printed apart)."""
        table = Table(box=box.SIMPLE_HEAD, title=self.title or None, title_justify="left")
        for i, (header, width) in enumerate(zip(self.headers, self.column_widths(max_width), strict=True)):
            table.add_column(
                header, justify="right" if i in self.right else "left", width=width, overflow="fold"
            )
        for row in self.cells:
            table.add_row(*row)
        return table

    def stacked(self) -> Iterator[Text]:
        """One block per row: its first cell in bold, then "Header: value" for every other cell."""
        if self.title:
            yield Text(self.title, style="bold")
        for row in self.cells:
            yield Text(f"{self.headers[0]}: {row[0]}", style="bold", overflow="fold")
            for header, cell in zip(self.headers[1:], row[1:], strict=True):
                yield Text(f"  {header}: {cell}", overflow="fold")
            yield Text("")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Grid if it fits `options.max_width`, else stacked; then the notes."""
        if self.min_grid_width() <= options.max_width:
            yield self.grid(options.max_width)
        else:
            yield from self.stacked()
        for note in self.notes:
            yield Text(note, overflow="fold")
