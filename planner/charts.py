"""Altair charts of a plan (cost vs time, memory vs capacity, time and cost vs GPU count), shared by app and reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from planner.estimates import GIB, MemoryEstimate, Plan, PlanOption
from planner.fmt import babel_locale
from planner.i18n import t
from planner.recommend import costed, pareto_frontier

if TYPE_CHECKING:  # altair is imported inside the builders so that `import planner` stays light
    import altair as alt

WIDTH = 560
# Colour-blind-safe (Okabe-Ito): frontier/highlight vs the rest, and one colour per memory part.
HIGHLIGHT = "#D55E00"
ACCENT = "#0072B2"
MUTED = "#9AA5B1"
PART_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442", "#999999")
MAX_GPUS_IN_COUNT_CHART = 5


# ---------------------------------------------------------------- which options to show

def top_options(plan: Plan, n: int | None = 10) -> list[PlanOption]:
    """The options a reader should see first: recommended picks and the Pareto frontier, then the cheapest.

    Ordered by cost (then time); options without a cost follow, then those that do not fit. n=None: all.
    """
    pool = costed(plan.options)
    r = plan.recommendation
    picks = [r.primary, r.runner_up, r.cheapest_within_deadline, r.fastest_within_budget]
    chosen: dict[str, PlanOption] = {}
    for oid in picks:
        o = plan.option(oid)
        if o is not None:
            chosen[o.id] = o
    for o in pareto_frontier(pool):
        chosen.setdefault(o.id, o)
    for o in sorted(pool, key=lambda o: (o.cost.usd, o.cost.hours)):
        chosen.setdefault(o.id, o)
    ranked = sorted(chosen.values(), key=lambda o: (o.cost.usd, o.cost.hours))
    rest = [o for o in plan.options if o.id not in chosen]
    ranked += [o for o in rest if o.fits] + [o for o in rest if not o.fits]
    if n is None:
        return ranked
    keep = {oid for oid in picks if oid} | {o.id for o in pareto_frontier(pool)}
    head = [o for o in ranked if o.id in keep]
    for o in ranked:
        if len(head) >= n:
            break
        if o.id not in keep:
            head.append(o)
    return sorted(head, key=lambda o: ranked.index(o))


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


def _configure(chart: alt.TopLevelMixin, locale: str | None) -> alt.TopLevelMixin:
    return chart.configure(locale=vega_locale(locale), font="DejaVu Sans").configure_view(stroke=None)


def _role(plan: Plan, o: PlanOption, locale: str | None) -> str:
    r = plan.recommendation
    if o.id == r.primary:
        return t("report.role.recommended", locale)
    if o.id == r.runner_up:
        return t("report.role.runner_up", locale)
    return ""


def _currency(plan: Plan) -> str:
    pool = costed(plan.options)
    return pool[0].cost.currency if pool else "USD"


# ---------------------------------------------------------------- cost vs time

def cost_time_chart(plan: Plan, locale: str | None = "en", deadline_hours: float | None = None,
                    budget_usd: float | None = None) -> alt.LayerChart:
    """Every costed option as a point (hours, cost in the plan's currency), the Pareto frontier as a line."""
    import altair as alt

    currency = _currency(plan)
    frontier = {o.id for o in pareto_frontier(plan.options)}
    yes, no = t("report.chart.on_frontier", locale), t("report.chart.off_frontier", locale)
    rows = [{"option": option_label(o), "hours": o.cost.hours, "cost": o.cost.amount_in_currency,
             "usd": o.cost.usd, "frontier": yes if o.id in frontier else no,
             "role": _role(plan, o, locale)} for o in costed(plan.options)]
    x_title = t("report.chart.hours_axis", locale)
    y_title = t("report.chart.cost_axis", locale, currency=currency)
    data = alt.Data(values=rows)
    base = alt.Chart(data).encode(
        x=alt.X("hours:Q", title=x_title, scale=alt.Scale(type="log"), axis=alt.Axis(format=",~g")),
        y=alt.Y("cost:Q", title=y_title, scale=alt.Scale(type="log"), axis=alt.Axis(format=",.0f")),
    )
    points = base.mark_circle(size=55, opacity=0.75).encode(
        color=alt.Color("frontier:N", title=None, scale=alt.Scale(domain=[yes, no], range=[HIGHLIGHT, MUTED]),
                        legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("option:N", title=t("report.col.option", locale)),
                 alt.Tooltip("hours:Q", title=x_title, format=",.1f"),
                 alt.Tooltip("cost:Q", title=y_title, format=",.0f")],
    )
    line = base.transform_filter(alt.datum.frontier == yes).mark_line(color=HIGHLIGHT, strokeWidth=1.5).encode(
        order="hours:Q")
    labels = base.transform_filter(alt.datum.role != "").mark_text(
        align="left", dx=7, dy=-7, fontSize=11, fontWeight="bold", color="#222").encode(text="role:N")
    layers = [line, points, labels]
    if deadline_hours:
        layers.append(alt.Chart(alt.Data(values=[{"hours": deadline_hours}])).mark_rule(
            color=ACCENT, strokeDash=[5, 4]).encode(x="hours:Q"))
    if budget_usd and rows:
        rate = rows[0]["cost"] / rows[0]["usd"] if rows[0]["usd"] else 1.0
        layers.append(alt.Chart(alt.Data(values=[{"cost": budget_usd * rate}])).mark_rule(
            color=ACCENT, strokeDash=[2, 3]).encode(y="cost:Q"))
    chart = alt.layer(*layers).properties(width=WIDTH, height=300,
                                          title=t("report.chart.cost_time_title", locale))
    return _configure(chart, locale)


# ---------------------------------------------------------------- memory vs capacity

def memory_chart(plan: Plan, locale: str | None = "en",
                 options: Sequence[PlanOption] | None = None) -> alt.LayerChart:
    """Per-GPU memory of each option as stacked parts, with a tick at the GPU's capacity."""
    import altair as alt

    shown = [o for o in (options if options is not None else top_options(plan, 8)) if o.memory is not None]
    parts = [t(f"report.part.{p}", locale) for p in MemoryEstimate.PARTS]
    rows, caps = [], []
    for o in shown:
        label = option_label(o)
        for i, (part, gib) in enumerate(o.memory.parts_gib().items()):
            rows.append({"option": label, "part": t(f"report.part.{part}", locale), "order": i,
                         "gib": round(gib, 3)})
        caps.append({"option": label, "capacity": o.memory.capacity / GIB, "total": o.memory.total / GIB})
    order = [option_label(o) for o in shown]
    x_title = t("report.chart.memory_axis", locale)
    y = alt.Y("option:N", title=None, sort=order, axis=alt.Axis(labelLimit=260))
    bars = alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        y=y,
        x=alt.X("sum(gib):Q", title=x_title, stack="zero"),
        color=alt.Color("part:N", title=None, sort=parts,
                        scale=alt.Scale(domain=parts, range=list(PART_COLOURS)),
                        legend=alt.Legend(orient="bottom", columns=4)),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("option:N"), alt.Tooltip("part:N"), alt.Tooltip("gib:Q", format=",.2f")],
    )
    cap = alt.Chart(alt.Data(values=caps)).mark_tick(color="#111", thickness=3, size=18).encode(
        y=y, x=alt.X("capacity:Q"),
        tooltip=[alt.Tooltip("capacity:Q", title=t("report.chart.capacity", locale), format=",.1f")])
    chart = alt.layer(bars, cap).properties(
        width=WIDTH - 200, height=max(60, 24 * len(shown)),
        title=alt.Title(t("report.chart.memory_title", locale), subtitle=t("report.chart.memory_subtitle", locale)))
    return _configure(chart, locale)


# ---------------------------------------------------------------- time and cost vs GPU count

def gpu_count_chart(plan: Plan, locale: str | None = "en") -> alt.HConcatChart:
    """Hours and cost against the number of GPUs, one line per GPU, at the recommended precision."""
    import altair as alt

    pool = costed(plan.options)
    primary = plan.option(plan.recommendation.primary)
    precision = primary.precision if primary else (pool[0].precision if pool else None)
    gpus: list[str] = []
    for o in ([primary] if primary else []) + top_options(plan, None):
        if o is not None and o.gpu_id not in gpus and o.fits and o.cost is not None:
            gpus.append(o.gpu_id)
    gpus = gpus[:MAX_GPUS_IN_COUNT_CHART]
    rows = [{"gpu": o.gpu_name, "n": o.n_gpus, "hours": o.cost.hours, "cost": o.cost.amount_in_currency}
            for o in pool if o.gpu_id in gpus and o.precision == precision]
    currency = _currency(plan)
    x = alt.X("n:O", title=t("report.chart.gpus_axis", locale), axis=alt.Axis(labelAngle=0))
    colour = alt.Color("gpu:N", title=None, legend=alt.Legend(orient="bottom", columns=2, labelLimit=280))
    base = alt.Chart(alt.Data(values=rows)).encode(x=x, color=colour)
    hours = base.mark_line(point=True).encode(
        y=alt.Y("hours:Q", title=t("report.chart.hours_axis", locale), scale=alt.Scale(type="log"),
                axis=alt.Axis(format=",~g")),
        tooltip=["gpu:N", "n:O", alt.Tooltip("hours:Q", format=",.1f")],
    ).properties(width=WIDTH // 2 - 40, height=220)
    cost = base.mark_line(point=True).encode(
        y=alt.Y("cost:Q", title=t("report.chart.cost_axis", locale, currency=currency),
                axis=alt.Axis(format=",.0f")),
        tooltip=["gpu:N", "n:O", alt.Tooltip("cost:Q", format=",.0f")],
    ).properties(width=WIDTH // 2 - 40, height=220)
    chart = alt.hconcat(hours, cost).properties(
        title=alt.Title(t("report.chart.count_title", locale),
                        subtitle=t("report.chart.count_subtitle", locale, precision=precision or "—")))
    return _configure(chart, locale)
