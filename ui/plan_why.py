"""The Plan page's 'why this number' panels: the inputs, formula, file or quote behind each figure (built only
while a panel is open)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from planner.engine.estimates import (
    ConvergenceEstimate,
    MemoryEstimate,
    Plan,
    PlanOption,
    ScalingEstimate,
    Source,
    StepEstimate,
    cost_of,
)
from planner.engine.notes import Note
from planner.inputs.fields import AT_PATH
from planner.inputs.scenario import Scenario
from planner.present import fmt
from planner.present.charts import option_label
from planner.present.notes import price_source_text
from planner.present.viewmodel import cost_line_parts, cost_lines_sentence
from ui.i18n_ui import locale, note, tr, tr_or
from ui.markup import gib, md, source_text, trm
from ui.panels import lazy_expander

# The panels' names (ui.panels), in page order.
PANELS = ("why_memory", "why_step", "why_scaling", "why_steps", "why_hours", "why_cost", "why_inputs")


def _field(path: str) -> str:
    """A scenario field's name as the sidebar labels it (its row in planner/inputs/fields.py)."""
    return tr(AT_PATH[path].label_key or path)


def _kv_table(rows: Sequence[tuple[str, str]]) -> None:
    st.table(pd.DataFrame(rows, columns=[tr("app.why.input"), tr("app.why.value")]).set_index(tr("app.why.input")))


def render_why(plan: Plan, o: PlanOption | None, scenario: Scenario) -> None:
    """Panels that show, for the option the page explains, the inputs and the formula or file behind each figure;
    each body is built only while its panel is open (ui.panels)."""
    if o is None:
        return
    loc = locale()
    st.subheader(trm("app.why.title", option=option_label(o)))
    m, s, conv, c = o.memory, o.step, o.convergence, o.cost
    if m is not None:
        _panel(tr("app.why.memory", total=gib(m.total)), "why_memory", lambda: _memory(o, m, loc))
    if s is not None:
        _panel(tr("app.why.step", step=fmt.sig(s.step_time_s, loc) + " s"), "why_step", lambda: _step(o, s, loc))
    if (sc := o.scaling) is not None:
        _panel(tr("app.why.scaling", efficiency=fmt.percent(sc.efficiency, loc)), "why_scaling",
               lambda: _scaling(sc, loc))
    if conv is not None:
        _panel(tr("app.why.steps", steps=fmt.number(conv.steps, loc, 0)), "why_steps",
               lambda: _steps(conv, scenario, loc))
    if c is not None:
        _panel(tr("app.why.hours", hours=fmt.hours(c.hours, loc)), "why_hours", lambda: _hours(o, scenario, loc))
        _panel(tr("app.why.cost", cost=fmt.money(c.amount_in_currency, c.currency, loc)), "why_cost",
               lambda: _cost(o, scenario, loc))
    _panel(tr("app.why.inputs"), "why_inputs", lambda: _inputs(plan))


def _panel(label: str, name: str, body: Callable[[], None]) -> None:
    with (panel := lazy_expander(label, name)):
        if panel.open:
            body()


def _memory(o: PlanOption, m: MemoryEstimate, loc: str) -> None:
    rows = [(tr(f"common.part.{p}"), fmt.number(v, loc, 2) + " GiB") for p, v in m.parts_gib().items()]
    rows += [(tr("app.why.allocated_peak"), gib(m.allocated_peak, 2)),
             (tr("app.why.reserved_peak"), gib(m.reserved_peak, 2)),
             (tr("app.why.total"), gib(m.total, 2)), (tr("app.why.phase"), tr(f"common.phase.{m.phase}")),
             (tr("app.why.capacity"), gib(m.capacity, 2)),
             (tr("app.why.usable"), gib(m.usable, 2)), (tr("app.why.headroom"), fmt.percent(m.headroom, loc)),
             (tr("app.col.micro_batch"), str(o.micro_batch)), (tr("app.col.grad_accum"), str(o.grad_accum))]
    _explained(rows, formula="app.why.memory_formula", source=m.source, notes=m.notes)


def _step(o: PlanOption, s: StepEstimate, loc: str) -> None:
    rows = [(tr("app.why.micro_step"), fmt.sig(s.micro_step_time_s, loc) + " s"),
            (tr("app.col.grad_accum"), str(o.grad_accum)),
            (tr("app.why.exposed_comm"), fmt.sig(s.exposed_comm_s, loc) + " s"),
            (tr("app.why.input_time"), fmt.sig(s.input_time_s, loc) + " s" if s.input_time_s else "—"),
            (tr("app.why.band"), f"{fmt.sig(s.band_s[0], loc)} – {fmt.sig(s.band_s[1], loc)} s"),
            (tr("app.col.samples_per_s"), fmt.number(s.samples_per_s, loc, 1))]
    _explained(rows, formula="app.why.step_formula", source=s.source, notes=s.notes)


def _scaling(sc: ScalingEstimate, loc: str) -> None:
    _explained([(tr("app.why.efficiency"), fmt.percent(sc.efficiency, loc)),
                (tr("app.why.allreduce"), fmt.sig(sc.allreduce_s, loc) + " s"),
                (tr("app.why.exposed_comm"), fmt.sig(sc.exposed_comm_s, loc) + " s")], source=sc.source)


def _steps(conv: ConvergenceEstimate, scenario: Scenario, loc: str) -> None:
    rows = [(tr("app.col.steps"), fmt.number(conv.steps, loc, 0)),
            (tr("app.why.samples"), fmt.number(conv.samples, loc, 0))]
    if conv.epochs is not None:
        rows.append((tr("app.why.epochs"), fmt.sig(conv.epochs, loc)))
    if conv.steps_range:
        rows.append((tr("app.why.steps_range"), f"{fmt.number(conv.steps_range[0], loc, 0)} – "
                                                 f"{fmt.number(conv.steps_range[1], loc, 0)}"))
    if conv.b_crit:
        rows.append((tr("app.why.b_crit"), fmt.number(conv.b_crit, loc, 0)))
    rows.append((_field("training.global_batch"), fmt.number(scenario.training.global_batch, loc, 0)))
    _explained(rows, source=conv.source, notes=conv.notes)


def _hours(o: PlanOption, scenario: Scenario, loc: str) -> None:
    c, s, conv = cost_of(o), o.step, o.convergence
    w, p = scenario.workload, scenario.pricing
    _explained([(tr("app.col.steps"), fmt.number(conv.steps, loc, 0) if conv else "—"),
               (_field("workload.early_stop_fraction"), fmt.number(w.early_stop_fraction, loc, 2)),
               (tr("app.col.step_s"), fmt.sig(s.step_time_s, loc) if s else "—"),
               (_field("workload.eval_overhead"), fmt.percent(w.eval_overhead, loc)),
               (_field("workload.checkpoint_overhead"), fmt.percent(w.checkpoint_overhead, loc)),
               (_field("pricing.failure_overhead"), fmt.percent(p.failure_overhead, loc)),
               (_field("pricing.runs"), str(p.runs)),
               (tr("app.why.hours_range"), f"{fmt.hours(c.hours_range[0], loc)} – "
                                            f"{fmt.hours(c.hours_range[1], loc)}")], formula="app.why.hours_formula")


def _cost(o: PlanOption, scenario: Scenario, loc: str) -> None:
    c, p = cost_of(o), scenario.pricing
    rows = [(tr("app.col.gpu_hours"), fmt.number(c.gpu_hours, loc, 1)),
            (tr("app.why.gpus_billed"), str(c.n_gpus_billed))]
    if o.topology:
        rows.append((tr("app.col.topology"), tr(f"common.topology.{o.topology}")))
    if c.price is not None:
        pr = c.price
        rows += [(tr("app.why.price"), fmt.money(pr.usd_per_gpu_hour, "USD", loc, 3)),
                 (tr("app.why.provider"), fmt.offer(pr.provider, pr.instance, pr.region)),
                 (_field("pricing.tier"), tr_or(f"common.tier.{pr.tier}", pr.tier)),
                 (tr("app.why.price_date"), fmt.date(pr.as_of, loc) if pr.as_of else tr("app.why.undated")),
                 (tr("app.why.price_origin"), tr_or(f"common.origin.{pr.origin}", pr.origin)),
                 (tr("app.why.price_source"), price_source_text(pr, locale()))]
    rows += [(_field("pricing.tax_rate"), fmt.percent(p.tax_rate, loc))]
    rows += [(tr(f"app.why.cost_line.{name}"), fmt.money(usd, "USD", loc)) for name, usd, _ in cost_line_parts(o, loc)]
    rows += [(tr("app.col.cost_usd"), fmt.money(c.usd, "USD", loc))]
    if c.currency != "USD":
        as_of = fmt.date(p.exchange_rate_as_of, loc) if p.exchange_rate_as_of else tr("app.why.undated")
        rows += [(tr("app.why.exchange_rate"), f"{fmt.sig(p.exchange_rate, loc, 4)} {c.currency}/USD · {as_of}")]
    if c.preemptions:
        rows.append((tr("app.why.preemptions"), fmt.number(c.preemptions, loc, 1)))
    if c.energy_kwh is not None:
        rows.append((tr("app.col.energy_kwh"), fmt.number(c.energy_kwh, loc, 0)))
    _explained(rows, formula="app.why.cost_formula", notes=c.notes)
    if adds_up := cost_lines_sentence(o, loc):  # the formula with this option's numbers: its lines add up
        st.markdown(md(adds_up))


def _inputs(plan: Plan) -> None:
    st.markdown(trm("app.why.profiles", n=len(plan.profiles_used), ids=", ".join(plan.profiles_used)))
    if plan.result_files_used:
        st.markdown(tr("app.why.result_files"))
        _bullets(plan.result_files_used)
    else:
        st.markdown(tr("app.why.no_result_files"))


def _explained(rows: Sequence[tuple[str, str]], *, formula: str | None = None, source: Source | None = None,
               notes: Sequence[Note] = ()) -> None:
    """A panel's body: its inputs as a table, then the formula (a catalog key), the source and the notes."""
    _kv_table(rows)
    if formula:
        st.markdown(tr(formula))
    if source is not None:
        st.markdown(trm("app.why.source", source=source_text(source)))
    _bullets(notes)


def _bullets(items: Sequence[Note | str]) -> None:
    if items:
        st.markdown("\n".join(f"- {md(note(x))}" for x in items))
