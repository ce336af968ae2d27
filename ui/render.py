"""What the plan page shows: headline metrics, memory chart, options table, notes, and 'why this number'."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from planner.engine.estimates import Plan, PlanOption
from planner.engine.recommend import costed
from planner.inputs.scenario import Scenario
from planner.present import fmt
from planner.present.charts import memory_spec
from planner.present.viewmodel import plan_view
from planner.vocab import GIB
from ui.i18n_ui import locale, note, tr, tr_or

PART_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442", "#999999")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~$])")


def md(text: object) -> str:
    """Text safe to put in st.markdown: markdown and LaTeX characters escaped (HTML is never enabled)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def trm(key: str, **params: object) -> str:
    """Catalog text with its parameters escaped for markdown (they may hold file or user text)."""
    return tr(key, **{k: md(v) for k, v in params.items()})


def option_label(o: PlanOption) -> str:
    return f"{o.n_gpus} × {o.gpu_name} · {o.precision}"


def gib(x_bytes: float | None, digits: int = 1) -> str:
    return "—" if x_bytes is None else fmt.number(x_bytes / GIB, locale(), digits) + " GiB"


def source_text(source) -> str:
    """'measured (file, date)' in the session's language; the detail stays as the planner wrote it."""
    if source is None:
        return "—"
    kind = tr_or(f"common.source.{source.kind}", source.kind) if source.kind else ""
    return f"{kind}: {source.detail}" if source.detail else kind


def closest_to_fitting(plan: Plan) -> PlanOption | None:
    """The option that misses by the least (required / usable smallest): what to show when nothing fits."""
    with_mem = [o for o in plan.options if o.memory is not None]
    return min(with_mem, key=lambda o: o.memory.total / o.memory.usable, default=None)


# ---------------------------------------------------------------- headline

def headline(plan: Plan, scenario: Scenario) -> PlanOption | None:
    """Metrics of the recommended option and the runner-up in words; returns the option the page explains."""
    loc = locale()
    r = plan.recommendation
    primary = plan.option(r.primary)
    if primary is None:
        return _no_recommendation(plan)
    c, m = primary.cost, primary.memory
    view = plan_view(plan, scenario, loc)
    st.subheader(md(view.headline))
    st.markdown(md(view.setting))
    cols = st.columns(4)
    cols[0].metric(tr("app.metric.fits"), tr("common.yes"),
                   delta=tr("app.metric.fits_delta", total=gib(m.total), capacity=gib(m.capacity)),
                   delta_color="off", delta_arrow="off",
                   help=tr("app.metric.fits_help", headroom=fmt.percent(m.headroom, loc)))
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
    for sentence in view.decision:  # the report's words: why this one, deadline, budget, runner-up
        st.markdown(md(sentence))
    return primary


def _no_recommendation(plan: Plan) -> PlanOption | None:
    loc = locale()
    if not any(o.fits for o in plan.options):
        o = closest_to_fitting(plan)
        st.subheader(tr("app.main.nothing_fits_title"))
        if o is None:
            st.error(tr("app.main.nothing_fits"))
            return None
        m = o.memory
        st.error(trm("app.main.does_not_fit", option=option_label(o), needed=gib(m.total), usable=gib(m.usable),
                     capacity=gib(m.capacity), micro=o.micro_batch))
        cols = st.columns(3)
        cols[0].metric(tr("app.metric.fits"), tr("common.no"), delta=tr(
            "app.metric.fits_delta", total=gib(m.total), capacity=gib(m.capacity)), delta_color="inverse",
            delta_arrow="off", help=tr("app.metric.fits_help", headroom=fmt.percent(m.headroom, loc)))
        cols[1].metric(tr("app.metric.needed"), gib(m.total))
        cols[2].metric(tr("app.metric.usable"), gib(m.usable))
        st.info(tr("app.main.nothing_fits_advice"))
        return o
    st.warning(tr("app.main.no_price"))
    return next((o for o in plan.options if o.fits), None)


# ---------------------------------------------------------------- memory chart

def chart_settings(plan: Plan) -> list[tuple[str, int]]:
    """(precision, GPU count) pairs present in the plan, in plan order."""
    return list(dict.fromkeys((o.precision, o.n_gpus) for o in plan.options))


def memory_options(plan: Plan, precision: str, n_gpus: int) -> list[PlanOption]:
    """The options drawn for one setting: one bar per GPU with a memory estimate, largest capacity first."""
    shown = [o for o in plan.options if o.precision == precision and o.n_gpus == n_gpus and o.memory is not None]
    return sorted(shown, key=lambda o: -o.memory.capacity)


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


# ---------------------------------------------------------------- options table

COLUMNS = ("role", "gpu", "n_gpus", "precision", "fits", "micro_batch", "grad_accum", "memory_gib", "capacity_gib",
           "headroom_pct", "memory_source", "step_s", "samples_per_s", "step_source", "steps", "steps_source", "hours",
           "hours_low", "hours_high", "gpu_hours", "cost_usd", "cost_local", "price", "price_source", "energy_kwh",
           "notes", "option")


def options_frame(plan: Plan, fits_only: bool = False) -> pd.DataFrame:
    """One row per option, numbers kept numeric (so columns sort), units in the headers, a source per figure."""
    r = plan.recommendation
    currency = next((o.cost.currency for o in costed(plan.options)), "USD")
    roles = {r.primary: tr("app.role.recommended"), r.runner_up: tr("app.role.runner_up")}
    texts: dict[object, str] = {}  # many options share a source or a note: translate each once

    def once(key: object, make) -> str:
        if key not in texts:
            texts[key] = make()
        return texts[key]

    def rank(o: PlanOption) -> tuple:
        # The picks first, then what can run from cheapest, then what has no price, then what does not fit.
        pick = 0 if o.id == r.primary else 1 if o.id == r.runner_up else 2
        priced = o.cost is not None and o.cost.price is not None
        return (pick, not o.fits, not priced, o.cost.usd if priced else 0.0, o.cost.hours if o.cost else 0.0)

    data: dict[str, list] = {c: [] for c in COLUMNS}
    for o in sorted(plan.options, key=rank):
        if fits_only and not o.fits:
            continue
        m, s, c, conv = o.memory, o.step, o.cost, o.convergence
        values = {
            "role": roles.get(o.id, ""), "gpu": o.gpu_name, "n_gpus": o.n_gpus, "precision": o.precision,
            "fits": bool(o.fits), "micro_batch": o.micro_batch, "grad_accum": o.grad_accum,
            "memory_gib": _round(m.total / GIB, 2) if m else None,
            "capacity_gib": _round(m.capacity / GIB, 1) if m else None,
            "headroom_pct": _round(100 * m.headroom, 1) if m else None,
            "memory_source": once(m.source, lambda m=m: source_text(m.source)) if m else "—",
            "step_s": _round(s.step_time_s, 4) if s else None,
            "samples_per_s": _round(s.samples_per_s, 1) if s else None,
            "step_source": once(s.source, lambda s=s: source_text(s.source)) if s else "—",
            "steps": _round(conv.steps, 0) if conv else None,
            "steps_source": once(conv.source, lambda conv=conv: source_text(conv.source)) if conv else "—",
            "hours": _round(c.hours, 2) if c else None,
            "hours_low": _round(c.hours_range[0], 2) if c else None,
            "hours_high": _round(c.hours_range[1], 2) if c else None,
            "gpu_hours": _round(c.gpu_hours, 1) if c else None,
            "cost_usd": _round(c.usd, 2) if c else None,
            "cost_local": _round(c.amount_in_currency, 0) if c else None,
            "price": _round(c.price.usd_per_gpu_hour, 3) if c and c.price else None,
            "price_source": once(c.price, lambda c=c: price_text(c)) if c else "—",
            "energy_kwh": _round(c.energy_kwh, 1) if c and c.energy_kwh is not None else None,
            "notes": " · ".join(once(("note", n), lambda n=n: note(n)) for n in o.notes),
            "option": o.id,
        }
        for k, v in values.items():
            data[k].append(v)
    if currency == "USD":
        del data["cost_local"]
    headers = {k: (tr("app.col.cost_local", currency=currency) if k == "cost_local" else tr(f"app.col.{k}"))
               for k in data}
    return pd.DataFrame({headers[k]: v for k, v in data.items()})


def price_text(c) -> str:
    if c is None or c.price is None:
        return "—"
    p = c.price
    when = fmt.date(p.as_of, locale()) if p.as_of else tr("app.why.undated")
    return f"{p.provider} {p.instance} · {tr_or(f'common.tier.{p.tier}', p.tier)} · {when}"


# Digits shown per numeric column (the values stay full numbers, so sorting is numeric).
TABLE_DIGITS = (("micro_batch", 0), ("grad_accum", 0), ("memory_gib", 2), ("capacity_gib", 1), ("headroom_pct", 1), ("step_s", 4), ("samples_per_s", 1),
                ("steps", 0), ("hours", 2), ("hours_low", 2), ("hours_high", 2), ("gpu_hours", 1), ("cost_usd", 2),
                ("price", 3), ("energy_kwh", 1))


@functools.lru_cache(maxsize=32)
def _separators(loc: str) -> dict[int, str]:
    from babel.numbers import get_decimal_symbol, get_group_symbol

    bl = fmt.babel_locale(loc)
    return str.maketrans({",": get_group_symbol(bl), ".": get_decimal_symbol(bl)})


def number_formatter(digits: int):
    """A fast locale-aware cell formatter (format once, swap separators): 1,234.5 or 1.234,5."""
    table = _separators(locale())

    def cell(x: object) -> str:
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return "—"
        return f"{x:,.{digits}f}".translate(table)

    return cell


def render_table(plan: Plan) -> pd.DataFrame:
    st.subheader(tr("app.table.title"))
    fits_only = st.checkbox(tr("app.table.fits_only"), key="table_fits_only")
    df = options_frame(plan, fits_only)
    st.caption(tr("app.table.caption", n=len(df), total=len(plan.options)))
    config = {tr("app.col.fits"): st.column_config.CheckboxColumn(tr("app.col.fits")),
              tr("app.col.role"): st.column_config.TextColumn(width="medium", pinned=True),
              tr("app.col.gpu"): st.column_config.TextColumn(pinned=True)}
    formats = {}
    for key, digits in TABLE_DIGITS:
        config[tr(f"app.col.{key}")] = st.column_config.NumberColumn(help=tr(f"app.col_help.{key}"))
        formats[tr(f"app.col.{key}")] = number_formatter(digits)
    currency = next((o.cost.currency for o in costed(plan.options)), "USD")
    formats[tr("app.col.cost_local", currency=currency)] = number_formatter(0)
    styled = df.style.format({c: f for c, f in formats.items() if c in df.columns}, na_rep="—")
    st.dataframe(styled, hide_index=True, column_config=config, height=min(420, 38 + 35 * max(1, len(df))),
                 width="stretch")
    return df


def _round(x: float | None, digits: int) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits) if digits else float(round(x))


# ---------------------------------------------------------------- notes and warnings

def render_notes(plan: Plan, focus: PlanOption | None) -> None:
    st.subheader(tr("app.notes.title"))
    for w in plan.warnings:
        st.warning(md(note(w)))
    if focus is not None and focus.notes:
        st.markdown(trm("app.notes.for_option", option=option_label(focus)))
        st.markdown("\n".join(f"- {md(note(n))}" for n in focus.notes))
    elif not plan.warnings:
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


# ---------------------------------------------------------------- why this number

def _kv_table(rows: Sequence[tuple[str, str]]) -> None:
    st.table(pd.DataFrame(rows, columns=[tr("app.why.input"), tr("app.why.value")]).set_index(tr("app.why.input")))


def render_why(plan: Plan, o: PlanOption | None, scenario: Scenario) -> None:
    """Expanders that show, for the option the page explains, the inputs and the formula or file behind each figure."""
    if o is None:
        return
    loc = locale()
    st.subheader(trm("app.why.title", option=option_label(o)))
    m, s, conv, c = o.memory, o.step, o.convergence, o.cost
    if m is not None:
        with st.expander(tr("app.why.memory", total=gib(m.total))):
            rows = [(tr(f"common.part.{p}"), fmt.number(v, loc, 2) + " GiB") for p, v in m.parts_gib().items()]
            rows += [(tr("app.why.total"), gib(m.total, 2)), (tr("app.why.capacity"), gib(m.capacity, 2)),
                     (tr("app.why.usable"), gib(m.usable, 2)), (tr("app.why.headroom"), fmt.percent(m.headroom, loc)),
                     (tr("app.col.micro_batch"), str(o.micro_batch)), (tr("app.col.grad_accum"), str(o.grad_accum))]
            _kv_table(rows)
            st.markdown(tr("app.why.memory_formula"))
            st.markdown(trm("app.why.source", source=source_text(m.source)))
            _bullets(m.notes)
    if s is not None:
        with st.expander(tr("app.why.step", step=fmt.sig(s.step_time_s, loc) + " s")):
            rows = [(tr("app.why.micro_step"), fmt.sig(s.micro_step_time_s, loc) + " s"),
                    (tr("app.col.grad_accum"), str(o.grad_accum)),
                    (tr("app.why.exposed_comm"), fmt.sig(s.exposed_comm_s, loc) + " s"),
                    (tr("app.why.input_time"), fmt.sig(s.input_time_s, loc) + " s" if s.input_time_s else "—"),
                    (tr("app.why.band"), f"{fmt.sig(s.band_s[0], loc)} – {fmt.sig(s.band_s[1], loc)} s"),
                    (tr("app.col.samples_per_s"), fmt.number(s.samples_per_s, loc, 1))]
            _kv_table(rows)
            st.markdown(tr("app.why.step_formula"))
            st.markdown(trm("app.why.source", source=source_text(s.source)))
            _bullets(s.notes)
    if o.scaling is not None:
        sc = o.scaling
        with st.expander(tr("app.why.scaling", efficiency=fmt.percent(sc.efficiency, loc))):
            _kv_table([(tr("app.why.efficiency"), fmt.percent(sc.efficiency, loc)),
                       (tr("app.why.allreduce"), fmt.sig(sc.allreduce_s, loc) + " s"),
                       (tr("app.why.exposed_comm"), fmt.sig(sc.exposed_comm_s, loc) + " s")])
            st.markdown(trm("app.why.source", source=source_text(sc.source)))
    if conv is not None:
        with st.expander(tr("app.why.steps", steps=fmt.number(conv.steps, loc, 0))):
            rows = [(tr("app.col.steps"), fmt.number(conv.steps, loc, 0)),
                    (tr("app.why.samples"), fmt.number(conv.samples, loc, 0))]
            if conv.epochs is not None:
                rows.append((tr("app.why.epochs"), fmt.sig(conv.epochs, loc)))
            if conv.steps_range:
                rows.append((tr("app.why.steps_range"), f"{fmt.number(conv.steps_range[0], loc, 0)} – "
                                                         f"{fmt.number(conv.steps_range[1], loc, 0)}"))
            if conv.b_crit:
                rows.append((tr("app.why.b_crit"), fmt.number(conv.b_crit, loc, 0)))
            rows.append((tr("app.sidebar.global_batch"), fmt.number(scenario.training.global_batch, loc, 0)))
            _kv_table(rows)
            st.markdown(trm("app.why.source", source=source_text(conv.source)))
            _bullets(conv.notes)
    if c is not None:
        w, p = scenario.workload, scenario.pricing
        with st.expander(tr("app.why.hours", hours=fmt.hours(c.hours, loc))):
            _kv_table([(tr("app.col.steps"), fmt.number(conv.steps, loc, 0) if conv else "—"),
                       (tr("app.sidebar.early_stop"), fmt.number(w.early_stop_fraction, loc, 2)),
                       (tr("app.col.step_s"), fmt.sig(s.step_time_s, loc) if s else "—"),
                       (tr("app.sidebar.eval_overhead"), fmt.percent(w.eval_overhead, loc)),
                       (tr("app.sidebar.checkpoint_overhead"), fmt.percent(w.checkpoint_overhead, loc)),
                       (tr("app.sidebar.failure_overhead"), fmt.percent(p.failure_overhead, loc)),
                       (tr("app.sidebar.runs"), str(p.runs)),
                       (tr("app.why.hours_range"), f"{fmt.hours(c.hours_range[0], loc)} – "
                                                    f"{fmt.hours(c.hours_range[1], loc)}")])
            st.markdown(tr("app.why.hours_formula"))
        with st.expander(tr("app.why.cost", cost=fmt.money(c.amount_in_currency, c.currency, loc))):
            rows = [(tr("app.col.gpu_hours"), fmt.number(c.gpu_hours, loc, 1)),
                    (tr("app.why.gpus_billed"), str(c.n_gpus_billed))]
            if c.price is not None:
                pr = c.price
                rows += [(tr("app.why.price"), fmt.money(pr.usd_per_gpu_hour, "USD", loc, 3)),
                         (tr("app.why.provider"), f"{pr.provider} · {pr.instance}"),
                         (tr("app.sidebar.tier"), tr_or(f"common.tier.{pr.tier}", pr.tier)),
                         (tr("app.why.price_date"), fmt.date(pr.as_of, loc) if pr.as_of else tr("app.why.undated")),
                         (tr("app.why.price_origin"), tr_or(f"common.origin.{pr.origin}", pr.origin)),
                         (tr("app.why.price_source"), pr.source)]
            rows += [(tr("app.sidebar.tax_rate"), fmt.percent(p.tax_rate, loc)),
                     (tr("app.col.cost_usd"), fmt.money(c.usd, "USD", loc))]
            if c.currency != "USD":
                as_of = fmt.date(p.exchange_rate_as_of, loc) if p.exchange_rate_as_of else tr("app.why.undated")
                rows += [(tr("app.why.exchange_rate"), f"{fmt.sig(p.exchange_rate, loc, 4)} {c.currency}/USD · {as_of}")]
            if c.preemptions:
                rows.append((tr("app.why.preemptions"), fmt.number(c.preemptions, loc, 1)))
            if c.energy_kwh is not None:
                rows.append((tr("app.col.energy_kwh"), fmt.number(c.energy_kwh, loc, 0)))
            _kv_table(rows)
            st.markdown(tr("app.why.cost_formula"))
            _bullets(c.notes)
    with st.expander(tr("app.why.inputs")):
        st.markdown(trm("app.why.profiles", n=len(plan.profiles_used), ids=", ".join(plan.profiles_used)))
        if plan.result_files_used:
            st.markdown(tr("app.why.result_files"))
            _bullets(plan.result_files_used)
        else:
            st.markdown(tr("app.why.no_result_files"))


def _bullets(items: Sequence[str]) -> None:
    if items:
        st.markdown("\n".join(f"- {md(note(x))}" for x in items))
