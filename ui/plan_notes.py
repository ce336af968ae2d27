"""The Plan page's notes and warnings."""

from __future__ import annotations

import streamlit as st

from planner.engine.estimates import Plan, PlanOption
from planner.engine.notes import Note
from planner.present.charts import option_label
from ui.i18n_ui import note, tr
from ui.markup import md, trm
from ui.panels import lazy_expander

PANELS = ("notes_others", "notes_assumptions")  # ui.panels names


def render_notes(plan: Plan, focus: PlanOption | None, attention: tuple[str, ...] = ()) -> None:
    """Plan warnings and the explained option's notes; `attention` = the headline's warnings (never 'nothing to
    warn about' while those stand)."""
    st.subheader(tr("app.notes.title"))
    if attention:
        st.markdown(tr("plan_page.warnings.see_above"))
    for w in plan.warnings:
        st.warning(md(note(w)))
    if focus is not None and focus.notes:
        st.markdown(trm("app.notes.for_option", option=option_label(focus)))
        st.markdown("\n".join(f"- {md(note(n))}" for n in focus.notes))
    elif not plan.warnings and not attention:
        st.markdown(tr("app.notes.none"))
    others = [o for o in plan.options if o.notes and (focus is None or o.id != focus.id)]
    if others:
        # Counted by note (key and parameters: the same count in every language); texts only when it is open.
        n = len({k for o in others for k in o.notes})
        with (panel := lazy_expander(tr("app.notes.others", n=n), "notes_others")):
            if panel.open:
                _other_notes(others)
    if plan.assumptions:
        with (panel := lazy_expander(tr("app.notes.assumptions"), "notes_assumptions")):
            if panel.open:
                st.markdown("\n".join(f"- {md(note(a))}" for a in plan.assumptions))


def _other_notes(others: list[PlanOption]) -> None:
    """Each other option's note once, with the options it applies to."""
    grouped: dict[Note, list[str]] = {}
    for o in others:
        for n in o.notes:
            grouped.setdefault(n, []).append(o.id)
    lines = []
    for n, ids in grouped.items():
        shown = ", ".join(ids[:6]) + (tr("app.notes.and_more", n=len(ids) - 6) if len(ids) > 6 else "")
        lines.append(f"- {md(note(n))} — *{md(shown)}*")
    st.markdown("\n".join(lines))
