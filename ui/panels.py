"""Panels whose content is built and sent only while they are open.

A closed st.expander still carries everything inside it: on the Plan page the "why" panels, the other options'
notes and the assumptions were ~60 KB of markdown and tables on every plan change, and the browser laid them out
before it showed the headline (perf/app_speed.py --browser: cold load and widget change). A lazy panel tracks its
open state (Streamlit's on_change expanders) and its body runs only when `.open` is true; opening one reruns the
page, which reads the plan from the cache.

Its label may carry a figure ("Why 28.7 h?") and Streamlit names a stateful expander by its label, so the open
state is kept here, under OPEN_KEY, by panel name: a panel stays open across plan changes.
"""

from __future__ import annotations

import streamlit as st
from streamlit.elements.lib.mutable_expander_container import ExpanderContainer

OPEN_KEY = "_open_panels"


def widget_key(name: str) -> str:
    """The session key of the panel's expander (a widget: it reports its open state)."""
    return f"panel_{name}"


def _toggled(name: str) -> None:
    ss = st.session_state
    opened = set(ss.get(OPEN_KEY, ()))
    if ss.get(widget_key(name)):
        opened.add(name)
    else:
        opened.discard(name)
    ss[OPEN_KEY] = opened


def is_open(name: str) -> bool:
    return name in st.session_state.get(OPEN_KEY, ())


def lazy_expander(label: str, name: str) -> ExpanderContainer:
    """An expander named `name` (unique on its page); build its body under `if panel.open:`."""
    return st.expander(label, expanded=is_open(name), key=widget_key(name), on_change=_toggled, args=(name,))


def open_panels(session: object, *names: str) -> None:
    """Open panels from outside a run (tests through AppTest's session state; a link could too)."""
    opened = set(session[OPEN_KEY]) if OPEN_KEY in session else set()  # type: ignore[operator, index]
    session[OPEN_KEY] = opened | set(names)  # type: ignore[index]
