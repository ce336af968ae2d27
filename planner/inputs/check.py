"""The one field validator for every user mapping (scenarios, GPU profiles, price quotes, result files).

Each reader raises InputError naming source, field, value and expectation. Rules shared by every file: numbers
are YAML/JSON numbers (the loader reads `1e9` and `8e1` as floats; a quoted "80" is text, not a number), never
booleans, always finite and within the field's bounds; an integer field takes a whole float (`1e3`); dates are
YYYY-MM-DD between loader.EARLIEST_DATE and loader.LATEST_DATE.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from planner.inputs.errors import InputError
from planner.inputs.loader import DATE_EXPECTED, EARLIEST_DATE, EXPONENT_FLOAT, LATEST_DATE

_MISSING = object()
MAX_STRING_CHARS = 10_000  # a name, a provider, a citation; notes may be longer (their reader says so)
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_EXPONENT_RE = re.compile(EXPONENT_FLOAT)


class Reader:
    """Reads typed fields from one mapping, tracking the dotted path for error messages."""

    def __init__(self, data: object, source: str, path: str = ""):
        if not isinstance(data, Mapping):
            raise InputError(source, path or None, data, "a mapping (key: value pairs)")
        self.data = data
        self.source = source
        self.path = path

    def field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, value: object, expected: str) -> InputError:
        return InputError(self.source, self.field(key), value, expected)

    def reject_unknown(self, allowed: Iterable[str]) -> None:
        allowed_set = set(allowed)
        for key in self.data:
            if key not in allowed_set:
                raise InputError(
                    self.source, self.field(str(key)), self.data[key],
                    "no such key; allowed keys: " + ", ".join(sorted(allowed_set)),
                )

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.data or self.data[key] is None:
            if default is _MISSING:
                raise self.fail(key, None, "a value (this field is required)")
            return default
        return self.data[key]

    def sub(self, key: str) -> Reader | None:
        if not self.has(key):
            return None
        return Reader(self.data[key], self.source, self.field(key))

    def string(self, key: str, default: Any = _MISSING, choices: Iterable[str] | None = None,
               max_chars: int = MAX_STRING_CHARS) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        options = list(choices) if choices is not None else None
        if not isinstance(value, str) or not value.strip():  # a field with a list names the list whatever it got
            raise self.fail(key, value, "one of " + ", ".join(options) if options is not None else "a non-empty string")
        if options is not None and value not in options:
            raise self.fail(key, value, "one of " + ", ".join(options))
        if len(value) > max_chars:
            raise self.fail(key, value, f"at most {max_chars:,} characters")
        return value

    def string_list(self, key: str, default: Any = _MISSING) -> Any:
        """A list of non-empty strings (an empty list is allowed)."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list):
            raise self.fail(key, value, "a list of strings")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip() or len(item) > MAX_STRING_CHARS:
                raise InputError(self.source, f"{self.field(key)}[{i}]", item,
                                 f"a non-empty string of at most {MAX_STRING_CHARS:,} characters")
        return tuple(value)

    def boolean(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, value, "true or false")
        return value

    def integer(self, key: str, default: Any = _MISSING, minimum: int | None = None,
                maximum: int | None = None) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        value = _exponent_number(value)
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**62:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, value, _range_text("an integer", minimum, maximum) + _quoted_hint(value))
        _check_range(self, key, value, minimum, maximum, "an integer")
        return value

    def choice(self, key: str, choices: Iterable[str], default: Any = _MISSING) -> Any:
        """One of `choices` (compared as given: YAML `on`/`no` arrive as booleans and are rejected)."""
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        options = list(choices)
        if not isinstance(value, str) or value not in options:
            raise self.fail(key, value, "one of " + ", ".join(options))
        return value

    def number(self, key: str, default: Any = _MISSING, minimum: float | None = None,
               maximum: float | None = None, exclusive_min: bool = False, unit: str = "") -> Any:
        value = self.data.get(key)
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            # Fast path: a plain in-range number (never bool, nan or inf); anything else takes the checks below.
            number = float(value) if isinstance(value, float) or abs(value) < 2**53 else math.inf
            if (math.isfinite(number)
                    and (minimum is None or (number > minimum if exclusive_min else number >= minimum))
                    and (maximum is None or number <= maximum)):
                return number
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        value = _exponent_number(value)
        # The expected-value text is built only on failure: result files validate ~20 numbers per measurement.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, value, _range_text("a number", minimum, maximum, exclusive_min) + unit
                            + _quoted_hint(value))
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range
            number = math.inf
        if (not math.isfinite(number)
                or (minimum is not None and (number < minimum or (exclusive_min and number <= minimum)))
                or (maximum is not None and number > maximum)):
            raise self.fail(key, value, _range_text("a number", minimum, maximum, exclusive_min) + unit)
        return number

    def date(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        return parse_date(value, self.source, self.field(key))

    def list_of(self, key: str, default: Any = _MISSING, max_items: int = 1000) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list | tuple) or not value:
            raise self.fail(key, value, "a non-empty list")
        if len(value) > max_items:
            raise self.fail(key, value, f"a list of at most {max_items:,} items")
        return list(value)

    def integer_list(self, key: str, default: Any = _MISSING, minimum: int | None = None,
                     maximum: int | None = None, max_items: int = 1000) -> Any:
        """A non-empty list of integers (whole floats such as 8.0 or 1e3 count), each within the bounds."""
        items = self.list_of(key, default, max_items)
        if items is default and default is not _MISSING:
            return items
        out = []
        for i, item in enumerate(items):
            value = _exponent_number(item)
            if isinstance(value, float) and value.is_integer() and abs(value) < 2**62:
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or \
                    (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
                raise InputError(self.source, f"{self.field(key)}[{i}]", item,
                                 _range_text("an integer", minimum, maximum))
            out.append(value)
        return out


def keyed_reader(data: object, spec: Mapping[str, bool], source: str, where: str) -> Reader:
    """A Reader over `data` after unknown keys are refused and required ones (spec: key -> required?) are present."""
    r = Reader(data, source, where)
    r.reject_unknown(spec)
    for key, required in spec.items():
        if required and key not in r.data:
            raise r.fail(key, None, "this key (it is required)")
    return r


def parse_date(value: object, source: str, field: str) -> dt.date:
    """A date object (YAML's unquoted 2026-11-01) or a "YYYY-MM-DD" string, on a real calendar day in range."""
    day = None
    if isinstance(value, dt.datetime):
        day = value.date()
    elif isinstance(value, dt.date):
        day = value
    elif isinstance(value, str) and _DATE_RE.match(value.strip()):
        try:
            day = dt.date.fromisoformat(value.strip())
        except ValueError:
            day = None
    if day is None or not EARLIEST_DATE <= day <= LATEST_DATE:
        raise InputError(source, field, value, DATE_EXPECTED)
    return day


def _exponent_number(value: object) -> object:
    """`1e10` as text is a number: the loader reads it so, and a mapping from a plain YAML 1.1 parser (which
    leaves exponents without a dot or sign as text) must validate the same way. Other text stays text."""
    if isinstance(value, str) and len(value) < 40 and _EXPONENT_RE.match(value):
        return float(value.replace("_", ""))
    return value


def _quoted_hint(value: object) -> str:
    """A number typed in quotes is text: say so, since the value shown looks like a number."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ""
        return " (without quotes: a quoted value is text)"
    return ""


def _range_text(what: str, minimum: float | None, maximum: float | None, exclusive_min: bool = False) -> str:
    low = ">" if exclusive_min else ">="
    if minimum is not None and maximum is not None:
        if not exclusive_min:  # both ends inclusive: the plain words a form's users read
            return f"{what} between {_bound(minimum)} and {_bound(maximum)}"
        return f"{what} {low} {_bound(minimum)} and <= {_bound(maximum)}"
    if minimum is not None:
        return f"{what} {low} {_bound(minimum)}"
    if maximum is not None:
        return f"{what} <= {_bound(maximum)}"
    return what


def _bound(x: float) -> str:
    """1000 -> '1000', 1e9 -> '1e9', 0.0001 -> '0.0001': short and unambiguous in any locale."""
    return f"{x:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _check_range(reader: Reader, key: str, value: float, minimum: float | None,
                 maximum: float | None, what: str) -> None:
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise reader.fail(key, value, _range_text(what, minimum, maximum))
