"""Notes a user acts on: English text that also carries its catalog key and numbers, so any language can render it."""

from __future__ import annotations

from planner.i18n import t


class Note(str):
    """A str (English text, used in JSON and tables) with `.key` and `.params` for translation."""

    key: str
    params: dict

    def __new__(cls, key: str, **params: object) -> Note:
        obj = super().__new__(cls, t(f"note.{key}", "en", **params))
        obj.key = key
        obj.params = params
        return obj

    def render(self, locale: str | None) -> str:
        return t(f"note.{self.key}", locale, **self.params)


def render_note(text: str, locale: str | None) -> str:
    """Translate a Note; plain strings (file problems, user text) are shown as they are."""
    return text.render(locale) if isinstance(text, Note) else str(text)
