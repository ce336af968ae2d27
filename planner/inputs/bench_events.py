"""The app ↔ bench contract of `python -m bench detect|run|trace --events json`: one JSON object per line on stdout,
the first naming the protocol. Standard library only: bench writes it on a GPU box.

    {"protocol": "trainplan.bench-events/1"}
    {"event": "start", "path": "...", ...}            run: the file it writes
    {"event": "progress", "done": 3, "total": 8, ...}
    {"event": "done", "path": "...", ...}             detect: "facts"; run, trace: "path"
    {"event": "interrupted", "path": "...", "partial": true}
    {"event": "error", "key": "missing_module", "module": "torch", "python": "...", "message": "..."}

An error's `key` (ERROR_KEYS) and its parameters decide what the app does and says; `message` is bench's own English
sentence, kept for people reading the stream. Additive within a version: a reader ignores fields and events it does
not know; a change a reader of this version would misread takes trainplan.bench-events/2 (docs/schemas.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

PROTOCOL = "trainplan.bench-events/1"
FLAG = "--events"
FORMAT = "json"
COMMANDS = ("detect", "run", "trace")  # the subcommands that speak it

# What an "error" event's key means, and the parameters it carries besides `message`.
ERROR_KEYS: dict[str, tuple[str, ...]] = {
    "missing_module": ("module", "python"),  # this interpreter lacks a module bench needs (torch, yaml)
    "bad_input": ("source", "field", "value", "expected"),  # an argument or a file bench was given (exit 2)
    "untraceable_model": ("model",),  # the tracer cannot run this model (exit 2)
    "all_failed": (),  # every requested configuration failed: no file was written
    "run_failed": ("path",),  # the run stopped on an error; what it measured is in `path`, marked partial
    "internal": ("type",),  # a bug in bench: its traceback is on stderr
}


def header() -> dict[str, str]:
    return {"protocol": PROTOCOL}


def encode(obj: dict[str, Any]) -> str:
    """One line of the stream (no newline)."""
    return json.dumps(obj, default=str, ensure_ascii=False)


@dataclass(frozen=True)
class StreamProblem:
    """Why a stream cannot be read: key no_header (bench said nothing in this protocol: a crash before it started,
    or another program) or unknown_protocol (`protocol` names the one it spoke)."""

    key: str
    protocol: str | None = None


@dataclass
class EventReader:
    """Reads a stream a line at a time: the first line must be this protocol's header; then each JSON object with
    an "event" is an event. Lines that are not JSON objects (a library printing to stdout) are set aside."""

    protocol: str | None = None
    problem: StreamProblem | None = None
    other_lines: list[str] = field(default_factory=list)
    _started: bool = False

    def feed(self, line: str) -> dict[str, Any] | None:
        """The event on this line, else None."""
        text = line.strip()
        if not text:
            return None
        obj = _json_object(text)
        if not self._started:
            self._started = True
            said = obj.get("protocol") if obj is not None else None
            if said == PROTOCOL:
                self.protocol = said
                return None
            self.problem = StreamProblem("unknown_protocol", str(said)) if isinstance(said, str) else \
                StreamProblem("no_header")
        if self.problem is not None or obj is None or not isinstance(obj.get("event"), str):
            self.other_lines.append(text)
            return None
        return obj

    def finish(self) -> StreamProblem | None:
        """At the end of the stream: its problem, or no_header when it was empty."""
        if not self._started and self.problem is None:
            self.problem = StreamProblem("no_header")
        return self.problem


def read_events(lines: Iterable[str]) -> tuple[list[dict[str, Any]], StreamProblem | None]:
    """Every event of a finished stream and its problem (None when it was read in this protocol)."""
    reader = EventReader()
    events = [e for e in (reader.feed(line) for line in lines) if e is not None]
    return events, reader.finish()


def last_event(events: Iterable[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    found = None
    for event in events:
        if event.get("event") == kind:
            found = event
    return found


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
