"""The app's side of the translation catalog: the session's locale and t() bound to it."""

from __future__ import annotations

import math
import re
import threading
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import streamlit as st

from planner.engine.notes import Note
from planner.present import fmt
from planner.present.i18n import language_of, t
from planner.present.notes import render_note
from planner.vocab import UPLOAD_MAX_MB
from ui.state import LOCALE_KEY

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

LANGUAGES = ("en", "es")
LOCALES = {"en": ("en", "en-US", "en-GB"), "es": ("es", "es-MX", "es-AR", "es-CO", "es-CL", "es-PE", "es-ES", "es-US",
                                                  "es-UY")}


_run = threading.local()  # each script run has its own thread; the locale is read once per run, not per label


def _session_locale() -> str:
    return st.session_state.get("ui_locale") or st.session_state.get(LOCALE_KEY) or "en"


def begin_run() -> None:
    """Read the session's locale once for this run (app.py calls it first; pages call it after changing it)."""
    _run.locale = _session_locale()


def locale() -> str:
    """The locale the user chose (the sidebar widget, else the last one seen, else English)."""
    return getattr(_run, "locale", None) or _session_locale()


def lang() -> str:
    return language_of(locale())


def tr(key: str, **params: object) -> str:
    """Catalog text for `key` in the session's language."""
    return t(key, locale(), **params)


def note(text: Note | str) -> str:
    """A planner note in the session's language (Note objects translate; plain text stays as it is)."""
    return render_note(text, locale())


def tr_or(key: str, fallback: str) -> str:
    """Catalog text, or `fallback` for a value the catalog does not name (a new source kind, a custom tier)."""
    try:
        return tr(key)
    except KeyError:
        return fallback


def choice_label(prefix: str | None, special: dict | None = None):
    """A format_func for choices: catalog text '<prefix>.<value>' (or special[value]) in the locale of this run;
    values the catalog does not name are shown as they are.

    The locale is bound now, not looked up at call time: Streamlit (and AppTest) may call format_func
    outside the script run, where the session's locale is not visible.
    """
    loc = locale()
    special = dict(special or {})

    def label(value: object) -> str:
        if value in special:
            return t(special[value], loc)
        if prefix is None:
            return str(value)
        try:
            return t(f"{prefix}.{value}", loc)
        except KeyError:
            return str(value)

    return label


def _cell(show: Callable[[float], str]) -> Callable[[object], str]:
    def cell(x: object) -> str:
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return fmt.MISSING
        if isinstance(x, bool) or not isinstance(x, int | float):
            return str(x)
        return show(float(x))

    return cell


def _shown(how: int | str, loc: str) -> Callable[[float], str]:
    if isinstance(how, int):
        return lambda x: fmt.number(x, loc, how)
    if how == "g":
        return lambda x: fmt.optional_decimals(x, loc, 4)
    digits = int(how[3:])
    return lambda x: fmt.money(x, "USD", loc, digits)


def localized(frame, formats: Mapping[str, int | str]):
    """`frame` shown with its numbers in the session's locale (es-AR 1.234,5); the cells stay numbers, so columns
    sort as numbers. formats: column -> decimals, "g" (up to 4 decimals) or "usd<decimals>" (money per CLDR).
    Streamlit's own number formats (printf "%.2f") would print en-US whatever the locale."""
    loc = locale()
    shown: dict[str, str | Callable[[object], str] | None] = {
        column: _cell(_shown(how, loc)) for column, how in formats.items() if column in frame.columns}
    return styled(frame).format(shown, na_rep=fmt.MISSING)


def dataframe(data, **kwargs):
    """st.dataframe with a missing cell drawn as "—" (fmt.MISSING). The browser draws a null cell as "None" whatever
    the styler says (na_rep only fills the display text, which it skips for a null), and a number column keeps its
    nulls so that it sorts as numbers."""
    return st.dataframe(data, placeholder=fmt.MISSING, **kwargs)


def file_uploader(label: str, *, key: str, types: tuple[str, ...], help: str, **kwargs):
    """st.file_uploader with its own words in the session's language. Streamlit writes "Upload" on the button and
    "16MB per file • YAML, YML" under it in English whatever the app's language (no parameter for either: the PR
    that proposed them, streamlit/streamlit#10042, was closed unmerged). In Spanish a style scoped to this widget's
    key (Streamlit's `st-key-<key>` class) hides those two texts and shows the catalog's in their place
    (`::after` content, which is also the button's accessible name); English keeps Streamlit's. The style is a
    style-only st.html, which Streamlit puts in its event container (nothing drawn, no space taken).
    Every uploader has the app's one limit (planner.vocab.UPLOAD_MAX_MB, the server's too), and its help says that
    an upload is held in the server's memory for this browser tab."""
    mb = fmt.number(UPLOAD_MAX_MB, locale(), 0)
    value = st.file_uploader(label, type=list(types), key=key, max_upload_size=UPLOAD_MAX_MB,
                             help=f"{help}\n\n{tr('app.uploader.memory', mb=mb)}", **kwargs)
    if lang() != "en":
        st.html(_uploader_style(key, button=tr("app.uploader.button"),
                                limit=" • ".join([tr("app.uploader.limit", mb=mb),
                                                  ", ".join(ext.upper() for ext in types)])))
    return value


def _css_string(text: str) -> str:
    """`text` as a CSS string literal: quotes, backslashes, angle brackets (a "</style>") and every character that is
    not printable (CSS ends a string at \\n, \\r and \\f) written as CSS escapes."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\<>' else f"\\{ord(c):x} " for c in text) + '"'


_SMALL = "font-size: 0.875rem; line-height: 1.6;"  # as the texts replaced (14 px, Streamlit's "sm"; faded 0.7)


def _uploader_style(key: str, *, button: str, limit: str) -> str:
    """The style that swaps the two texts: each is hidden (display: none, so out of the accessibility tree too) and
    its parent shows the catalog's text as `::after` content, which the browser reads as the button's name."""
    scope = f".st-key-{re.sub(r'[^a-zA-Z0-9_-]', '-', key.strip())}"  # as Streamlit names the class
    zone = f'{scope} [data-testid="stFileUploaderDropzone"]'
    notes = f'{scope} [data-testid="stFileUploaderDropzoneInstructions"]'
    return (f'<style>{zone} button [data-testid="stMarkdownContainer"], {notes} span {{display: none;}}\n'
            f"{zone} button [data-has-shortcut]::after {{content: {_css_string(button)}; {_SMALL}}}\n"
            f"{notes} > div::after {{content: {_css_string(limit)}; {_SMALL} opacity: 0.7;}}</style>")


def styled(frame: pd.DataFrame) -> Styler:
    """frame.style with an id that depends on the columns only, not on a random uuid (pandas' default): the same
    table in the next run is then the same message, which Streamlit sends as a reference to the copy the browser
    has. No styles use the id."""
    return frame.style.set_uuid(f"tp{zlib.crc32('|'.join(map(str, frame.columns)).encode()):08x}")
