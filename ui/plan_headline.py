"""The Plan page's headline: the recommended option's metrics and the plan's decision in words."""

from __future__ import annotations

import time

import streamlit as st

from planner.engine.estimates import BORDERLINE_FRACTION, Plan, PlanOption, cost_of, memory_of
from planner.inputs.scenario import Scenario
from planner.present import fmt
from planner.present.charts import option_label
from planner.present.viewmodel import plan_view, planned_for_sentence
from ui.i18n_ui import locale, tr
from ui.markup import gib, md, trm


def closest_to_fitting(plan: Plan) -> PlanOption | None:
    """The option that misses by the least (required / usable smallest): what to show when nothing fits."""
    with_mem = [o for o in plan.options if o.memory is not None]
    return min(with_mem, key=lambda o: memory_of(o).total / memory_of(o).usable, default=None)


def headline(plan: Plan, scenario: Scenario) -> tuple[PlanOption | None, tuple[str, ...]]:
    """Metrics of the recommended option, what to check before deciding, and the runner-up in words; returns the
    option the page explains and the sentences it showed in the warnings box."""
    loc = locale()
    r = plan.recommendation
    primary = plan.option(r.primary)
    if primary is None:
        return _no_recommendation(plan), ()
    c, m = cost_of(primary), memory_of(primary)  # the primary is costed: it fits, has a cost and a price
    view = plan_view(plan, scenario, loc)
    st.subheader(md(view.headline))
    if view.degraded:  # planned with a change the scenario did not ask for (issue 33): said before the set-up
        st.warning(md(view.degraded), icon="↘️")
    st.markdown(md(view.setting))
    st.markdown(md(view.planned_for))  # the stack the plan is made for, and what its step time means per GPU
    st.caption(md(view.throughput))
    cols = st.columns(4)
    if primary.planned_with is not None:  # the figures below are for the planned configuration
        m = primary.planned_with.memory
        said = tr("app.metric.fits_planned")
    else:
        said = tr("common.yes") if primary.fits else tr("app.chart.fit_unknown")  # None: no activation figure
    cols[0].metric(tr("app.metric.fits"), said,
                   delta=tr("app.metric.fits_delta", total=gib(m.total), capacity=gib(m.capacity)),
                   delta_color="off", delta_arrow="off",
                   help=tr("app.metric.fits_help", headroom=fmt.percent(m.headroom, loc),
                                                      band=fmt.percent(BORDERLINE_FRACTION, loc)))
    cols[1].metric(tr("app.metric.hours"), fmt.hours(c.hours, loc),
                   delta=tr("app.metric.range", low=fmt.hours(c.hours_range[0], loc),
                            high=fmt.hours(c.hours_range[1], loc)),
                   delta_color="off", delta_arrow="off", help=tr("app.metric.hours_help"))
    usd = "" if c.currency == "USD" else " · " + fmt.money(c.usd, "USD", loc)
    cols[2].metric(tr("app.metric.cost"), fmt.money(c.amount_in_currency, c.currency, loc),
                   delta=tr("app.metric.range", low=fmt.money(c.amount_range_in_currency[0], c.currency, loc),
                            high=fmt.money(c.amount_range_in_currency[1], c.currency, loc)) + usd,
                   delta_color="off", delta_arrow="off", help=tr("app.metric.cost_help"))
    cols[3].metric(tr("app.metric.gpu_hours"), fmt.number(c.gpu_hours, loc, 0 if c.gpu_hours >= 100 else 1),
                   delta=tr("app.metric.gpu_hours_delta", n=c.n_gpus_billed,
                            price=fmt.money(c.price.usd_per_gpu_hour, "USD", loc, 2) if c.price else "—"),
                   delta_color="off", delta_arrow="off", help=tr("app.metric.gpu_hours_help"))
    if view.cost_lines:  # issue 35 d: every line that makes the cost above, with their sum
        st.caption(md(view.cost_lines))
    attention_box(view.warnings)
    for sentence in view.decision:  # the report's words: why this one, deadline, budget, runner-up
        st.markdown(md(sentence))
    return primary, view.warnings


def attention_box(sentences: tuple[str, ...]) -> None:
    """The report's page-1 warnings (PlanView.warnings), where the decision is made."""
    if sentences:
        st.warning(f"**{tr('attention.title')}**\n\n" + "\n".join(f"- {md(s)}" for s in sentences), icon="⚠️")


def _no_recommendation(plan: Plan) -> PlanOption | None:
    loc = locale()
    if said := planned_for_sentence(plan, loc):
        st.markdown(md(said))
    if not any(o.fits or o.fits is None for o in plan.options):
        o = closest_to_fitting(plan)
        st.subheader(tr("app.main.nothing_fits_title"))
        if o is None:
            st.error(tr("app.main.nothing_fits"))
            return None
        m = memory_of(o)
        st.error(trm("app.main.does_not_fit", option=option_label(o), needed=gib(m.total), usable=gib(m.usable),
                     capacity=gib(m.capacity), micro=o.micro_batch))
        cols = st.columns(3)
        cols[0].metric(tr("app.metric.fits"), tr("common.no"), delta=tr(
            "app.metric.fits_delta", total=gib(m.total), capacity=gib(m.capacity)), delta_color="inverse",
            delta_arrow="off", help=tr("app.metric.fits_help", headroom=fmt.percent(m.headroom, loc),
                                                      band=fmt.percent(BORDERLINE_FRACTION, loc)))
        cols[1].metric(tr("app.metric.needed"), gib(m.total))
        cols[2].metric(tr("app.metric.usable"), gib(m.usable))
        st.info(tr("app.main.nothing_fits_advice"))
        return o
    st.warning(tr("app.main.no_price"))
    return next((o for o in plan.options if o.fits or o.fits is None), None)


# A session's first run sends ~120 elements in one burst, and the browser lays them all out (the table, the chart,
# sixty widgets: each kind's code fetched and compiled on first use) before it paints any of them: the decision's
# numbers came ~1.9 s after navigation where an empty Streamlit app shows its page at ~0.9 s. Pausing that run for
# FIRST_PAINT_PAUSE_S after the headline lets the browser paint the numbers while the server waits; the rest follows
# and the page is complete no later (perf/app_speed.py --browser; A/B in one run, 8 fresh loads each: first numbers
# 1.86 -> 1.06 s, page settled 2.33 -> 2.36 s; 0.1 s of pause: 1.48 s). Widget changes and later runs do not pause,
# nor does a run without a browser (AppTest: no request headers).
FIRST_PAINT_PAUSE_S = 0.3
PAINTED_KEY = "_first_paint_done"


def painted(ss) -> bool:
    """Whether this session's first plan run is over (let_the_browser_paint has run)."""
    return bool(ss.get(PAINTED_KEY))


def let_the_browser_paint(ss) -> None:
    """Call after the headline: pauses the session's first run once, when a browser is there to paint."""
    if painted(ss):
        return
    ss[PAINTED_KEY] = True
    if st.context.headers.get("User-Agent"):
        time.sleep(FIRST_PAINT_PAUSE_S)
