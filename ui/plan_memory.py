"""The Plan page's memory chart: every GPU's memory against its capacity at one precision and GPU count."""

from __future__ import annotations

import streamlit as st

from planner.engine.estimates import Plan, PlanOption, memory_of
from planner.engine.what_fits import what_fits_all
from planner.inputs.scenario import Scenario
from planner.present.charts import memory_spec
from planner.present.fit_answers import preferred_precision, what_fits_headers, what_fits_rows
from ui import page_data
from ui.i18n_ui import dataframe, locale, tr
from ui.panels import lazy_expander


def chart_settings(plan: Plan) -> list[tuple[str, int]]:
    """(precision, GPU count) pairs present in the plan, in plan order."""
    return list(dict.fromkeys((o.precision, o.n_gpus) for o in plan.options))


def memory_options(plan: Plan, precision: str, n_gpus: int) -> list[PlanOption]:
    """The options drawn for one setting: one bar per GPU with a memory estimate, largest capacity first."""
    shown = [o for o in plan.options if o.precision == precision and o.n_gpus == n_gpus and o.memory is not None]
    return sorted(shown, key=lambda o: -memory_of(o).capacity)


def _gpu_and_batch(o: PlanOption) -> str:
    return f"{o.gpu_name} (b={o.micro_batch})"


def render_memory(plan: Plan, primary: PlanOption | None) -> None:
    settings = chart_settings(plan)
    if not settings:
        return
    default = (primary.precision, primary.n_gpus) if primary else settings[0]
    labels = {f"{p} · {tr('app.chart.n_gpus', n=n)}": (p, n) for p, n in settings}
    default_label = next(k for k, v in labels.items() if v == default)
    ss = st.session_state
    if ss.get("_chart_default") != default_label or ss.get("chart_setting") not in labels:
        ss["chart_setting"] = default_label  # follow the recommendation until the user picks another setting
        ss["_chart_default"] = default_label
    st.subheader(tr("app.chart.memory_title"))
    st.selectbox(tr("app.chart.setting"), list(labels), key="chart_setting")
    precision, n = labels[ss["chart_setting"]]
    options = memory_options(plan, precision, n)
    st.caption(tr("app.chart.memory_caption"))
    if options:  # the reports' chart, for the options of this setting, labelled with their micro-batch
        st.vega_lite_chart(memory_spec(None, locale(), options, label=_gpu_and_batch, titled=False),
                           width="stretch")


WHAT_FITS_PANEL = "what_fits"


def render_what_fits(plan: Plan, scenario: Scenario) -> None:
    """What fits on each GPU (issue 33: the largest micro-batch, the longest sequence, the fewest GPUs for a full
    fine-tune, what would make micro-batch 1 fit), built only while its panel is open."""
    box = lazy_expander(tr("what_fits.title"), WHAT_FITS_PANEL)
    if not box.open:
        return
    with box:
        loc = locale()
        answers = what_fits_all(page_data.inputs(), scenario.model, scenario.training, plan.profiles_used,
                                counts=scenario.hardware.gpu_counts, prefer=preferred_precision(plan))
        st.caption(tr("what_fits.intro"))
        headers = what_fits_headers(loc, answers)
        dataframe([dict(zip(headers, row, strict=True)) for row in what_fits_rows(answers, loc)], hide_index=True,
                  width="stretch")
