"""Compare scenarios: saved scenarios under $TRAINPLAN_HOME, side-by-side rows, the time-cost frontier, scaling."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from planner.engine.estimates import Plan, PlanOption, cost_of
from planner.engine.recommend import costed, pareto_frontier
from planner.inputs.atomic import atomic_write
from planner.inputs.errors import InputError
from planner.inputs.filenames import slug
from planner.inputs.scenario import Scenario, dump_scenario_yaml, load_scenario_file
from planner.inputs.userdata import user_scenarios_dir
from planner.present import fmt
from planner.present.i18n import t

if TYPE_CHECKING:  # altair is imported inside the chart builders so that `import planner` stays light
    import altair as alt

MAX_NAME_CHARS = 120
# One colour per compared scenario (Okabe-Ito without the vermillion that marks the frontier line).
SCENARIO_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#000000", "#F0E442", "#999999")


# ---------------------------------------------------------------- saved scenarios

@dataclass(frozen=True)
class SavedScenario:
    name: str
    path: str
    modified: dt.datetime


def scenario_file_name(name: str) -> str:
    """'ResNet-50 on ImageNet (90 ep)' -> 'resnet-50-on-imagenet-90-ep.yaml' (the same name saves to the same file)."""
    return slug(name, max_chars=60, default="scenario") + ".yaml"


def save_scenario(scenario: Scenario, name: str | None = None, folder: str | Path | None = None) -> Path:
    """Write the scenario (renamed to `name` when given) as YAML; saving under an existing name replaces it."""
    name = (name if name is not None else scenario.name).strip()
    if not name:
        raise InputError("save scenario", "name", name, "a name for the scenario")
    if len(name) > MAX_NAME_CHARS:
        raise InputError("save scenario", "name", name, f"at most {MAX_NAME_CHARS} characters")
    scenario = replace(scenario, name=name)
    root = Path(folder) if folder is not None else user_scenarios_dir()
    root.mkdir(parents=True, exist_ok=True)
    return atomic_write(root / scenario_file_name(name), dump_scenario_yaml(scenario))


def list_saved(folder: str | Path | None = None,
               known_gpu_ids: Iterable[str] | None = None) -> tuple[list[SavedScenario], list[str]]:
    """Saved scenarios, newest first, and one problem line per unreadable file (it never hides the others)."""
    root = Path(folder) if folder is not None else user_scenarios_dir()
    saved: list[SavedScenario] = []
    problems: list[str] = []
    if not root.is_dir():
        return saved, problems
    for path in sorted(root.glob("*.yaml")):
        try:
            s = load_scenario_file(path, known_gpu_ids)
        except InputError as exc:
            problems.append(str(exc))
            continue
        saved.append(SavedScenario(s.name, str(path), dt.datetime.fromtimestamp(path.stat().st_mtime)))
    saved.sort(key=lambda x: (-x.modified.timestamp(), x.name))
    return saved, problems


def delete_saved(path: str | Path, folder: str | Path | None = None) -> None:
    """Remove one saved scenario; only files inside the saved-scenarios folder can be removed."""
    root = (Path(folder) if folder is not None else user_scenarios_dir()).resolve()
    p = Path(path).resolve()
    if p.parent != root or p.suffix != ".yaml":
        raise InputError("delete scenario", None, str(path), f"a saved scenario in {root}")
    p.unlink(missing_ok=True)


# ---------------------------------------------------------------- side by side

@dataclass(frozen=True)
class Compared:
    """One scenario in the comparison: a label unique within the comparison, the scenario and its plan."""

    label: str
    scenario: Scenario
    plan: Plan


def unique_labels(names: Sequence[str]) -> list[str]:
    """Names made unique for display: a repeated name gets ' (2)', ' (3)' ..."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


@dataclass(frozen=True)
class Summary:
    """The recommendation of one scenario in numbers (None where there is no recommended option)."""

    label: str
    model: str
    n_options: int
    n_fit: int
    primary: PlanOption | None
    runner_up: PlanOption | None
    hours: float | None
    hours_range: tuple[float, float] | None
    cost_usd: float | None
    cost_local: float | None
    currency: str
    gpu_hours: float | None
    within_deadline: bool | None
    within_budget: bool | None


def summarize(item: Compared) -> Summary:
    plan, s = item.plan, item.scenario
    r = plan.recommendation
    primary, runner = plan.option(r.primary), plan.option(r.runner_up)
    c = primary.cost if primary is not None else None
    deadline, budget = s.constraints.deadline_hours, s.constraints.budget_usd
    return Summary(
        label=item.label, model=s.model.name or "custom",
        n_options=len(plan.options), n_fit=sum(1 for o in plan.options if o.fits),
        primary=primary, runner_up=runner,
        hours=c.hours if c else None, hours_range=c.hours_range if c else None,
        cost_usd=c.usd if c else None, cost_local=c.amount_in_currency if c else None,
        currency=c.currency if c else s.pricing.currency, gpu_hours=c.gpu_hours if c else None,
        within_deadline=None if c is None or deadline is None else c.hours <= deadline,
        within_budget=None if c is None or budget is None else c.usd <= budget,
    )


# ---------------------------------------------------------------- the time-cost frontier across scenarios

@dataclass(frozen=True)
class Point:
    """One costed option of one compared scenario, and whether no option of any compared scenario beats it."""

    label: str
    option: PlanOption
    on_frontier: bool
    recommended: bool


def cost_time_points(items: Sequence[Compared]) -> list[Point]:
    """Every costed option of every scenario; on_frontier = no option of the SAME scenario dominates it (USD).

    One frontier per scenario: scenarios may train different models on different data, so an option of one is no
    alternative to an option of another, and a joint frontier would hide every scenario but the cheapest."""
    out = []
    for it in items:
        pool = costed(it.plan.options)
        # pareto_frontier keeps one option of an exact tie; every option at a frontier point is just as good.
        best = {_hours_usd(o) for o in pareto_frontier(pool)}
        out += [Point(it.label, o, _hours_usd(o) in best, o.id == it.plan.recommendation.primary) for o in pool]
    return out


def frontier(points: Sequence[Point]) -> list[Point]:
    """The frontier points, scenario by scenario (in the comparison's order), fastest first."""
    order = {label: i for i, label in enumerate(dict.fromkeys(p.label for p in points))}
    return sorted((p for p in points if p.on_frontier), key=lambda p: (order[p.label], *_hours_usd(p.option)))


def dominated(a: PlanOption, b: PlanOption) -> bool:
    """True when b is at least as fast and as cheap as a, and strictly better in one."""
    (ha, ua), (hb, ub) = _hours_usd(a), _hours_usd(b)
    return hb <= ha and ub <= ua and (hb < ha or ub < ua)


def _hours_usd(o: PlanOption) -> tuple[float, float]:
    c = cost_of(o)
    return c.hours, c.usd


# ---------------------------------------------------------------- scaling: time and cost vs GPU count

@dataclass(frozen=True)
class ScalingRow:
    label: str
    gpu_name: str
    precision: str
    n_gpus: int
    fits: bool | None  # None: unknown (no activation figure)
    hours: float | None
    cost_usd: float | None
    gpu_hours: float | None
    speedup: float | None  # hours at the smallest costed count / hours at this count
    efficiency: float | None  # speedup / (n / smallest n): 1.0 = perfect scaling
    comm_efficiency: float | None  # the planner's t_1 / t_n for the same per-GPU work
    cost_ratio: float | None  # cost / cost at the smallest costed count


def scaling_choices(items: Sequence[Compared]) -> tuple[list[tuple[str, str]], list[str]]:
    """(GPU id, name) pairs and precisions that have a costed option in at least one scenario."""
    gpus: dict[str, str] = {}
    precisions: list[str] = []
    for it in items:
        for o in costed(it.plan.options):
            gpus.setdefault(o.gpu_id, o.gpu_name)
            if o.precision not in precisions:
                precisions.append(o.precision)
    return sorted(gpus.items(), key=lambda kv: kv[1]), precisions


def default_scaling_choice(items: Sequence[Compared]) -> tuple[str | None, str | None]:
    """The first scenario's recommended GPU and precision (else the first costed option anywhere)."""
    for it in items:
        o = it.plan.option(it.plan.recommendation.primary)
        if o is not None:
            return o.gpu_id, o.precision
    for it in items:
        for o in costed(it.plan.options):
            return o.gpu_id, o.precision
    return None, None


def scaling_rows(items: Sequence[Compared], gpu_id: str, precision: str) -> list[ScalingRow]:
    """For each scenario, its options on that GPU and precision by GPU count, with speed-up and efficiency."""
    rows: list[ScalingRow] = []
    for it in items:
        opts = sorted((o for o in it.plan.options if o.gpu_id == gpu_id and o.precision == precision),
                      key=lambda o: o.n_gpus)
        base = next((o for o in opts if o.fits and o.cost is not None and o.cost.price is not None), None)
        base_cost = cost_of(base) if base is not None else None
        for o in opts:
            c = o.cost if o.fits else None
            speedup = (base_cost.hours / c.hours if base is not None and base_cost is not None and c is not None
                       and c.hours else None)
            rows.append(ScalingRow(
                label=it.label, gpu_name=o.gpu_name, precision=o.precision, n_gpus=o.n_gpus, fits=o.fits,
                hours=c.hours if c else None, cost_usd=c.usd if c else None, gpu_hours=c.gpu_hours if c else None,
                speedup=speedup,
                efficiency=speedup * base.n_gpus / o.n_gpus if speedup is not None and base is not None else None,
                comm_efficiency=o.scaling.efficiency if o.scaling is not None and o.fits else None,
                cost_ratio=c.usd / base_cost.usd if c is not None and base_cost is not None and base_cost.usd else None,
            ))
    return rows


@dataclass(frozen=True)
class Verdict:
    """'Is n GPUs worth it': the largest costed count against the smallest, for one scenario."""

    label: str
    gpu_name: str
    n_small: int
    n_large: int
    speedup: float
    cost_ratio: float
    efficiency: float


def verdicts(rows: Sequence[ScalingRow]) -> list[Verdict]:
    out = []
    for label in dict.fromkeys(r.label for r in rows):
        mine = [r for r in rows if r.label == label and r.speedup is not None]
        if len(mine) < 2:
            continue
        small, large = mine[0], mine[-1]
        if large.speedup is None or large.efficiency is None:  # kept out by the filter above; says so to mypy
            continue
        out.append(Verdict(label, large.gpu_name, small.n_gpus, large.n_gpus, large.speedup,
                           large.cost_ratio if large.cost_ratio is not None else math.nan, large.efficiency))
    return out


# ---------------------------------------------------------------- charts

def _scenario_scale(labels: Sequence[str]):
    """The same colour for a scenario in every chart of the page: the domain is the comparison's order."""
    import altair as alt

    return alt.Scale(domain=list(labels), range=[SCENARIO_COLOURS[i % len(SCENARIO_COLOURS)]
                                                 for i in range(len(labels))])


def cost_time_chart(points: Sequence[Point], locale: str | None = "en",
                    scenarios: Sequence[str] | None = None) -> alt.LayerChart:
    """All options of the compared scenarios (hours, USD; log axes), coloured by scenario; the frontier as a line."""
    import altair as alt

    from planner.present.charts import WIDTH, option_label, vega_locale

    yes, no = t("pages.compare.chart.on_frontier", locale), t("pages.compare.chart.off_frontier", locale)
    rows = [{"scenario": p.label, "option": option_label(p.option), "option_id": p.option.id,
             "hours": cost_of(p.option).hours, "usd": cost_of(p.option).usd, "frontier": yes if p.on_frontier else no,
             "recommended": p.recommended,
             # tooltips show these: units and the reader's number format (Vega's own would print raw decimals)
             "hours_text": fmt.hours(cost_of(p.option).hours, locale),
             "usd_text": fmt.money(cost_of(p.option).usd, "USD", locale)} for p in points]
    x_title = t("pages.compare.chart.hours_axis", locale)
    y_title = t("pages.compare.chart.cost_axis", locale)
    colours = _scenario_scale(scenarios or list(dict.fromkeys(p.label for p in points)))
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("hours:Q", title=x_title, scale=alt.Scale(type="log"), axis=alt.Axis(format=",~g")),
        y=alt.Y("usd:Q", title=y_title, scale=alt.Scale(type="log"), axis=alt.Axis(format=",.2~r")),
    )
    points_layer = base.mark_point(filled=True, opacity=0.8).encode(
        color=alt.Color("scenario:N", title=t("pages.compare.chart.scenario", locale), scale=colours,
                        legend=alt.Legend(orient="top", labelLimit=260)),
        shape=alt.Shape("frontier:N", title=None, scale=alt.Scale(domain=[yes, no], range=["diamond", "circle"])),
        size=alt.Size("frontier:N", legend=None, scale=alt.Scale(domain=[yes, no], range=[140, 45])),
        tooltip=[alt.Tooltip("scenario:N", title=t("pages.compare.chart.scenario", locale)),
                 alt.Tooltip("option:N", title=t("pages.compare.col.option", locale)),
                 alt.Tooltip("hours_text:N", title=x_title),
                 alt.Tooltip("usd_text:N", title=y_title)],
    )
    # One frontier line per scenario, in the scenario's colour.
    line = base.transform_filter(alt.datum.frontier == yes).mark_line(strokeWidth=2, opacity=0.9).encode(
        color=alt.Color("scenario:N", scale=colours, legend=None), detail="scenario:N", order="hours:Q")
    stars = base.transform_filter(alt.datum.recommended).mark_text(
        align="left", dx=8, dy=-8, fontSize=11, fontWeight="bold", color="#222").encode(
        text=alt.value(t("pages.compare.chart.recommended", locale)))
    chart = alt.layer(line, points_layer, stars).properties(width=WIDTH, height=320)
    return chart.configure(locale=vega_locale(locale)).configure_view(stroke=None)


def scaling_chart(rows: Sequence[ScalingRow], locale: str | None = "en",
                  scenarios: Sequence[str] | None = None) -> alt.HConcatChart:
    """Hours, cost and scaling efficiency against the GPU count, one line per scenario."""
    import altair as alt

    from planner.present.charts import WIDTH, vega_locale

    data = [{"scenario": r.label, "n": r.n_gpus, "hours": r.hours, "usd": r.cost_usd,
             "efficiency": None if r.efficiency is None else 100 * r.efficiency,
             # tooltips: units and the reader's number format
             "hours_text": fmt.hours(r.hours, locale), "usd_text": fmt.money(r.cost_usd, "USD", locale),
             "efficiency_text": fmt.percent(r.efficiency, locale)}
            for r in rows if r.hours is not None]
    x = alt.X("n:O", title=t("pages.compare.chart.gpus_axis", locale), axis=alt.Axis(labelAngle=0))
    colour = alt.Color("scenario:N", title=t("pages.compare.chart.scenario", locale),
                       scale=_scenario_scale(scenarios or list(dict.fromkeys(r.label for r in rows))),
                       legend=alt.Legend(orient="bottom", labelLimit=260))
    base = alt.Chart(alt.Data(values=data)).encode(x=x, color=colour)
    who = [alt.Tooltip("scenario:N", title=t("pages.compare.chart.scenario", locale)),
           alt.Tooltip("n:O", title=t("pages.compare.chart.gpus_axis", locale))]
    size = {"width": WIDTH // 3 - 20, "height": 220}
    hours = base.mark_line(point=True).encode(
        y=alt.Y("hours:Q", title=t("pages.compare.chart.hours_axis", locale), scale=alt.Scale(type="log"),
                axis=alt.Axis(format=",~g")),
        tooltip=[*who, alt.Tooltip("hours_text:N", title=t("pages.compare.chart.hours_axis", locale))]
    ).properties(**size)
    cost = base.mark_line(point=True).encode(
        y=alt.Y("usd:Q", title=t("pages.compare.chart.cost_axis_linear", locale), axis=alt.Axis(format=",.2~r")),
        tooltip=[*who, alt.Tooltip("usd_text:N", title=t("pages.compare.chart.cost_axis_linear", locale))]
    ).properties(**size)
    eff = base.mark_line(point=True).encode(
        y=alt.Y("efficiency:Q", title=t("pages.compare.chart.efficiency_axis", locale),
                scale=alt.Scale(domain=[0, 110])),
        tooltip=[*who, alt.Tooltip("efficiency_text:N", title=t("pages.compare.chart.efficiency_axis", locale))]
    ).properties(**size)
    chart = alt.hconcat(hours, cost, eff)
    return chart.configure(locale=vega_locale(locale)).configure_view(stroke=None)
