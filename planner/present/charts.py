"""Charts of a plan (cost vs time, memory vs capacity, time and cost vs GPU count) for the app and the reports.

Each chart is built as a Vega-Lite spec (a plain dict: the reports convert it with vl-convert without importing
altair) and offered as an altair chart for the app (`*_chart`, altair imported only there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from planner.engine.estimates import MemoryEstimate, Plan, PlanOption, cost_of, memory_of
from planner.engine.recommend import costed, pareto_frontier
from planner.present.fmt import babel_locale
from planner.present.i18n import t
from planner.vocab import GIB

if TYPE_CHECKING:
    import altair as alt

VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
WIDTH = 560
# Colour-blind-safe (Okabe-Ito): frontier/highlight vs the rest, and one colour per memory part.
HIGHLIGHT = "#D55E00"
ACCENT = "#0072B2"
MUTED = "#9AA5B1"
PART_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442", "#999999")
MAX_GPUS_IN_COUNT_CHART = 5
MAX_OPTIONS_IN_MEMORY_CHART = 8


# ---------------------------------------------------------------- which options to show

def top_options(plan: Plan, n: int | None = 10) -> list[PlanOption]:
    """The options a reader should see first: recommended picks and the Pareto frontier, then the cheapest.

    Ordered by cost (then time); options without a cost follow, then those that do not fit. n=None: all.
    """
    pool = costed(plan.options)
    r = plan.recommendation
    picks = [oid for oid in (r.primary, r.runner_up, r.cheapest_within_deadline, r.fastest_within_budget) if oid]
    frontier = [o.id for o in pareto_frontier(pool)]
    ranked = sorted(pool, key=lambda o: (cost_of(o).usd, cost_of(o).hours))
    ranked += [o for o in plan.options if o not in ranked and o.fits is not False
               and (o.cost is None or o.cost.price is None or o.fits is None)]
    ranked += [o for o in plan.options if o.fits is False and o not in ranked]  # planned-with options are costed
    if n is None:
        return ranked
    # Picks and the frontier first; then the cheapest of each GPU and count not yet shown (variety: four
    # precisions of one GPU at the same price tell a reader less), then the rest by cost.
    head = {o.id for o in ranked if o.id in set(picks) | set(frontier)}
    seen = {(o.gpu_id, o.n_gpus) for o in ranked if o.id in head}
    for o in ranked:
        if len(head) >= n:
            break
        if (o.gpu_id, o.n_gpus) not in seen:
            head.add(o.id)
            seen.add((o.gpu_id, o.n_gpus))
    for o in ranked:
        if len(head) >= n:
            break
        head.add(o.id)
    return [o for o in ranked if o.id in head]


def option_label(o: PlanOption) -> str:
    """'8 × NVIDIA H100 SXM5 80GB · bf16': the same in every language."""
    return f"{o.n_gpus} × {o.gpu_name} · {o.precision}"


# ---------------------------------------------------------------- locale for Vega

def vega_locale(locale: str | None) -> dict:
    """d3-format number locale from CLDR symbols, so axes write 1.234,5 where the reader does."""
    from babel import Locale
    from babel.numbers import get_decimal_symbol, get_group_symbol

    loc = Locale.parse(babel_locale(locale))
    return {"number": {"decimal": get_decimal_symbol(loc), "thousands": get_group_symbol(loc),
                       "grouping": [3], "currency": ["", ""]}}


def _top_level(spec: dict, locale: str | None) -> dict:
    return {"$schema": VEGA_LITE_SCHEMA, **spec,
            "config": {"locale": vega_locale(locale), "font": "DejaVu Sans", "view": {"stroke": None},
                       "title": {"anchor": "start", "fontSize": 14, "subtitleColor": "#52606d"}}}


def _title(text: str, subtitle: str | None = None) -> dict:
    return {"text": text, "subtitle": subtitle} if subtitle else {"text": text}


def _role(plan: Plan, o: PlanOption, locale: str | None) -> str:
    r = plan.recommendation
    if o.id == r.primary:
        return t("report.role.recommended", locale)
    if o.id == r.runner_up:
        return t("report.role.runner_up", locale)
    return ""


def plan_currency(plan: Plan) -> str:
    pool = costed(plan.options)
    return cost_of(pool[0]).currency if pool else "USD"


# ---------------------------------------------------------------- cost vs time

def cost_time_spec(plan: Plan, locale: str | None = "en", deadline_hours: float | None = None,
                   budget_usd: float | None = None) -> dict:
    """Every costed option as a point (hours, cost in the plan's currency); the Pareto frontier as a line;
    dashed rules at the deadline and the budget."""
    currency = plan_currency(plan)
    frontier = {o.id for o in pareto_frontier(plan.options)}
    yes, no = t("report.chart.on_frontier", locale), t("report.chart.off_frontier", locale)
    rows = [{"option": option_label(o), "hours": cost_of(o).hours, "cost": cost_of(o).amount_in_currency,
             "frontier": yes if o.id in frontier else no, "role": _role(plan, o, locale)}
            for o in costed(plan.options)]
    x_title = t("report.chart.hours_axis", locale)
    y_title = t("report.chart.cost_axis", locale, currency=currency)
    x = {"field": "hours", "type": "quantitative", "title": x_title, "scale": {"type": "log"},
         "axis": {"format": ",~g"}}
    y = {"field": "cost", "type": "quantitative", "title": y_title, "scale": {"type": "log"},
         "axis": {"format": ",~g"}}
    layers = [
        {"transform": [{"filter": {"field": "frontier", "equal": yes}}],
         "mark": {"type": "line", "color": HIGHLIGHT, "strokeWidth": 1.5},
         "encoding": {"x": x, "y": y, "order": {"field": "hours", "type": "quantitative"}}},
        {"mark": {"type": "circle", "size": 55, "opacity": 0.75},
         "encoding": {"x": x, "y": y,
                      "color": {"field": "frontier", "type": "nominal", "title": None,
                                "scale": {"domain": [yes, no], "range": [HIGHLIGHT, MUTED]},
                                "legend": {"orient": "top"}},
                      "tooltip": [{"field": "option", "type": "nominal", "title": t("report.col.option", locale)},
                                  {"field": "hours", "type": "quantitative", "title": x_title, "format": ",.1f"},
                                  {"field": "cost", "type": "quantitative", "title": y_title, "format": ",.2f"}]}},
        {"transform": [{"filter": "datum.role != ''"}],
         "mark": {"type": "text", "align": "left", "dx": 7, "dy": -8, "fontSize": 11, "fontWeight": "bold",
                  "color": "#222"},
         "encoding": {"x": x, "y": y, "text": {"field": "role", "type": "nominal"}}},
    ]
    if deadline_hours:
        layers.append({"data": {"values": [{"hours": deadline_hours}]},
                       "mark": {"type": "rule", "color": ACCENT, "strokeDash": [5, 4]},
                       "encoding": {"x": {"field": "hours", "type": "quantitative"}}})
    pool = costed(plan.options)
    first = cost_of(pool[0]) if pool else None
    if budget_usd and first is not None and first.usd:
        rate = first.amount_in_currency / first.usd
        layers.append({"data": {"values": [{"cost": budget_usd * rate}]},
                       "mark": {"type": "rule", "color": ACCENT, "strokeDash": [2, 3]},
                       "encoding": {"y": {"field": "cost", "type": "quantitative"}}})
    subtitle = t("report.chart.cost_time_subtitle", locale) if deadline_hours or budget_usd else None
    return _top_level({"title": _title(t("report.chart.cost_time_title", locale), subtitle),
                       "width": WIDTH, "height": 300, "data": {"values": rows}, "layer": layers}, locale)


# ---------------------------------------------------------------- memory vs capacity

def memory_rows(options: Sequence[PlanOption], locale: str | None = "en",
                label: Callable[[PlanOption], str] = option_label) -> list[dict]:
    """One bar per option (its memory parts in GiB) with its capacity and fit, in the given order."""
    names = {p: t(f"common.part.{p}", locale) for p in MemoryEstimate.PARTS}
    status = {True: t("app.chart.fits", locale), False: t("app.chart.no_fit", locale),
              None: t("app.chart.fit_unknown", locale)}
    rows = []
    for rank, o in enumerate(o for o in options if o.memory is not None):
        m = memory_of(o)
        common = {"gpu": label(o), "rank": rank, "capacity": round(m.capacity / GIB, 2),
                  "total": round(m.total / GIB, 2),
                  "status": status[o.fits], "fits": bool(o.fits), "fit_unknown": o.fits is None}
        for i, (part, value) in enumerate(m.parts_gib().items()):
            rows.append({**common, "part": names[part], "order": i, "gib": round(value, 3)})
    return rows


def memory_spec(plan: Plan | None, locale: str | None = "en", options: Sequence[PlanOption] | None = None, *,
                label: Callable[[PlanOption], str] = option_label, titled: bool = True) -> dict:
    """The memory chart of the app and the reports: per option, the parts stacked, a black tick at the GPU's
    capacity, and whether it fits. Options: the top ones of `plan` by default."""
    if options is None:
        options = top_options(plan, MAX_OPTIONS_IN_MEMORY_CHART) if plan is not None else []
        options = [o for o in options if o.memory is not None][:MAX_OPTIONS_IN_MEMORY_CHART]
    rows = memory_rows(options, locale, label)
    parts = [t(f"common.part.{p}", locale) for p in MemoryEstimate.PARTS]
    y = {"field": "gpu", "type": "nominal", "title": None,
         "sort": {"field": "rank", "op": "min", "order": "ascending"},
         "axis": {"labelLimit": 320, "labelOverlap": False}}
    bars = {"mark": {"type": "bar"},
            "encoding": {"y": y,
                         "x": {"aggregate": "sum", "field": "gib", "type": "quantitative", "stack": "zero",
                               "title": t("app.chart.memory_axis", locale)},
                         "color": {"field": "part", "type": "nominal", "title": None, "sort": parts,
                                   "scale": {"domain": parts, "range": list(PART_COLOURS)},
                                   "legend": {"orient": "bottom", "columns": 4}},
                         "order": {"field": "order", "type": "quantitative"},
                         "tooltip": [{"field": "gpu", "type": "nominal", "title": t("app.col.gpu", locale)},
                                     {"field": "part", "type": "nominal", "title": t("app.chart.part", locale)},
                                     {"field": "gib", "type": "quantitative", "title": "GiB", "format": ",.2f"},
                                     {"field": "total", "type": "quantitative",
                                      "title": t("app.why.total", locale), "format": ",.1f"},
                                     {"field": "status", "type": "nominal", "title": t("app.col.fits", locale)}]}}
    one_per_option = [{"filter": "datum.order == 0"}]
    capacity = {"transform": one_per_option,
                "mark": {"type": "tick", "color": "#111", "thickness": 3, "size": 20},
                "encoding": {"y": y, "x": {"field": "capacity", "type": "quantitative"},
                             "tooltip": [{"field": "capacity", "type": "quantitative", "format": ",.1f",
                                          "title": t("app.chart.capacity", locale)}]}}
    status = {"transform": one_per_option,
              "mark": {"type": "text", "align": "left", "dx": 6, "fontSize": 11, "fontWeight": "bold"},
              "encoding": {"y": y, "x": {"field": "capacity", "type": "quantitative"},
                           "text": {"field": "status", "type": "nominal"},
                           "color": {"condition": [{"test": "datum.fits", "value": "#1b5e20"},
                                                   {"test": "datum.fit_unknown", "value": "#6d6d6d"}],
                                     "value": "#b00020"}}}
    spec: dict = {"data": {"values": rows}, "layer": [bars, capacity, status],
                  "height": {"step": 22}}
    if titled:
        spec["title"] = _title(t("report.chart.memory_title", locale), t("report.chart.memory_subtitle", locale))
        spec["width"] = WIDTH - 220
    return _top_level(spec, locale)


# ---------------------------------------------------------------- time and cost vs GPU count

def gpu_count_spec(plan: Plan, locale: str | None = "en") -> dict:
    """Hours and cost against the number of GPUs, one line per GPU (the recommended one and the cheapest others),
    at the recommended precision."""
    pool = costed(plan.options)
    primary = plan.option(plan.recommendation.primary)
    precision = primary.precision if primary else (pool[0].precision if pool else None)
    gpus: list[str] = [primary.gpu_id] if primary else []
    for o in sorted(pool, key=lambda o: (cost_of(o).usd, cost_of(o).hours)):
        if o.gpu_id not in gpus and o.precision == precision:
            gpus.append(o.gpu_id)
    gpus = gpus[:MAX_GPUS_IN_COUNT_CHART]
    rows = [{"gpu": o.gpu_name, "n": o.n_gpus, "hours": cost_of(o).hours, "cost": cost_of(o).amount_in_currency}
            for o in pool if o.gpu_id in gpus and o.precision == precision]
    x = {"field": "n", "type": "ordinal", "title": t("report.chart.gpus_axis", locale), "axis": {"labelAngle": 0}}
    colour = {"field": "gpu", "type": "nominal", "title": None, "sort": [
        next(o.gpu_name for o in pool if o.gpu_id == g) for g in gpus],
        "legend": {"orient": "bottom", "columns": 2, "labelLimit": 300}}

    def panel(field: str, title: str, log: bool) -> dict:
        # Vega narrows a linear axis's format to the ticks' significant digits, and "g" then writes 1,000 as
        # "1e+3": a linear axis uses "r" (plain decimals at that precision), a log axis keeps "~g"
        yenc = {"field": field, "type": "quantitative", "title": title, "axis": {"format": ",~g" if log else ",~r"}}
        if log:
            yenc["scale"] = {"type": "log"}
        return {"width": WIDTH // 2 - 40, "height": 220, "mark": {"type": "line", "point": True},
                "encoding": {"x": x, "y": yenc, "color": colour,
                             "tooltip": [{"field": "gpu", "type": "nominal"}, {"field": "n", "type": "ordinal"},
                                         {"field": field, "type": "quantitative", "format": ",.2f"}]}}

    currency = plan_currency(plan)
    return _top_level({"title": _title(t("report.chart.count_title", locale),
                                       t("report.chart.count_subtitle", locale, precision=precision or "—")),
                       "data": {"values": rows},
                       "hconcat": [panel("hours", t("report.chart.hours_axis", locale), True),
                                   panel("cost", t("report.chart.cost_axis", locale, currency=currency), False)]},
                      locale)


# ---------------------------------------------------------------- altair, for the app

def cost_time_chart(plan: Plan, locale: str | None = "en", deadline_hours: float | None = None,
                    budget_usd: float | None = None) -> alt.LayerChart:
    import altair as alt

    return alt.LayerChart.from_dict(cost_time_spec(plan, locale, deadline_hours, budget_usd), validate=False)


def gpu_count_chart(plan: Plan, locale: str | None = "en") -> alt.HConcatChart:
    import altair as alt

    return alt.HConcatChart.from_dict(gpu_count_spec(plan, locale), validate=False)
