"""The Plan page: sidebar widgets -> Scenario -> build_plan -> headline, memory chart, table, notes, sources."""

from __future__ import annotations

import logging

import streamlit as st
from streamlit.elements.lib.mutable_expander_container import ExpanderContainer

from planner.engine.estimates import Plan
from planner.inputs.errors import InputError
from planner.inputs.fields import AT_PATH, BY_KEY
from planner.inputs.folders import Inputs
from planner.inputs.scenario import (
    Scenario,
    load_scenario_file,
    parse_scenario,
)
from planner.inputs.userdata import (
    DEFAULT_SCENARIO,
    SHIPPED_SCENARIOS_DIR,
)
from planner.inputs.zoo_catalog import load_catalog
from ui import (
    page_data,
    plan_headline,
    plan_memory,
    plan_notes,
    plan_table,
    plan_why,
    scenario_files,
    sidebar,
    state,
    url_codec,
)
from ui.i18n_ui import begin_run, locale, tr, tr_or
from ui.markup import md, trm

log = logging.getLogger("trainplan.app")


# ---------------------------------------------------------------- cached inputs and plans

@st.cache_data(show_spinner=False)
def choices(fingerprint: str) -> tuple[list[str], list[str], dict[str, str]]:
    """Model names (zoo, then result files), price providers, example scenarios."""
    inputs = page_data.inputs()
    models = list(load_catalog())
    models += sorted({r.model_name for r in inputs.results if r.model_name and r.model_name not in models})
    providers = sorted({q.provider for p in inputs.profiles.values() for q in p.prices})
    return models, providers, scenario_files.example_names(SHIPPED_SCENARIOS_DIR)


@st.cache_data(show_spinner=False)
def gallery_items(fingerprint: str) -> list[scenario_files.Example]:
    """The gallery's one-click starts: the shipped example scenarios and the presets (scenarios/presets/)."""
    return scenario_files.gallery(SHIPPED_SCENARIOS_DIR)


# ---------------------------------------------------------------- the page

def _first_scenario(known: list[str]) -> tuple[Scenario, str]:
    """The scenario in the link, else the shipped default (a bad link says why, then opens the default); and where
    it came from."""
    raw = st.query_params.get(url_codec.URL_PARAM)
    if raw:
        try:
            return url_codec.decode_scenario(raw, known), url_codec.URL_SOURCE
        except InputError as exc:
            st.session_state["_url_error"] = exc
    return load_scenario_file(DEFAULT_SCENARIO, known), state.SIDEBAR_SOURCE


def main() -> None:
    ss = st.session_state
    fingerprint = page_data.inputs_fingerprint()
    inputs = page_data.inputs()
    known = list(inputs.profiles)
    if state.BASE_KEY not in ss:
        first, origin = _first_scenario(known)
        state.apply_scenario(ss, first, origin=origin)
    state.prepare_widgets(ss)
    sidebar.normalize_locale(ss)
    ss[state.LOCALE_KEY] = ss["ui_locale"]
    begin_run()
    # The widgets' values are already in session state, so either can be drawn first. A session's first run draws
    # the plan first: the browser shows the numbers before it has laid out sixty widgets. A rerun (a what-if) draws
    # the sidebar first: the browser re-renders its widgets while the server plans, and the page settles sooner
    # (perf/app_speed.py, A/B in one run, 10-12 loads each: first change after a load 0.29 -> 0.27-0.28 s, later
    # ones 0.21-0.22 -> 0.21 s). The sidebar and the main area are separate trees, so no element changes identity.
    scenario = None
    sidebar_first = plan_headline.painted(ss)
    if sidebar_first:
        file_box = _sidebar(inputs, fingerprint)
    try:
        scenario = plan_and_render(ss, known)
    finally:
        if not sidebar_first:
            file_box = _sidebar(inputs, fingerprint)
        if scenario is not None and file_box.open:
            with file_box:
                st.download_button(tr("app.sidebar.download"), data=scenario_files.download_yaml(scenario),
                                   file_name=scenario_files.scenario_file_name(scenario), mime="application/x-yaml", on_click="ignore",
                                   key="download", width="stretch")
                st.caption(tr("app.sidebar.share"))


def _sidebar(inputs: Inputs, fingerprint: str) -> ExpanderContainer:
    """The sidebar's widgets; returns the Scenario file section (the download button goes in it once planned)."""
    models, providers, examples = choices(fingerprint)
    return sidebar.render_sidebar(inputs.profiles, models, providers, examples)


def plan_and_render(ss, known: list[str]) -> Scenario | None:
    """The main area; returns the scenario it planned (None when it could not plan)."""
    st.title(md(ss["scenario_name"] or tr("app.main.untitled")))
    st.caption(tr("app.main.tagline"))
    upload_failed = _file_messages(ss)
    _gallery(known)

    try:
        scenario = state.scenario_from_session(ss, known)
        plan = page_data.plan_for(scenario, state.origin(ss))
    except InputError as exc:
        # One rule for a bad scenario from any source (file, link, sidebar): the message naming the field by its
        # label, and under it the last valid plan, or on a first visit the default scenario's, with a line saying
        # which. The widgets and the link keep the bad scenario, so it can be fixed where it is.
        st.error(tr("app.error.input", message=labelled(exc)))
        fallback = _fallback_plan(ss, known)
        if fallback is None:
            return None
        scenario, plan = fallback
        state.remember_widgets(ss)
    except Exception as exc:  # an engine bug must not show a traceback; the server log keeps it
        log.exception("planning failed")
        st.error(tr("app.error.internal", kind=type(exc).__name__, message=md(exc)))
        return None
    else:
        if upload_failed:  # the file changed nothing: the plan below is the one before it
            st.caption(tr("app.error.showing_last"))
        state.planned(ss, scenario)
        state.remember_widgets(ss)
        encoded = url_codec.encode_scenario(scenario)
        if st.query_params.get(url_codec.URL_PARAM) != encoded:
            st.query_params[url_codec.URL_PARAM] = encoded

    ss["_focus_gpus"] = [o.gpu_id for o in (plan.option(plan.recommendation.primary),
                                             plan.option(plan.recommendation.runner_up)) if o is not None]
    focus, attention = plan_headline.headline(plan, scenario)
    plan_headline.let_the_browser_paint(ss)
    plan_memory.render_memory(plan, focus)
    plan_memory.render_what_fits(plan, scenario)
    plan_table.render_table(plan, scenario)
    plan_notes.render_notes(plan, focus, attention)
    plan_why.render_why(plan, focus, scenario)
    return scenario


def _fallback_plan(ss, known: list[str]) -> tuple[Scenario, Plan] | None:
    """What the page shows under a bad scenario's message: the last scenario that planned in this session, else
    (a first visit, or inputs that changed under it) the shipped default scenario; a caption says which. Both are
    planned under the sidebar's name, as when they were shown, so the plan comes from the cache."""
    last = ss.get(state.PLANNED_KEY)
    if last:
        try:
            scenario = parse_scenario(last, "last valid scenario", known)
            plan = page_data.plan_for(scenario, state.SIDEBAR_SOURCE)
        except InputError:
            pass
        else:
            st.caption(tr("app.error.showing_last"))
            return scenario, plan
    try:
        scenario = load_scenario_file(DEFAULT_SCENARIO, known)
        plan = page_data.plan_for(scenario, state.SIDEBAR_SOURCE)
    except InputError:
        log.exception("the default scenario does not plan")
        return None
    st.caption(trm("app.error.showing_default", name=scenario.name))
    return scenario, plan


def labelled(exc: InputError) -> str:
    """A bad input's message for the page, led by the sidebar label of its field where it has one (the scenario
    path stays in the message: "Global batch — sidebar: training.global_batch: got 100; ...")."""
    row = AT_PATH.get(exc.field.split("[", 1)[0])  # "hardware.gpu_counts[1]" is the GPU counts' field
    label = tr_or(row.label_key, "") if row is not None and row.label_key else ""
    return tr("app.error.field", label=md(label), message=md(exc)) if label else md(exc)


def field_label(key: str) -> str:
    """A widget's name as the sidebar labels it (its row in planner/inputs/fields.py), else its key."""
    row = BY_KEY.get(key)
    return tr_or(row.label_key, key) if row is not None and row.label_key else key


def _file_messages(ss) -> bool:
    """Link and upload problems in one error box at the top of the page; values a widget had to clamp, named.
    Returns whether an upload failed (the plan below is then the one before it)."""
    errors = []
    upload_failed = bool(ss.get("_upload_error"))
    if ss.get("_url_error"):
        errors.append(tr("app.error.link", message=labelled(ss.pop("_url_error"))))
    if upload_failed:
        errors.append(tr("app.error.upload", message=labelled(ss.pop("_upload_error"))))
    if errors:
        st.error(f"**{tr('plan_page.error.title')}**\n\n" + "\n\n".join(errors), icon="🚫")
    elif ss.get("_upload_ok"):
        st.success(tr("app.main.uploaded", name=md(ss.pop("_upload_ok"))))
    if ss.get("_gallery_ok"):
        st.success(tr("plan_page.gallery.loaded", name=md(ss.pop("_gallery_ok"))))
    clamped = ss.pop(state.CLAMPED_KEY, None)
    if clamped:
        loc = locale()
        items = [tr("plan_page.clamped.item", field=md(f"{field_label(k)} ({k})"), given=_value(given, loc),
                    shown=_value(shown, loc)) for k, given, shown in clamped]
        st.warning(tr("plan_page.clamped.intro") + "\n" + "\n".join(f"- {item}" for item in items))
    return upload_failed


def _value(x: object, loc: str) -> str:
    """A value as typed, in the reader's number format (0.005, 0,005; 12,345)."""
    from babel.numbers import format_decimal

    from planner.present import fmt

    if isinstance(x, bool) or not isinstance(x, int | float):
        return md(x)
    return md(format_decimal(x, format="#,##0.######", locale=fmt.babel_locale(loc)))


def _on_gallery(known: list[str]) -> None:
    ss = st.session_state
    path = ss.get("gallery")
    ss["gallery"] = None  # a one-click start, not a lasting choice
    if not path:
        return
    scenario = scenario_files.load_example(path, known)
    state.apply_scenario(ss, scenario, origin=path)
    ss["_gallery_ok"] = scenario.name


def _gallery(known: list[str]) -> None:
    """One-click starts at the top of the page: the shipped scenarios and the LLM, vision and BERT presets."""
    items = gallery_items(page_data.inputs_fingerprint())
    if not items:
        return
    names = {e.path: e.name for e in items}
    st.pills(tr("plan_page.gallery.title"), [e.path for e in items], key="gallery", selection_mode="single",
             format_func=lambda p: names.get(p, p), on_change=_on_gallery, args=(known,),
             help=tr("plan_page.gallery.caption"))


main()
