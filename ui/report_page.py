"""The Report page: preview the plan report for the current scenario; download HTML, PDF, Markdown, CSV, YAML."""

from __future__ import annotations

import datetime as dt
import functools
import logging

import streamlit as st

from planner.inputs.errors import InputError
from planner.inputs.scenario import Scenario, dump_scenario_yaml, scenario_to_dict
from ui import page_data, scenario_files, state
from ui.i18n_ui import LOCALES, choice_label, tr
from ui.markup import md

log = logging.getLogger("trainplan.app")
PAPERS = ("A4", "Letter")
ALL_LOCALES = tuple(loc for group in LOCALES.values() for loc in group)


# ---------------------------------------------------------------- reports (cached per scenario and choices)

@st.cache_data(show_spinner=False, max_entries=64)
def _render(kind: str, scenario_yaml: str, fingerprint: str, today_iso: str, loc: str, all_options: bool,
            paper: str, _scenario: Scenario, runs_key: str = "", _runs: tuple = ()) -> str | bytes:
    from planner.present.report import options_csv, render_report

    plan = page_data.plan_for(_scenario)
    today = dt.date.fromisoformat(today_iso)
    from planner.engine.what_fits import what_fits_all
    from planner.present.fit_answers import preferred_precision

    fits = what_fits_all(page_data.inputs(), _scenario.model, _scenario.training, plan.profiles_used,
                         counts=_scenario.hardware.gpu_counts, prefer=preferred_precision(plan)) \
        if kind != "csv" else ()
    if kind == "preview":
        from planner.present.report.html import render_fragment
        from planner.present.report.model import build_report_model

        return render_fragment(build_report_model(plan, _scenario, loc, all_options=all_options, today=today,
                                                  runs=_runs, what_fits=fits))
    if kind == "csv":
        return options_csv(plan)
    return render_report(plan, _scenario, kind, locale=loc, all_options=all_options, paper=paper, today=today,
                         runs=_runs, what_fits=fits)


def _recorded_runs() -> tuple[tuple, str]:
    """The runs recorded on the Runs page (the report shows its model's) and a key that changes with them; a
    broken run file is listed on the Runs page, not here."""
    import hashlib
    import json

    from planner.inputs import actuals

    runs, _problems = actuals.scan_actuals()
    key = hashlib.sha256(json.dumps([actuals.run_to_dict(r) for r in runs], sort_keys=True,
                                    default=str).encode()).hexdigest() if runs else ""
    return tuple(runs), key


def locale_name(loc: str) -> str:
    """'es-AR' -> 'español (Argentina) · es-AR', in its own language."""
    from babel import Locale

    from planner.present.fmt import babel_locale

    return f"{Locale.parse(babel_locale(loc)).get_display_name()} · {loc}"


# ---------------------------------------------------------------- the page

def _on_report_locale(scenario: Scenario) -> None:
    """The language picked here becomes the scenario's locale: its downloads and link keep it."""
    ss = st.session_state
    ss[state.BASE_KEY] = {**(ss.get(state.BASE_KEY) or scenario_to_dict(scenario)), "locale": ss["report_locale"]}


def main() -> None:
    ss = st.session_state
    fingerprint = page_data.inputs_fingerprint()
    inputs = page_data.inputs()
    known = list(inputs.profiles)
    st.title(tr("report.page.title"))
    st.caption(tr("report.page.intro"))
    for problem in inputs.problems:  # a skipped profile, result file or price changes the report's numbers
        st.warning(md(problem))
    try:
        scenario, _origin = page_data.current_scenario(known)
        today = dt.date.today().isoformat()
        scenario_yaml = dump_scenario_yaml(scenario)
        page_data.plan_for(scenario)
    except InputError as exc:
        st.error(tr("report.page.error", error=str(exc)))
        return
    except Exception as exc:  # an engine bug must not show a traceback; the server log keeps it
        log.exception("report: planning failed")
        st.error(tr("report.page.error", error=f"{type(exc).__name__}: {exc}"))
        return

    # The report's language is the scenario's locale (a file's, a link's, or the one picked here), not the UI's.
    ss["report_locale"] = scenario.locale if scenario.locale in ALL_LOCALES else "en"
    c1, c2, c3 = st.columns([2, 2, 1])
    with c1:
        st.selectbox(tr("report.page.locale"), ALL_LOCALES, key="report_locale", format_func=locale_name,
                     on_change=_on_report_locale, args=(scenario,))
    with c2:
        st.checkbox(tr("report.page.all_options"), key="report_all_options")
    with c3:
        st.radio(tr("report.page.paper"), PAPERS, key="report_paper", horizontal=True,
                 format_func=choice_label("report.page.paper_size"))
    loc, all_options, paper = ss["report_locale"], bool(ss["report_all_options"]), ss["report_paper"]
    runs, runs_key = _recorded_runs()
    args = (scenario_yaml, fingerprint, today, loc, all_options, paper, scenario, runs_key, runs)
    stem = f"{scenario_files.file_stem(scenario)}-{loc}"

    st.subheader(tr("report.page.downloads"))
    buttons = (("html", "text/html", f"{stem}.html"), ("pdf", "application/pdf", f"{stem}.pdf"),
               ("markdown", "text/markdown", f"{stem}.md"), ("csv", "text/csv", f"{scenario_files.file_stem(scenario)}-options.csv"))
    cols = st.columns(len(buttons) + 1)
    for col, (kind, mime, name) in zip(cols, buttons, strict=False):
        with col:
            # Deferred: the file is made when clicked (a PDF takes about a second), then cached.
            st.download_button(tr(f"report.page.{kind}"), data=functools.partial(_render, kind, *args),
                               file_name=name, mime=mime, key=f"report_dl_{kind}", on_click="ignore",
                               width="stretch")
    with cols[-1]:
        st.download_button(tr("report.page.yaml"), data=scenario_yaml, file_name=f"{scenario_files.file_stem(scenario)}.yaml",
                           mime="application/x-yaml", key="report_dl_yaml", on_click="ignore", width="stretch")

    st.subheader(tr("report.page.preview"))
    with st.container(border=True):
        # Our own HTML: every text in it is escaped by planner.present.report.html; st.html sanitizes it again and
        # runs no scripts. Its styles are scoped to .tp-report.
        st.html(_render("preview", *args))


main()
