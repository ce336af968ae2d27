"""The one error type for bad input: it names the file, the field, the value and what was expected."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from a user file or argument. `str()` is the one message a user sees."""

    def __init__(self, source: str | None, field: str | None, value: object, expected: str):
        self.source = source or "<input>"
        self.field = field or ""
        self.value = value
        self.expected = expected
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"{self.source}: {self.field}" if self.field else self.source
        shown = repr(self.value)
        if len(shown) > 120:
            shown = shown[:117] + "..."
        return f"{where}: got {shown}; expected {self.expected}"
