"""Typed errors. Behaviour is decided by the type and its fields, never by the wording of a message.

- InputError: bad input from a file, link, widget or argument: names the file, the field, the value and what was
  expected. The CLIs exit 2 with its text; the app shows it on the page that read the input.
- CannotEstimate: the inputs are valid but lack a figure an estimate needs (e.g. no activation size for a model
  with nothing measured or traced): names the field that would supply it.
- FitError: a fit over user-given points failed (e.g. a McCandlish fit with no positive solution).
All three derive from planner.errors.TrainplanError (the base of every domain error) and from ValueError.
"""

from __future__ import annotations

from planner.errors import TrainplanError

# Values are shown cut to this many characters; building the text never walks more than a bounded slice of a
# value, so a huge or deeply nested value (a YAML alias bomb) cannot hang or exhaust memory in a message.
MAX_SHOWN_CHARS = 120
_MAX_ITEMS = 8
_MAX_DEPTH = 3


def describe(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """A bounded, repr-like rendering of `value` for a message: at most `limit` characters, bounded work."""
    text = _bounded_repr(value, _MAX_DEPTH, limit + 1)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _bounded_repr(value: object, depth: int, budget: int) -> str:
    if isinstance(value, str):
        return repr(value[:budget])
    if isinstance(value, bytes):
        return repr(value[:budget])
    if isinstance(value, bool | int):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
            return f"<integer of {len(str(abs(value))) if abs(value) < 10**4000 else 'over 4000'} digits>"
        return repr(value)
    if isinstance(value, float) or value is None:
        return repr(value)
    if isinstance(value, dict):
        if depth <= 0:
            return "{...}"
        parts = []
        for i, (k, v) in enumerate(value.items()):
            if i >= _MAX_ITEMS:
                parts.append("...")
                break
            parts.append(f"{_bounded_repr(k, depth - 1, budget)}: {_bounded_repr(v, depth - 1, budget)}")
            if sum(map(len, parts)) > budget:
                break
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        if depth <= 0:
            return "[...]"
        parts = []
        for i, v in enumerate(value):
            if i >= _MAX_ITEMS:
                parts.append("...")
                break
            parts.append(_bounded_repr(v, depth - 1, budget))
            if sum(map(len, parts)) > budget:
                break
        open_, close = ("(", ")") if isinstance(value, tuple) else ("[", "]")
        return open_ + ", ".join(parts) + close
    text = repr(value)
    return text[:budget]


class InputError(TrainplanError, ValueError):
    """Bad input from a user file or argument. `str()` is the one message a user sees."""

    def __init__(self, source: str | None, field: str | None, value: object, expected: str):
        self.source = source or "<input>"
        self.field = field or ""
        self.value = value
        self.expected = expected
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"{self.source}: {self.field}" if self.field else self.source
        return f"{where}: got {describe(self.value)}; expected {self.expected}"


def skipped(path: object, exc: BaseException) -> str:
    """The problem line for a folder member that could not be read at all: listed with the reason, then skipped."""
    reason = f"{exc.__class__.__name__}: {describe(str(exc), 80)}" if str(exc) else exc.__class__.__name__
    return str(InputError(str(path), None, reason, "a readable file (it was skipped)"))


class CannotEstimate(TrainplanError, ValueError):
    """Valid inputs that lack a figure an estimate needs; `field` names the input that would supply it."""

    def __init__(self, field: str, missing: str):
        self.field = field
        self.missing = missing
        super().__init__(f"{field}: {missing}")


class FitError(TrainplanError, ValueError):
    """A fit over user-given points has no valid solution; the message says why in numbers."""
