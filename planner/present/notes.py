"""Notes a user acts on: English text that also carries its catalog key and numbers, so any language can render it."""

from __future__ import annotations

import math

from planner.present import fmt
from planner.present.i18n import t


def _localise(value: object, locale: str | None) -> object:
    """Numbers take the locale's separators (es-AR 1.234,5); text is left as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    decimals = 0 if isinstance(value, int) else (2 if abs(value) < 10 else (1 if abs(value) < 100 else 0))
    if locale in (None, "en"):  # English is built for every note: skip babel (fast path, same output)
        text = f"{value:,.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return fmt.optional_decimals(value, locale, decimals)


class Note(str):
    """A str (English text, used in JSON and tables) with `.key` and `.params` for translation."""

    key: str
    params: dict

    def __new__(cls, key: str, **params: object) -> Note:
        obj = super().__new__(cls, _render(key, "en", params))
        obj.key = key
        obj.params = params
        return obj

    def render(self, locale: str | None) -> str:
        return _render(self.key, locale, self.params)


def _render(key: str, locale: str | None, params: dict) -> str:
    return t(f"note.{key}", locale, **{k: _localise(v, locale) for k, v in params.items()})


def render_note(text: str, locale: str | None) -> str:
    """Translate a Note; plain strings (file problems, user text) are shown as they are."""
    return text.render(locale) if isinstance(text, Note) else str(text)
