"""The Runs page: record a finished run against the plan that predicted it; see every recorded run's error."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pandas as pd
import streamlit as st

from planner import __version__
from planner.engine import actuals as errors
from planner.engine.estimates import Plan
from planner.inputs import actuals
from planner.inputs.errors import InputError
from planner.inputs.imports import import_result
from planner.inputs.scenario import Scenario, scenario_to_dict
from planner.present import fmt, planjson
from planner.present.charts import option_label
from ui import page_data
from ui.i18n_ui import begin_run, dataframe, file_uploader, locale, localized, tr
from ui.markup import md, trm

log = logging.getLogger("trainplan.app")
FIGURE_KEYS = {"step_time_s": "act_step", "hours": "act_hours", "cost_usd": "act_cost"}


def _file_step_time(imported, option) -> float:
    """The median step time of the imported file's row for this option (GPU, precision, micro-batch)."""
    rf = imported.result
    for m in rf.measurements:
        if (m.ok and m.source == "measured" and m.step_time_s is not None and m.precision == option.precision
                and m.batch_size == option.micro_batch and rf.gpu_profile_id == option.gpu_id):
            return float(m.step_time_s.median)
    raise InputError(Path(imported.path).name, "measurements", None,
                     f"an ok measured row on {option.gpu_id}, {option.precision}, batch {option.micro_batch}")


def _on_save(plan: Plan, scenario: Scenario) -> None:
    ss = st.session_state
    ss.pop("_act_saved", None)
    ss.pop("_act_error", None)
    try:
        option = plan.option(ss.get("act_option"))
        if option is None:
            raise InputError("recorded run", "option", ss.get("act_option"), "an option of the current plan")
        figures = {k: ss.get(key) for k, key in FIGURE_KEYS.items()}
        step_from, result_file = "typed", None
        upload = ss.get("act_result_file")
        if upload is not None and figures["step_time_s"] is None:
            # The Benchmarks page's import: the file lands in $TRAINPLAN_HOME/results, a measurement plans use.
            imported = import_result(upload.name, upload.getvalue())
            figures["step_time_s"] = _file_step_time(imported, option)
            step_from, result_file = "result_file", str(imported.path)
        actual = actuals.ActualFigures(
            step_time_s=_float(figures["step_time_s"]), hours=_float(figures["hours"]),
            cost_usd=_float(figures["cost_usd"]), step_time_from=step_from, result_file=result_file)
        actuals.check_figures(actual)
        predicted = actuals.predicted_from_plan_json(planjson.option_to_dict(option), planjson.SCHEMA, __version__,
                                                     dt.date.today())
        run = errors.new_run(plan, option.id, scenario=scenario_to_dict(scenario), predicted=predicted, actual=actual,
                             date=ss.get("act_date") or dt.date.today(), note=str(ss.get("act_note") or "").strip())
        saved = actuals.save_run(run)
    except InputError as exc:
        ss["_act_error"] = str(exc)
        return
    except OSError as exc:  # a full disk, a read-only home: said on the page, nothing half-written (atomic)
        ss["_act_error"] = f"{type(exc).__name__}: {exc}"
        return
    ss["_act_saved"] = (saved.path, saved.measured_point, saved.not_a_point)


def _float(x: object) -> float | None:
    return None if x is None else float(x)  # type: ignore[arg-type]


def _prediction(plan: Plan, option_id: str) -> None:
    o = plan.option(option_id)
    if o is None or o.step is None:
        return
    loc = locale()
    parts = [tr("actuals.page.pred_step", step=fmt.sig(o.step.step_time_s, loc),
                low=fmt.sig(o.step.band_s[0], loc), high=fmt.sig(o.step.band_s[1], loc))]
    if o.cost is not None:
        c = o.cost
        parts.append(tr("actuals.page.pred_hours", hours=fmt.hours(c.hours, loc), low=fmt.hours(c.hours_range[0], loc),
                        high=fmt.hours(c.hours_range[1], loc)))
        parts.append(tr("actuals.page.pred_cost", cost=fmt.money(c.usd, "USD", loc),
                        low=fmt.money(c.usd_range[0], "USD", loc), high=fmt.money(c.usd_range[1], "USD", loc)))
    st.caption(md(tr("actuals.page.prediction") + " " + " · ".join(parts)))


def _form(plan: Plan, scenario: Scenario) -> None:
    ss = st.session_state
    ids = errors.recordable(plan)
    if not ids:
        st.info(tr("actuals.page.no_options"))
        return
    primary = plan.recommendation.primary
    if ss.get("act_option") not in ids:  # first visit, or a new plan without it: the recommendation
        ss["act_option"] = primary if primary in ids else ids[0]
    labels = {o.id: option_label(o) + (" ★" if o.id == primary else "") for o in plan.options if o.id in ids}
    st.selectbox(tr("actuals.page.option"), ids, key="act_option", format_func=lambda i: labels.get(i, i),
                 help=tr("actuals.page.option_help"))
    _prediction(plan, ss["act_option"])
    c1, c2, c3 = st.columns(3)
    with c1:
        st.number_input(tr("actuals.page.step"), min_value=0.0, value=None, step=0.01, format="%.4f",
                        key="act_step", help=tr("actuals.page.step_help"))
    with c2:
        st.number_input(tr("actuals.page.hours"), min_value=0.0, value=None, step=1.0, format="%.2f",
                        key="act_hours", help=tr("actuals.page.hours_help"))
    with c3:
        st.number_input(tr("actuals.page.cost"), min_value=0.0, value=None, step=10.0, format="%.2f",
                        key="act_cost", help=tr("actuals.page.cost_help"))
    file_uploader(tr("actuals.page.file"), key="act_result_file", types=("json",),
                  help=tr("actuals.page.file_help"))
    c4, c5 = st.columns([1, 3])
    with c4:
        if "act_date" not in ss:
            ss["act_date"] = dt.date.today()
        st.date_input(tr("actuals.page.date"), key="act_date", format="YYYY-MM-DD")
    with c5:
        st.text_input(tr("actuals.page.note"), key="act_note", max_chars=actuals.MAX_NOTE_CHARS)
    st.button(tr("actuals.page.save"), key="act_save", type="primary", on_click=_on_save, args=(plan, scenario))
    if ss.get("_act_error"):
        st.error(tr("actuals.page.save_error", message=md(ss["_act_error"])))
    elif ss.get("_act_saved"):
        path, point, why = ss["_act_saved"]
        st.success(trm("actuals.page.saved", path=path))
        if point:
            st.info(trm("actuals.page.became_point", file=Path(point).name))
        elif why:
            st.info(tr(f"actuals.why_not.{why}"))


def runs_frame(runs: list[actuals.RecordedRun]) -> pd.DataFrame:
    """One row per recorded run: predicted, actual and the error in % of each figure, and whether it was in range."""
    loc = locale()
    rows = []
    for run in reversed(runs):  # newest first
        row: dict[str, object] = {tr("actuals.col.date"): fmt.date(run.date, loc),
                                  tr("actuals.col.scenario"): run.scenario_name,
                                  tr("actuals.col.option"): run.option.option_id}
        errs = {e.figure: e for e in errors.run_errors(run)}
        inside = []
        for figure in actuals.FIGURES:
            e = errs.get(figure)
            row[tr(f"actuals.col.{figure}_pred")] = run.predicted.get(figure)
            row[tr(f"actuals.col.{figure}_actual")] = run.actual.get(figure)
            row[tr(f"actuals.col.{figure}_error")] = None if e is None or e.error is None else 100.0 * e.error
            if e is not None and e.inside is not None:
                inside.append(tr(f"actuals.figure.{figure}") + " " + ("✓" if e.inside else "✗"))
        row[tr("actuals.col.inside")] = " · ".join(inside) or "—"
        row[tr("actuals.col.point")] = (tr("actuals.page.point_label", file=Path(run.measured_point).name)
                                        if run.measured_point else
                                        tr(f"actuals.why_not.{run.not_a_point}") if run.not_a_point else "—")
        row[tr("actuals.col.note")] = run.note or ""
        rows.append(row)
    return pd.DataFrame(rows)


def _table() -> None:
    runs, problems = actuals.scan_actuals()
    st.subheader(tr("actuals.page.table_title"))
    st.caption(trm("actuals.page.table_intro", folder=str(actuals.actuals_dir())))
    for problem in problems:
        st.warning(tr("actuals.page.bad_file", message=md(problem)))
    if not runs:
        st.info(tr("actuals.page.none_yet"))
        return
    frame = runs_frame(runs)
    formats: dict[str, int | str] = {}
    for figure, how in (("step_time_s", "g"), ("hours", 2), ("cost_usd", "usd2")):
        formats[tr(f"actuals.col.{figure}_pred")] = how
        formats[tr(f"actuals.col.{figure}_actual")] = how
        formats[tr(f"actuals.col.{figure}_error")] = 1
    dataframe(localized(frame, formats), hide_index=True, width="stretch", key="act_table")


def main() -> None:
    begin_run()
    inputs = page_data.inputs()
    st.title(tr("actuals.page.title"))
    st.caption(tr("actuals.page.tagline"))
    try:
        scenario, origin = page_data.current_scenario(list(inputs.profiles))
        plan = page_data.plan_for(scenario)
    except InputError as exc:
        st.error(tr("actuals.page.plan_error", error=md(exc)))
        plan = None
    except Exception as exc:  # an engine bug must not show a traceback; the server log keeps it
        log.exception("runs: planning failed")
        st.error(tr("actuals.page.plan_error", error=md(f"{type(exc).__name__}: {exc}")))
        plan = None
    if plan is not None:
        st.subheader(tr("actuals.page.record_title"))
        st.caption(trm(f"actuals.page.from_{origin}", name=scenario.name))
        _form(plan, scenario)
    _table()


if __name__ == "__main__":
    main()
