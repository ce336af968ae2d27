"""Text for Streamlit markdown: escaping, catalog text with escaped parameters, GiB and source labels."""

from __future__ import annotations

import re

from planner.engine.estimates import Source
from planner.present import fmt
from planner.present.notes import render_source
from planner.vocab import GIB
from ui.i18n_ui import locale, tr

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$])")


def md(text: object) -> str:
    """Text safe to put in st.markdown: markdown and LaTeX characters escaped (HTML is never enabled)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def trm(key: str, **params: object) -> str:
    """Catalog text with its parameters escaped for markdown (they may hold file or user text)."""
    return tr(key, **{k: md(v) for k, v in params.items()})


def gib(x_bytes: float | None, digits: int = 1) -> str:
    return "—" if x_bytes is None else fmt.number(x_bytes / GIB, locale(), digits) + " GiB"


def source_text(source: Source | None) -> str:
    """'measured: file, date' in the session's language (the detail too: planner.present.notes.render_source)."""
    if source is None:
        return "—"
    return render_source(source, locale())
