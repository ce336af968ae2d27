"""Writes the app's event stream (`--events json`, planner/inputs/bench_events.py): the protocol's header first,
then one JSON object per line, flushed, so the app sees progress as it happens."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from planner.inputs.bench_events import ERROR_KEYS, FLAG, FORMAT, encode, header
from planner.inputs.errors import InputError, describe


class Events:
    """The stream of one bench command: the header is written when it is made."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._write(header())

    def emit(self, event: str, **fields: Any) -> None:
        self._write({"event": event, **fields})

    def error(self, key: str, message: str, **params: Any) -> None:
        """An error by its key (bench_events.ERROR_KEYS) and parameters; `message` is the sentence for people."""
        if key not in ERROR_KEYS:
            raise ValueError(f"unknown bench event error key {key!r}")
        self.emit("error", key=key, message=message, **params)

    def bad_input(self, exc: InputError) -> None:
        self.error("bad_input", str(exc), source=exc.source, field=exc.field, value=describe(exc.value),
                   expected=exc.expected)

    def _write(self, obj: dict[str, Any]) -> None:
        try:
            self.out.write(encode(obj) + "\n")
            self.out.flush()
        except (BrokenPipeError, ValueError):  # the reader left (or closed the pipe): nothing to tell
            pass


def from_argv(argv: list[str]) -> tuple[list[str], Events | None]:
    """`argv` without `--events json` (or `--events=json`), and the stream it asks for (None when it does not).
    Any other format is left in argv for the command's parser to refuse by name."""
    out: list[str] = []
    wanted = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == FLAG and i + 1 < len(argv) and argv[i + 1] == FORMAT:
            wanted, i = True, i + 2
            continue
        if arg == f"{FLAG}={FORMAT}":
            wanted, i = True, i + 1
            continue
        out.append(arg)
        i += 1
    return out, (Events() if wanted else None)
