"""Small typed readers for user mappings: each raises InputError naming source, field, value and expectation."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from typing import Any

from planner.inputs.errors import InputError

_MISSING = object()


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

    def string(self, key: str, default: Any = _MISSING, choices: Iterable[str] | None = None) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, value, "a non-empty string")
        if choices is not None:
            options = list(choices)
            if value not in options:
                raise self.fail(key, value, "one of " + ", ".join(options))
        return value

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
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**62:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, value, _range_text("an integer", minimum, maximum))
        _check_range(self, key, value, minimum, maximum, "an integer")
        return value

    def number(self, key: str, default: Any = _MISSING, minimum: float | None = None,
               maximum: float | None = None, exclusive_min: bool = False) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, str):
            value = _parse_number_string(value)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(key, self.data.get(key), _range_text("a finite number", minimum, maximum, exclusive_min))
        if exclusive_min and minimum is not None and value <= minimum:
            raise self.fail(key, value, _range_text("a number", minimum, maximum, True))
        _check_range(self, key, value, minimum, maximum, "a number")
        return float(value)

    def date(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        return parse_date(value, self.source, self.field(key))

    def list_of(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list | tuple) or not value:
            raise self.fail(key, value, "a non-empty list")
        return list(value)


def parse_date(value: object, source: str, field: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise InputError(source, field, value, "a date YYYY-MM-DD")


def _parse_number_string(text: str) -> object:
    # YAML 1.1 reads "1e10" (no dot) as a string; users write it that way, so accept it.
    try:
        return float(text)
    except ValueError:
        return text


def _range_text(what: str, minimum: float | None, maximum: float | None, exclusive_min: bool = False) -> str:
    if minimum is not None and maximum is not None:
        low = ">" if exclusive_min else ">="
        return f"{what} {low} {minimum:g} and <= {maximum:g}"
    if minimum is not None:
        return f"{what} {'>' if exclusive_min else '>='} {minimum:g}"
    if maximum is not None:
        return f"{what} <= {maximum:g}"
    return what


def _check_range(reader: Reader, key: str, value: float, minimum: float | None,
                 maximum: float | None, what: str) -> None:
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise reader.fail(key, value, _range_text(what, minimum, maximum))
