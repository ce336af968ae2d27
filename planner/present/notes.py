"""Render engine notes (catalog key + parameters) in one language; plain strings (file problems) pass through."""

from __future__ import annotations

import math

from planner.engine.notes import Note
from planner.present import fmt
from planner.present.i18n import t


def _localise(value: object, locale: str | None) -> object:
    """Numbers take the locale's separators (es-AR 1.234,5); nested notes render in the same language."""
    if isinstance(value, Note):
        return render_note(value, locale)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    decimals = 0 if isinstance(value, int) else (2 if abs(value) < 10 else (1 if abs(value) < 100 else 0))
    if abs(value) >= fmt.SCIENTIFIC_FROM:
        return fmt.optional_decimals(value, locale, decimals)
    if locale in (None, "en"):  # English is built for every note: skip babel (fast path, same output)
        text = f"{value:,.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return fmt.optional_decimals(value, locale, decimals)


def render_note(note: Note | str, locale: str | None) -> str:
    """A note in `locale` (None = English); plain strings (file problems, user text) are shown as they are."""
    if not isinstance(note, Note):
        return str(note)
    return t(f"note.{note.key}", locale, **{k: _localise(v, locale) for k, v in note.items})


def english(note: Note | str) -> str:
    """The English text of a note: what JSON, CSV and the CLI table carry."""
    return render_note(note, "en")
