"""Ranges (min, max) and the quantities built on them.

A published figure is sometimes a range (the OLMo 2 paper gives Llama's WUE as
1.29-4.26 L/kWh), so every footprint input may be a float or a :class:`Range`,
and arithmetic on them propagates (min, max) by interval arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wattlog.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Range:
    """A closed interval [lo, hi] of one quantity; lo <= hi.

    Attributes:
        lo: Minimum.
        hi: Maximum.

    >>> (Range(1.29, 4.26) * 81.4).format(".0f")
    '105-347'
    >>> Range(1.0, 2.0) + 0.5
    Range(lo=1.5, hi=2.5)
    """

    lo: float
    hi: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            raise ConfigError(f"range ({self.lo}, {self.hi}) is not finite: give two finite numbers")
        if self.lo > self.hi:
            raise ConfigError(f"range min {self.lo:g} is above max {self.hi:g}: write a range as [min, max]")
        # Keep float endpoints (ints from TOML) so reprs and equality stay simple.
        object.__setattr__(self, "lo", float(self.lo))
        object.__setattr__(self, "hi", float(self.hi))

    @classmethod
    def exact(cls, value: float) -> Range:
        """A range holding one value."""
        return cls(value, value)

    @classmethod
    def of(cls, value: Quantity) -> Range:
        """`value` as a range (a float becomes an exact range)."""
        return value if isinstance(value, Range) else cls.exact(value)

    @property
    def is_exact(self) -> bool:
        """Whether min equals max."""
        return self.lo == self.hi

    @property
    def mid(self) -> float:
        """The midpoint."""
        return (self.lo + self.hi) / 2

    def __add__(self, other: Quantity) -> Range:
        o = Range.of(other)
        return Range(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, other: Quantity) -> Range:
        o = Range.of(other)
        return Range(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, other: Quantity) -> Range:
        return Range.of(other) - self

    def __mul__(self, other: Quantity) -> Range:
        o = Range.of(other)
        products = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return Range(min(products), max(products))

    __rmul__ = __mul__

    def __truediv__(self, other: Quantity) -> Range:
        o = Range.of(other)
        if o.lo <= 0 <= o.hi:
            raise ConfigError(f"cannot divide by a range that contains 0 ({o.format('g')})")
        quotients = (self.lo / o.lo, self.lo / o.hi, self.hi / o.lo, self.hi / o.hi)
        return Range(min(quotients), max(quotients))

    def __rtruediv__(self, other: Quantity) -> Range:
        return Range.of(other) / self

    def format(self, spec: str = "g") -> str:
        """Both ends with `spec`, as "lo-hi"; one figure when they print the same.

        >>> Range(1.29, 4.26).format(".2f")
        '1.29-4.26'
        >>> Range(2.0, 2.004).format(".2f")
        '2.00'
        """
        lo, hi = format(self.lo, spec), format(self.hi, spec)
        return lo if lo == hi else f"{lo}-{hi}"

    def __str__(self) -> str:
        return self.format()


Quantity = float | Range
"""A figure that is either one value or a (min, max) range."""


def bounds(value: Quantity) -> tuple[float, float]:
    """(min, max) of a quantity; a float is its own min and max."""
    r = Range.of(value)
    return r.lo, r.hi


def midpoint(value: Quantity) -> float:
    """The middle of a quantity's range; a float is its own middle."""
    return value.mid if isinstance(value, Range) else float(value)


def format_quantity(value: Quantity, spec: str) -> str:
    """Format a float or a range with one format spec ("105-347" for ranges)."""
    return value.format(spec) if isinstance(value, Range) else format(value, spec)


def check_at_least(value: Quantity, minimum: float, what: str, why: str) -> None:
    """Raise ConfigError if any end of `value` is below `minimum` (or not finite).

    Args:
        value: The figure to check.
        minimum: Smallest allowed value.
        what: Name of the figure in the message, e.g. "site 'x': PUE".
        why: Why the bound holds, so the message names the fix.

    Raises:
        ConfigError: One line naming the figure, its value and the bound.
    """
    lo, hi = bounds(value)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ConfigError(f"{what} is {format_quantity(value, 'g')}: give a finite number")
    if lo < minimum:
        raise ConfigError(f"{what} is {format_quantity(value, 'g')}, below {minimum:g}: {why}")


def parse_quantity(raw: object, what: str) -> Quantity:
    """Read a quantity from TOML-like data: a number, [min, max], {min, max} or "min-max".

    Args:
        raw: The value as parsed from the file.
        what: Name of the field, for the error message.

    Returns:
        A float, or a Range for two values.

    Raises:
        ConfigError: If `raw` is none of the accepted shapes, or min > max.
    """
    if isinstance(raw, bool):
        pass
    elif isinstance(raw, int | float):
        return float(raw)
    elif isinstance(raw, list | tuple) and len(raw) == 2 and all(_is_number(x) for x in raw):
        return _range(float(raw[0]), float(raw[1]), what)
    elif isinstance(raw, dict) and set(raw) == {"min", "max"} and all(_is_number(x) for x in raw.values()):
        return _range(float(raw["min"]), float(raw["max"]), what)
    elif isinstance(raw, str):
        lo_text, sep, hi_text = raw.strip().partition("-")
        try:
            return _range(float(lo_text), float(hi_text), what) if sep else float(raw)
        except ValueError:
            pass
    raise ConfigError(f"{what}: expected a number or a range [min, max], got {raw!r}")


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _range(lo: float, hi: float, what: str) -> Range:
    try:
        return Range(lo, hi)
    except ConfigError as error:
        raise ConfigError(f"{what}: {error}") from None
