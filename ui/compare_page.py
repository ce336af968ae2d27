"""The Compare page: save the current scenario, pick saved ones, see them side by side, the frontier and scaling."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.engine.estimates import cost_of
from planner.inputs.errors import InputError
from planner.inputs.scenario import load_scenario_file
from planner.present import compare, fmt
from planner.present.charts import option_label
from planner.present.viewmodel import plan_view
from ui import page_data
from ui.i18n_ui import begin_run, dataframe, locale, localized, tr
from ui.markup import md, trm

CURRENT = "__current__"
MAX_DEFAULT = 4


def _on_save(current) -> None:
    ss = st.session_state
    ss.pop("_cmp_saved", None)
    ss.pop("_cmp_save_error", None)
    try:
        path = compare.save_scenario(current, ss["cmp_save_name"])
    except InputError as exc:
        ss["_cmp_save_error"] = str(exc)
        return
    ss["_cmp_saved"] = str(path)
    picked = list(ss.get("cmp_pick") or [CURRENT])
    ss["cmp_pick"] = picked if str(path) in picked else [*picked, str(path)]


def _save_section(current) -> None:
    ss = st.session_state
    st.subheader(tr("pages.compare.save_title"))
    # Follow the Plan page's scenario until the user types a name (and refill after a visit to another page,
    # which drops this page's widget values).
    if ss.get("cmp_save_for") != current.name or "cmp_save_name" not in ss:
        ss["cmp_save_name"] = current.name
        ss["cmp_save_for"] = current.name
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    with c1:
        st.text_input(tr("pages.compare.save_name"), key="cmp_save_name", max_chars=compare.MAX_NAME_CHARS,
                      help=tr("pages.compare.save_help"))
    with c2:
        st.button(tr("pages.compare.save_button"), key="cmp_save", type="primary", width="stretch",
                  on_click=_on_save, args=(current,))
    if ss.get("_cmp_save_error"):
        st.error(tr("pages.compare.save_error", message=md(ss["_cmp_save_error"])))
    elif ss.get("_cmp_saved"):
        st.success(trm("pages.compare.saved", path=ss["_cmp_saved"]))


def _pick(saved) -> tuple[list[str], dict[str, str]]:
    ss = st.session_state
    options = [CURRENT] + [s.path for s in saved]
    names = {CURRENT: tr("pages.compare.current")} | {s.path: s.name for s in saved}
    if "cmp_pick" not in ss:
        ss["cmp_pick"] = [CURRENT] + [s.path for s in saved[:MAX_DEFAULT - 1]]
    elif any(p not in options for p in ss["cmp_pick"]):  # a file deleted outside the app
        ss["cmp_pick"] = [p for p in ss["cmp_pick"] if p in options]
    st.multiselect(tr("pages.compare.pick"), options, key="cmp_pick", format_func=lambda p: names.get(p, p),
                   help=tr("pages.compare.pick_help"))
    return list(ss["cmp_pick"]), names


def _load(picked, names, current, known) -> list[compare.Compared]:
    items, labels = [], compare.unique_labels([names[p] for p in picked])
    for path, label in zip(picked, labels, strict=True):
        try:
            scenario = current if path == CURRENT else load_scenario_file(path, known)
            items.append(compare.Compared(label, scenario, page_data.plan_for(scenario)))
        except InputError as exc:
            st.error(tr("pages.compare.load_error", name=md(label), message=md(exc)))
    return items


def summary_frame(items) -> pd.DataFrame:
    """Metrics as rows, scenarios as columns (side by side), formatted in the session's locale."""
    loc = locale()
    rows: dict[str, list[str]] = {}

    def put(key: str, value: str) -> None:
        rows.setdefault(tr(f"pages.compare.row.{key}"), []).append(value)

    for it in items:
        s = compare.summarize(it)
        p = s.primary
        put("model", s.model)
        put("fits", tr("pages.compare.fits_value", yes=tr("common.yes") if s.n_fit else tr("common.no"),
                       n=s.n_fit, total=s.n_options))
        put("recommended", option_label(p) if p else tr("pages.compare.none"))
        put("micro_batch", f"{p.micro_batch} × {p.grad_accum}" if p else "—")
        put("hours", fmt.hours(s.hours, loc) if s.hours is not None else "—")
        put("hours_range", f"{fmt.hours(s.hours_range[0], loc)} – {fmt.hours(s.hours_range[1], loc)}"
            if s.hours_range else "—")
        put("cost", fmt.money(s.cost_local, s.currency, loc) if s.cost_local is not None else "—")
        put("cost_usd", fmt.money(s.cost_usd, "USD", loc) if s.cost_usd is not None else "—")
        put("gpu_hours", fmt.number(s.gpu_hours, loc, 1) if s.gpu_hours is not None else "—")
        put("deadline", _check(s.within_deadline))
        put("budget", _check(s.within_budget))
        put("runner_up", option_label(s.runner_up) if s.runner_up else "—")
        if s.primary is not None:
            put("reason", plan_view(it.plan, it.scenario, loc).reason)
        else:
            put("reason", tr("app.main.no_price") if s.n_fit else tr("app.main.nothing_fits_title"))
    return pd.DataFrame(rows, index=[it.label for it in items]).T


def _check(value: bool | None) -> str:
    if value is None:
        return "—"
    return tr("pages.compare.within") if value else tr("pages.compare.outside")


def frontier_frame(points) -> pd.DataFrame:
    return pd.DataFrame([{tr("pages.compare.col.scenario"): p.label, tr("pages.compare.col.option"): option_label(p.option),
                          tr("pages.compare.col.hours"): round(cost_of(p.option).hours, 2),
                          tr("pages.compare.col.cost_usd"): round(cost_of(p.option).usd, 2),
                          tr("pages.compare.col.recommended"): p.recommended,
                          tr("pages.compare.col.option_id"): p.option.id} for p in compare.frontier(points)])


def scaling_frame(rows) -> pd.DataFrame:
    def pct(x):
        return None if x is None else round(100 * x, 1)

    return pd.DataFrame([{tr("pages.compare.col.scenario"): r.label, tr("pages.compare.col.n_gpus"): r.n_gpus,
                          tr("pages.compare.col.fits"): r.fits,
                          tr("pages.compare.col.hours"): None if r.hours is None else round(r.hours, 2),
                          tr("pages.compare.col.cost_usd"): None if r.cost_usd is None else round(r.cost_usd, 2),
                          tr("pages.compare.col.gpu_hours"): None if r.gpu_hours is None else round(r.gpu_hours, 1),
                          tr("pages.compare.col.speedup"): None if r.speedup is None else round(r.speedup, 2),
                          tr("pages.compare.col.efficiency"): pct(r.efficiency),
                          tr("pages.compare.col.comm_efficiency"): pct(r.comm_efficiency)} for r in rows])


def _scaling_section(items) -> None:
    ss = st.session_state
    loc = locale()
    st.subheader(tr("pages.compare.scaling_title"))
    gpus, precisions = compare.scaling_choices(items)
    if not gpus:
        st.info(tr("pages.compare.no_costed"))
        return
    gpu_ids = [g for g, _ in gpus]
    names = dict(gpus)
    default_gpu, default_precision = compare.default_scaling_choice(items)
    if ss.get("cmp_gpu") not in gpu_ids:
        ss["cmp_gpu"] = default_gpu if default_gpu in gpu_ids else gpu_ids[0]
    if ss.get("cmp_precision") not in precisions:
        ss["cmp_precision"] = default_precision if default_precision in precisions else precisions[0]
    c1, c2 = st.columns(2)
    with c1:
        st.selectbox(tr("pages.compare.gpu"), gpu_ids, key="cmp_gpu", format_func=lambda g: names.get(g, g))
    with c2:
        st.selectbox(tr("pages.compare.precision"), precisions, key="cmp_precision")
    rows = compare.scaling_rows(items, ss["cmp_gpu"], ss["cmp_precision"])
    verdicts = compare.verdicts(rows)
    for v in verdicts:
        # More GPUs can be slower (separate instances over a slow network): say "slower", never "0.013× faster".
        slower = v.speedup < 1
        st.markdown(trm("pages.compare.verdict_slower" if slower else "pages.compare.verdict", scenario=v.label,
                        large=v.n_large, small=v.n_small, gpu=v.gpu_name,
                        speedup=fmt.sig(1 / v.speedup if slower else v.speedup, loc, 2),
                        cost=fmt.sig(v.cost_ratio, loc, 2),
                        efficiency=fmt.percent(v.efficiency, loc, 0 if v.efficiency >= 0.1 else 1)))
    if not verdicts:
        st.caption(tr("pages.compare.no_verdict"))
    if any(r.hours is not None for r in rows):
        st.altair_chart(compare.scaling_chart(rows, loc, [it.label for it in items]), width="stretch")
    st.caption(tr("pages.compare.scaling_caption"))
    dataframe(localized(scaling_frame(rows), {tr(f"pages.compare.col.{c}"): d for c, d in (
        ("hours", 2), ("cost_usd", 2), ("gpu_hours", 1), ("speedup", 2), ("efficiency", 1), ("comm_efficiency", 1))}),
        hide_index=True, width="stretch", key="cmp_scaling_table")


def _on_delete() -> None:
    ss = st.session_state
    path = ss.get("cmp_delete_pick")
    if not path:
        return
    compare.delete_saved(path)
    ss["cmp_pick"] = [p for p in (ss.get("cmp_pick") or []) if p != path]
    ss["cmp_delete_pick"] = None
    if ss.get("_cmp_saved") == path:
        ss.pop("_cmp_saved")


def _manage(saved) -> None:
    if not saved:
        return
    ss = st.session_state
    with st.expander(tr("pages.compare.manage", n=len(saved))):
        names = {s.path: f"{s.name} · {fmt.date(s.modified.date(), locale())}" for s in saved}
        st.selectbox(tr("pages.compare.delete_pick"), list(names), key="cmp_delete_pick",
                     format_func=lambda p: names.get(p, p), index=None,
                     placeholder=tr("pages.compare.delete_placeholder"))
        st.button(tr("pages.compare.delete_button"), key="cmp_delete", disabled=not ss.get("cmp_delete_pick"),
                  on_click=_on_delete)


def main() -> None:
    begin_run()
    inputs = page_data.inputs()
    known = list(inputs.profiles)
    current, origin = page_data.current_scenario(known)
    st.title(tr("pages.compare.title"))
    st.caption(tr("pages.compare.tagline"))
    st.caption(trm(f"pages.compare.current_from_{origin}", name=current.name))
    _save_section(current)

    saved, problems = compare.list_saved(known_gpu_ids=known)
    for problem in problems:
        st.warning(tr("pages.compare.bad_file", message=md(problem)))
    st.subheader(tr("pages.compare.side_title"))
    picked, names = _pick(saved)
    _manage(saved)
    if not picked:
        st.info(tr("pages.compare.pick_some"))
        return
    items = _load(picked, names, current, known)
    if not items:
        return
    dataframe(summary_frame(items), width="stretch", key="cmp_summary",
              height=38 + 35 * 13)

    st.subheader(tr("pages.compare.frontier_title"))
    points = compare.cost_time_points(items)
    if not points:
        st.info(tr("pages.compare.no_costed"))
    else:
        st.altair_chart(compare.cost_time_chart(points, locale(), [it.label for it in items]), width="stretch")
        st.caption(tr("compare_frontier.caption", n=len(compare.frontier(points)), total=len(points)))
        dataframe(localized(frontier_frame(points), {tr("pages.compare.col.hours"): 2,
                                                      tr("pages.compare.col.cost_usd"): 2}),
                  hide_index=True, width="stretch", key="cmp_frontier")
    _scaling_section(items)


if __name__ == "__main__":
    main()
