"""The Plan page's options table: the decision first (GPU, count, precision, fits, hours and cost with their range,
GPU-hours, short source labels), the details after; filters; the recommended and runner-up rows pinned on top."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import pandas as pd
import streamlit as st

from planner.engine.estimates import CostEstimate, Plan, PlanOption, Source, cost_of
from planner.engine.recommend import costed, deadline_hours
from planner.inputs.scenario import Scenario
from planner.present import fmt
from planner.vocab import GIB
from ui.i18n_ui import dataframe, locale, note, styled, tr, tr_or
from ui.markup import md, source_text
from ui.panels import lazy_expander

# What a decision needs, left to right; then the details (shown with "Show details").
DECISION = ("role", "gpu", "n_gpus", "precision", "fits", "hours", "hours_range", "cost", "cost_range", "gpu_hours",
            "sources")
DETAILS = ("topology", "micro_batch", "grad_accum", "memory_gib", "capacity_gib", "headroom_pct", "step_s",
           "samples_per_s", "per_gpu", "mfu_pct", "steps", "hours_low", "hours_high", "cost_usd", "price", "energy_kwh", "memory_source",
           "step_source", "steps_source", "price_source", "notes", "option")
COLUMNS = DECISION + DETAILS

_T = TypeVar("_T")


@functools.cache
def _family_of(gpu_id: str) -> str:
    """'h100-sxm-80gb' -> 'H100', 'rtx4090-24gb' -> 'RTX4090': the filter's GPU family."""
    return gpu_id.split("-")[0].upper()


def gpu_families(plan: Plan) -> list[str]:
    return sorted({_family_of(o.gpu_id) for o in plan.options})


def _currency_of(plan: Plan) -> str:
    return next((cost_of(o).currency for o in costed(plan.options)), "USD")


def picks(plan: Plan) -> tuple[str, ...]:
    r = plan.recommendation
    return tuple(i for i in (r.primary, r.runner_up) if i)


def keep(o: PlanOption, scenario: Scenario | None, *, fits_only: bool = False, within_deadline: bool = False,
         within_budget: bool = False, families: Sequence[str] = ()) -> bool:
    """Whether a filtered table shows `o` (the picks are shown whatever the filters: options_frame)."""
    if fits_only and not o.fits:
        return False
    if families and _family_of(o.gpu_id) not in families:
        return False
    c = o.cost
    if scenario is not None and within_deadline and scenario.constraints.deadline_hours is not None:
        if c is None or deadline_hours(o, scenario.constraints.deadline_confidence) > scenario.constraints.deadline_hours:
            return False
    if scenario is not None and within_budget and scenario.constraints.budget_usd is not None:
        if c is None or c.price is None or c.usd > scenario.constraints.budget_usd:
            return False
    return True


def options_frame(plan: Plan, fits_only: bool = False, scenario: Scenario | None = None, *,
                  within_deadline: bool = False, within_budget: bool = False,
                  families: Sequence[str] = (), columns: Sequence[str] = COLUMNS) -> pd.DataFrame:
    """One row per option, numbers kept numeric (so columns sort), units in the headers, a source per figure;
    the picks first and always shown, then what can run from cheapest. Only `columns` are worked out (the notes
    and full sources of 200 options are most of the table's time, and the page shows them only with details)."""
    r = plan.recommendation
    loc = locale()
    currency = _currency_of(plan)
    roles = {r.primary: tr("app.role.recommended"), r.runner_up: tr("app.role.runner_up")}
    texts: dict[object, str] = {}  # many options share a source or a note: translate each once

    def once(key: object, make: Callable[[_T], str], arg: _T) -> str:
        if key not in texts:
            texts[key] = make(arg)
        return texts[key]

    def rank(o: PlanOption) -> tuple:
        # The picks first, then what can run from cheapest, then what has no price, then what does not fit.
        pick = 0 if o.id == r.primary else 1 if o.id == r.runner_up else 2
        c = o.cost
        priced = c is not None and c.price is not None
        return (pick, {True: 0, None: 1, False: 2}[o.fits], not priced, c.usd if c is not None and priced else 0.0, c.hours if c else 0.0)

    def short(x: object) -> str:  # a figure's source kind in a word or two, translated once per kind
        source = getattr(x, "source", None)
        return once(("short", getattr(source, "kind", None)), short_source, source)

    # One cell maker per column: (option, its memory, step, cost, convergence) -> value.
    cells: dict[str, Callable[..., object]] = {
        "role": lambda o, m, s, c, conv: roles.get(o.id, ""),
        "gpu": lambda o, m, s, c, conv: fmt.gpu_short_name(o.gpu_name),
        "n_gpus": lambda o, m, s, c, conv: o.n_gpus,
        "precision": lambda o, m, s, c, conv: o.precision,
        "fits": lambda o, m, s, c, conv: o.fits,
        "hours": lambda o, m, s, c, conv: _round(c.hours, 2) if c else None,
        "hours_range": lambda o, m, s, c, conv: (
            f"{fmt.number(c.hours_range[0], loc, 1)} – {fmt.number(c.hours_range[1], loc, 1)}" if c else fmt.MISSING),
        "cost": lambda o, m, s, c, conv: _round(
            (c.amount_in_currency if c else None) if currency != "USD" else (c.usd if c else None), 2),
        "cost_range": lambda o, m, s, c, conv: (
            f"{fmt.money(c.amount_range_in_currency[0], c.currency, loc)} – "
            f"{fmt.money(c.amount_range_in_currency[1], c.currency, loc)}") if c and c.price else fmt.MISSING,
        "gpu_hours": lambda o, m, s, c, conv: _round(c.gpu_hours, 1) if c else None,
        "sources": lambda o, m, s, c, conv: " / ".join(short(x) for x in (s, m, conv)),
        "topology": lambda o, m, s, c, conv: tr(f"common.topology.{o.topology}") if o.topology else "—",
        "micro_batch": lambda o, m, s, c, conv: o.micro_batch,
        "grad_accum": lambda o, m, s, c, conv: o.grad_accum,
        "memory_gib": lambda o, m, s, c, conv: _round(m.total / GIB, 2) if m else None,
        "capacity_gib": lambda o, m, s, c, conv: _round(m.capacity / GIB, 1) if m else None,
        "headroom_pct": lambda o, m, s, c, conv: _round(100 * m.headroom, 1) if m else None,
        "memory_source": lambda o, m, s, c, conv: once(m.source, source_text, m.source) if m else "—",
        "step_s": lambda o, m, s, c, conv: _round(s.step_time_s, 4) if s else None,
        "samples_per_s": lambda o, m, s, c, conv: _round(s.samples_per_s, 1) if s else None,
        # the step time per GPU in a log's units (tokens/s for sequence models) and MFU, from the engine
        "per_gpu": lambda o, m, s, c, conv: _round(_per_gpu(o), 1),
        "mfu_pct": lambda o, m, s, c, conv: _round(100 * o.throughput.mfu, 1) if o.throughput and o.throughput.mfu
        is not None else None,
        "step_source": lambda o, m, s, c, conv: once(s.source, source_text, s.source) if s else "—",
        "steps": lambda o, m, s, c, conv: _round(conv.steps, 0) if conv else None,
        "steps_source": lambda o, m, s, c, conv: once(conv.source, source_text, conv.source) if conv else "—",
        "hours_low": lambda o, m, s, c, conv: _round(c.hours_range[0], 2) if c else None,
        "hours_high": lambda o, m, s, c, conv: _round(c.hours_range[1], 2) if c else None,
        "cost_usd": lambda o, m, s, c, conv: _round(c.usd, 2) if c else None,
        "price": lambda o, m, s, c, conv: _round(c.price.usd_per_gpu_hour, 3) if c and c.price else None,
        "price_source": lambda o, m, s, c, conv: once(c.price, price_text, c) if c else "—",
        "energy_kwh": lambda o, m, s, c, conv: (
            _round(c.energy_kwh, 1) if c and c.energy_kwh is not None else None),
        "notes": lambda o, m, s, c, conv: " · ".join(once(("note", n), note, n) for n in o.notes),
        "option": lambda o, m, s, c, conv: o.id,
    }
    wanted = [k for k in COLUMNS if k in columns and not (k == "cost_usd" and currency == "USD")]
    pinned = set(picks(plan))
    data: dict[str, list] = {k: [] for k in wanted}
    for o in sorted(plan.options, key=rank):
        if o.id not in pinned and not keep(o, scenario, fits_only=fits_only, within_deadline=within_deadline,
                                           within_budget=within_budget, families=families):
            continue
        parts = (o, o.memory, o.step, o.cost, o.convergence)
        for k in wanted:
            data[k].append(cells[k](*parts))
    # (cost_usd is left out in USD: the decision's cost column is already in USD)
    tokens = any(o.throughput is not None and o.throughput.tokens_per_s_per_gpu is not None for o in plan.options)
    return pd.DataFrame({header(k, currency, tokens=tokens): v for k, v in data.items()})


def _per_gpu(o: PlanOption) -> float | None:
    tp = o.throughput
    if tp is None:
        return None
    return tp.tokens_per_s_per_gpu if tp.tokens_per_s_per_gpu is not None else tp.samples_per_s_per_gpu


def header(key: str, currency: str, *, tokens: bool = False) -> str:
    if key == "per_gpu":
        return tr("app.col.tokens_per_gpu" if tokens else "app.col.samples_per_gpu")
    if key == "cost":
        return tr("app.col.cost_local", currency=currency)
    if key == "hours_range":
        return tr("plan_page.table.hours_range")
    if key == "cost_range":
        return tr("plan_page.table.cost_range", currency=currency)
    if key == "sources":
        return tr("plan_page.table.sources")
    return tr(f"app.col.{key}")


def short_source(source: Source | None) -> str:
    """A source kind in a word or two ('formula', 'meas.'); the full text is in the details and the why panels."""
    if source is None or not source.kind:
        return "—"
    return tr_or(f"plan_page.table.source_short.{source.kind}", source.kind)


def price_text(c: CostEstimate | None) -> str:
    if c is None or c.price is None:
        return "—"
    p = c.price
    when = fmt.date(p.as_of, locale()) if p.as_of else tr("app.why.undated")
    return f"{fmt.offer(p.provider, p.instance, p.region)} · {tr_or(f'common.tier.{p.tier}', p.tier)} · {when}"


# Digits shown per numeric column (the values stay full numbers, so sorting is numeric).
TABLE_DIGITS = (("micro_batch", 0), ("grad_accum", 0), ("memory_gib", 2), ("capacity_gib", 1), ("headroom_pct", 1), ("step_s", 4), ("samples_per_s", 1), ("mfu_pct", 1),
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


ROWS_IN_VIEW = 11  # the table is 420 px high: a header and 11 rows of 35 px
MAIN_WIDTH_PX = 930  # the decision columns' total: the main column is ~938 px at 1,400 px with the sidebar open
# role 92 + count 50 + precision 62 + fits 40 + hours 62 + cost 72 + GPU-hours 66 (the GPU, the two ranges and the
# sources are as wide as their text in view)
FIXED_WIDTH_PX = 444


def _text_width_px(values: Iterable[object], *, lo: int, hi: int) -> int:
    """A text column's width for its longest cell in the grid's font (~6.6 px a character, 18 px of padding)."""
    longest = max((len(str(v)) for v in values), default=0)
    return max(lo, min(hi, round(6.6 * longest) + 18))


def _filters(plan: Plan, scenario: Scenario | None) -> dict:
    """The table's filters (keyed widgets); a constraint the scenario does not set has no filter to tick."""
    c = scenario.constraints if scenario is not None else None
    cols = st.columns([1, 1.4, 1.4, 2.2], vertical_alignment="bottom")
    fits_only = cols[0].checkbox(tr("plan_page.table.fits_only"), key="table_fits_only",
                                 help=tr("app.table.fits_only"))
    within_deadline = cols[1].checkbox(tr("plan_page.table.within_deadline"), key="table_within_deadline",
                                       disabled=c is None or c.deadline_hours is None)
    within_budget = cols[2].checkbox(tr("plan_page.table.within_budget"), key="table_within_budget",
                                     disabled=c is None or c.budget_usd is None)
    families = cols[3].multiselect(tr("plan_page.table.family"), gpu_families(plan), key="table_families",
                                   placeholder=tr("plan_page.table.family_all"))
    details = st.toggle(tr("plan_page.table.details"), key="table_details")
    return {"fits_only": fits_only, "within_deadline": within_deadline, "within_budget": within_budget,
            "families": [f for f in families if f in gpu_families(plan)], "details": details}


def render_table(plan: Plan, scenario: Scenario | None = None) -> pd.DataFrame:
    st.subheader(tr("app.table.title"))
    chosen = _filters(plan, scenario)
    details = chosen.pop("details")
    df = options_frame(plan, chosen["fits_only"], scenario, within_deadline=chosen["within_deadline"],
                       within_budget=chosen["within_budget"], families=chosen["families"],
                       columns=COLUMNS if details else DECISION)
    st.caption(tr("app.table.caption", n=len(df), total=len(plan.options)) + " " + tr("plan_page.table.pinned"))
    currency = _currency_of(plan)
    # Pixel widths that keep the decision columns in view at 1,400 px without sideways scrolling: the main column is
    # ~938 px wide at 1,400 px with the sidebar open (browser screenshots). The two ranges are as wide as their
    # longest text in view in this locale (es-AR's "US$25,61 – US$30,67" is wider than "$25.61 – $30.67": a cut
    # range hid the high end of the cost); the short source labels take what is left.
    in_view = df.head(ROWS_IN_VIEW)  # the rows the table shows before scrolling: the picks and the cheapest
    gpu_w = _text_width_px(in_view.get(header("gpu", currency), ()), lo=120, hi=175)
    hours_w = _text_width_px(in_view.get(header("hours_range", currency), ()), lo=80, hi=130)
    cost_w = _text_width_px(in_view.get(header("cost_range", currency), ()), lo=100, hi=190)
    sources_w = max(80, MAIN_WIDTH_PX - FIXED_WIDTH_PX - gpu_w - hours_w - cost_w)
    config = {tr("app.col.fits"): st.column_config.CheckboxColumn(tr("app.col.fits"), width=40),
              tr("app.col.role"): st.column_config.TextColumn(width=92, pinned=True),
              tr("app.col.gpu"): st.column_config.TextColumn(width=gpu_w, pinned=True),
              tr("app.col.n_gpus"): st.column_config.NumberColumn(width=50),
              tr("app.col.precision"): st.column_config.TextColumn(width=62),
              tr("app.col.topology"): st.column_config.TextColumn(help=tr("app.col_help.topology")),
              header("sources", currency): st.column_config.TextColumn(width=sources_w,
                                                                       help=tr("plan_page.table.sources_help")),
              header("hours_range", currency): st.column_config.TextColumn(
                  width=hours_w, help=tr("app.col_help.hours_low") + " / " + tr("app.col_help.hours_high")),
              header("cost_range", currency): st.column_config.TextColumn(width=cost_w)}
    formats = {header("cost", currency): number_formatter(0 if currency != "USD" else 2)}
    narrow = {"hours": 62, "gpu_hours": 66}
    for key, digits in TABLE_DIGITS:
        config[tr(f"app.col.{key}")] = st.column_config.NumberColumn(help=tr(f"app.col_help.{key}"),
                                                                     width=narrow.get(key))
        formats[tr(f"app.col.{key}")] = number_formatter(digits)
    config[header("cost", currency)] = st.column_config.NumberColumn(width=72, help=tr("app.col_help.cost_usd"))
    for per_gpu in (tr("app.col.tokens_per_gpu"), tr("app.col.samples_per_gpu")):  # the one this model's logs count
        config[per_gpu] = st.column_config.NumberColumn(help=tr("app.col_help.per_gpu"))
        formats[per_gpu] = number_formatter(0)
    # Without "Show details" only the decision columns are made and sent: with the details hidden by column_order
    # (before) the 200-row table was 1.3 MB per plan change, most of the page's bytes and of the browser's work,
    # and its notes and sources most of the run's time (perf/app_speed.py --browser).
    config = {k: v for k, v in config.items() if k in df.columns}
    shown = styled(df).format({c: f for c, f in formats.items() if c in df.columns}, na_rep="—")
    dataframe(shown, hide_index=True, column_config=config, height=min(420, 38 + 35 * max(1, len(df))),
              width="stretch")
    _full_sources(plan)
    return df


def _full_sources(plan: Plan) -> None:
    """The pinned options' sources in full (the table's labels are short)."""
    shown = [o for o in (plan.option(i) for i in picks(plan)) if o is not None]
    if not shown:
        return
    with (panel := lazy_expander(tr("plan_page.table.sources_expander"), "table_sources")):
        for o in shown if panel.open else ():
            lines = [f"{tr('app.col.step_source')}: {source_text(o.step.source if o.step else None)}",
                     f"{tr('app.col.memory_source')}: {source_text(o.memory.source if o.memory else None)}",
                     f"{tr('app.col.steps_source')}: {source_text(o.convergence.source if o.convergence else None)}",
                     f"{tr('app.col.price_source')}: {price_text(o.cost)}"]
            st.markdown(f"**{md(o.id)}**\n" + "\n".join(f"- {md(line)}" for line in lines))


def _round(x: float | None, digits: int) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits) if digits else float(round(x))
