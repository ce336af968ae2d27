"""Tests read notes as their English text: planner notes are data (key + parameters) rendered by present/."""

from __future__ import annotations

from collections.abc import Iterable

from planner.engine.estimates import Source
from planner.engine.notes import Note
from planner.present.notes import detail_text, english


def texts(notes: Iterable[Note | str]) -> tuple[str, ...]:
    return tuple(english(n) for n in notes)


def texts_of_triple(triple: tuple) -> tuple:
    """instances_needed's (instances, billed, note) with the note as text."""
    a, b, note = triple
    return a, b, (english(note) if note is not None else None)


def detail_en(source: Source) -> str:
    """A source's detail as English text (its parts rendered by present/)."""
    return detail_text(source, "en")


__all__ = ["detail_en", "english", "texts", "texts_of_triple"]
