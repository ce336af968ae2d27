"""The Plan page's notes and warnings."""

from __future__ import annotations

import streamlit as st

from planner.engine.estimates import Plan, PlanOption
from planner.present.charts import option_label
from ui.i18n_ui import note, tr
from ui.markup import md, trm


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
    grouped: dict[str, list[str]] = {}
    for o in plan.options:
        if focus is not None and o.id == focus.id:
            continue
        for n in o.notes:
            grouped.setdefault(note(n), []).append(o.id)
    if grouped:
        with st.expander(tr("app.notes.others", n=len(grouped))):
            lines = []
            for text, ids in grouped.items():
                shown = ", ".join(ids[:6]) + (tr("app.notes.and_more", n=len(ids) - 6) if len(ids) > 6 else "")
                lines.append(f"- {md(text)} — *{md(shown)}*")
            st.markdown("\n".join(lines))
    if plan.assumptions:
        with st.expander(tr("app.notes.assumptions")):
            st.markdown("\n".join(f"- {md(note(a))}" for a in plan.assumptions))
