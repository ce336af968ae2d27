"""The Plan page's options table: one row per option, numbers kept numeric, a source for every figure."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TypeVar

import pandas as pd
import streamlit as st

from planner.engine.estimates import CostEstimate, Plan, PlanOption, cost_of
from planner.engine.recommend import costed
from planner.present import fmt
from planner.vocab import GIB
from ui.i18n_ui import locale, note, tr, tr_or
from ui.markup import source_text

COLUMNS = ("role", "gpu", "n_gpus", "topology", "precision", "fits", "micro_batch", "grad_accum", "memory_gib", "capacity_gib",
           "headroom_pct", "memory_source", "step_s", "samples_per_s", "step_source", "steps", "steps_source", "hours",
           "hours_low", "hours_high", "gpu_hours", "cost_usd", "cost_local", "price", "price_source", "energy_kwh",
           "notes", "option")

_T = TypeVar("_T")


def options_frame(plan: Plan, fits_only: bool = False) -> pd.DataFrame:
    """One row per option, numbers kept numeric (so columns sort), units in the headers, a source per figure."""
    r = plan.recommendation
    currency = next((cost_of(o).currency for o in costed(plan.options)), "USD")
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

    data: dict[str, list] = {c: [] for c in COLUMNS}
    for o in sorted(plan.options, key=rank):
        if fits_only and not o.fits:
            continue
        m, s, c, conv = o.memory, o.step, o.cost, o.convergence
        values = {
            "role": roles.get(o.id, ""), "gpu": o.gpu_name, "n_gpus": o.n_gpus,
            "topology": tr(f"common.topology.{o.topology}") if o.topology else "—", "precision": o.precision,
            "fits": o.fits, "micro_batch": o.micro_batch, "grad_accum": o.grad_accum,
            "memory_gib": _round(m.total / GIB, 2) if m else None,
            "capacity_gib": _round(m.capacity / GIB, 1) if m else None,
            "headroom_pct": _round(100 * m.headroom, 1) if m else None,
            "memory_source": once(m.source, source_text, m.source) if m else "—",
            "step_s": _round(s.step_time_s, 4) if s else None,
            "samples_per_s": _round(s.samples_per_s, 1) if s else None,
            "step_source": once(s.source, source_text, s.source) if s else "—",
            "steps": _round(conv.steps, 0) if conv else None,
            "steps_source": once(conv.source, source_text, conv.source) if conv else "—",
            "hours": _round(c.hours, 2) if c else None,
            "hours_low": _round(c.hours_range[0], 2) if c else None,
            "hours_high": _round(c.hours_range[1], 2) if c else None,
            "gpu_hours": _round(c.gpu_hours, 1) if c else None,
            "cost_usd": _round(c.usd, 2) if c else None,
            "cost_local": _round(c.amount_in_currency, 0) if c else None,
            "price": _round(c.price.usd_per_gpu_hour, 3) if c and c.price else None,
            "price_source": once(c.price, price_text, c) if c else "—",
            "energy_kwh": _round(c.energy_kwh, 1) if c and c.energy_kwh is not None else None,
            "notes": " · ".join(once(("note", n), note, n) for n in o.notes),
            "option": o.id,
        }
        for k, v in values.items():
            data[k].append(v)
    if currency == "USD":
        del data["cost_local"]
    headers = {k: (tr("app.col.cost_local", currency=currency) if k == "cost_local" else tr(f"app.col.{k}"))
               for k in data}
    return pd.DataFrame({headers[k]: v for k, v in data.items()})


def price_text(c: CostEstimate | None) -> str:
    if c is None or c.price is None:
        return "—"
    p = c.price
    when = fmt.date(p.as_of, locale()) if p.as_of else tr("app.why.undated")
    return f"{fmt.offer(p.provider, p.instance, p.region)} · {tr_or(f'common.tier.{p.tier}', p.tier)} · {when}"


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
              tr("app.col.gpu"): st.column_config.TextColumn(pinned=True),
              tr("app.col.topology"): st.column_config.TextColumn(help=tr("app.col_help.topology"))}
    formats = {}
    for key, digits in TABLE_DIGITS:
        config[tr(f"app.col.{key}")] = st.column_config.NumberColumn(help=tr(f"app.col_help.{key}"))
        formats[tr(f"app.col.{key}")] = number_formatter(digits)
    currency = next((cost_of(o).currency for o in costed(plan.options)), "USD")
    formats[tr("app.col.cost_local", currency=currency)] = number_formatter(0)
    styled = df.style.format({c: f for c, f in formats.items() if c in df.columns}, na_rep="—")
    st.dataframe(styled, hide_index=True, column_config=config, height=min(420, 38 + 35 * max(1, len(df))),
                 width="stretch")
    return df


def _round(x: float | None, digits: int) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits) if digits else float(round(x))
