"""A note a user acts on, as data: a catalog key and its parameters. present/notes.py renders it per language."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, init=False)
class Note:
    """`Note("does_not_fit", need=92.1, usable=79.6)`: the catalog text `note.<key>` with these parameters.

    Behaviour never depends on a note's wording: code that must tell notes apart compares `key`.
    Parameters are numbers, text, or other notes (rendered in the same language).
    """

    key: str
    items: tuple[tuple[str, object], ...]

    def __init__(self, key: str, **params: object) -> None:
        # the instance dictionary directly: a plan makes tens of thousands of notes and source parts, and frozen
        # dataclasses' object.__setattr__ costs twice as much
        fields = self.__dict__
        fields["key"] = key
        fields["items"] = tuple(params.items())

    @property
    def params(self) -> Mapping[str, object]:
        return dict(self.items)


# Notes the plan states once in its assumptions rather than on every option.
PLAN_LEVEL_NOTE_KEYS = frozenset({"energy_tdp"})
