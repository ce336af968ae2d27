"""The report as data: one pure builder from Plan + Scenario to a ReportModel of localized plain text and charts."""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from planner import __version__
from planner.engine.actuals import run_errors
from planner.engine.estimates import Plan, PlanOption, cost_of, memory_of
from planner.engine.recommend import costed, pareto_frontier
from planner.engine.what_fits import WhatFits
from planner.inputs.actuals import RecordedRun
from planner.inputs.scenario import Scenario, dump_scenario_yaml
from planner.present import fmt
from planner.present.charts import option_label, top_options
from planner.present.fit_answers import what_fits_headers, what_fits_numeric, what_fits_rows
from planner.present.i18n import language_of, t
from planner.present.notes import detail_text, price_source_text, render_note, render_part
from planner.present.report.risks import Risk, find_risks
from planner.present.viewmodel import cost_text, plan_view, time_range
from planner.vocab import GIB

DEFAULT_TOP_N = 10


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]  # right-aligned columns
    marks: tuple[str, ...] = ()  # per row: "primary", "runner_up" or ""


@dataclass(frozen=True)
class ChartItem:
    key: str  # cost_time | memory | gpu_count
    title: str
    alt_text: str  # what the chart shows, in words with its numbers (HTML alt, Markdown text)
    spec: dict | None  # Vega-Lite, drawn to PNG/SVG by the output formats; None when only words are needed


@dataclass(frozen=True)
class ReportModel:
    locale: str
    lang: str
    title: str
    scenario_name: str  # user text: every output escapes it
    generated: str
    headings: dict[str, str]
    summary: tuple[str, ...]
    attention: tuple[str, ...]  # what to check before deciding (PlanView.warnings): page 1, under the key figures
    key_figures: tuple[tuple[str, str], ...]
    options_intro: str
    options: Table
    options_legend: str
    charts: tuple[ChartItem, ...]
    charts_intro: str
    assumptions: tuple[str, ...]
    option_sources: tuple[tuple[str, tuple[str, ...]], ...]  # (option label, source lines)
    prices: Table
    exchange: str
    risks: tuple[Risk, ...]
    no_risks: str
    reproducibility: tuple[tuple[str, str], ...]
    result_files: tuple[str, ...]
    scenario_yaml: str
    footer: str
    # Plan against actual: runs of this model recorded on the Runs page (newest first), one row per figure.
    recorded_intro: str = ""
    recorded: Table | None = None
    # What fits on each GPU (issue 33; planner.engine.what_fits), when the caller computed it: under the options.
    what_fits_intro: str = ""
    what_fits: Table | None = None


SECTIONS = ("summary", "options", "charts", "sources", "risks", "reproducibility")


def build_report_model(plan: Plan, scenario: Scenario, locale: str | None = None, all_options: bool = False,
                       top_n: int = DEFAULT_TOP_N, today: dt.date | None = None,
                       with_charts: bool = True, runs: Sequence[RecordedRun] = (),
                       what_fits: Sequence[WhatFits] = ()) -> ReportModel:
    """Everything a report shows, formatted for `locale` (default: the scenario's); renderers only lay it out.
    `runs`: recorded runs (planner.inputs.actuals.scan_actuals); those of this plan's model are shown."""
    locale = locale or scenario.locale or "en"
    today = today or dt.date.today()
    shown = top_options(plan, None if all_options else top_n)
    primary = plan.option(plan.recommendation.primary)
    view = plan_view(plan, scenario, locale, today)
    charts = tuple(_charts(plan, scenario, shown, locale, with_charts))
    return ReportModel(
        locale=locale,
        lang=language_of(locale),
        title=t("report.title", locale),
        scenario_name=scenario.name,
        generated=t("report.generated", locale, date=fmt.date(today, locale), version=__version__),
        headings={**{s: t(f"report.section.{s}", locale) for s in SECTIONS}, "attention": t("attention.title", locale)},
        summary=view.summary,
        attention=view.warnings,
        key_figures=tuple(_key_figures(scenario, primary, locale)),
        options_intro=_options_intro(plan, shown, locale),
        options=_options_table(plan, shown, locale),
        options_legend=t("report.options_legend", locale),
        charts=charts,
        charts_intro=t("report.charts_intro" if charts else "report.no_charts", locale),
        assumptions=tuple(_assumptions(plan, scenario, locale)),
        option_sources=tuple(_option_sources(plan, shown, locale)),
        prices=_prices_table(shown, today, locale),
        exchange=_exchange(scenario, locale),
        risks=tuple(find_risks(plan, scenario, locale, today)),
        no_risks=t("report.no_risks", locale),
        reproducibility=tuple(_reproducibility(plan, scenario, locale)),
        result_files=tuple(plan.result_files_used),
        scenario_yaml=dump_scenario_yaml(scenario),
        footer=t("report.footer", locale, version=__version__),
        **_recorded(plan, runs, locale),
        what_fits_intro=t("what_fits.intro", locale) if what_fits else "",
        what_fits=Table(what_fits_headers(locale, what_fits), what_fits_rows(what_fits, locale),
                        what_fits_numeric(what_fits)) if what_fits else None,
    )


# ---------------------------------------------------------------- summary

def _key_figures(scenario: Scenario, o: PlanOption | None, locale: str) -> list[tuple[str, str]]:
    if o is None:
        return [(t("report.kf.recommendation", locale), t("report.kf.none", locale))]
    c = cost_of(o)
    out = [
        (t("report.kf.recommendation", locale), option_label(o)),
        (t("report.kf.time", locale), f"{fmt.hours(c.hours, locale)} ({time_range(o, locale)})"),
        (t("report.kf.cost", locale), cost_text(o, locale)),
    ]
    deadline, budget = scenario.constraints.deadline_hours, scenario.constraints.budget_usd
    if deadline is not None:
        ok = t("report.kf.met" if c.hours <= deadline else "report.kf.missed", locale)
        out.append((t("report.kf.deadline", locale), f"≤ {fmt.hours(deadline, locale)}: {ok}"))
    if budget is not None:
        ok = t("report.kf.met" if c.usd <= budget else "report.kf.missed", locale)
        out.append((t("report.kf.budget", locale), f"≤ {fmt.money(budget, 'USD', locale)}: {ok}"))
    return out


# ---------------------------------------------------------------- options

def _options_intro(plan: Plan, shown: list[PlanOption], locale: str) -> str:
    if len(shown) >= len(plan.options):
        return t("report.options_all", locale, total=len(plan.options))
    return t("report.options_top", locale, shown=len(shown), total=len(plan.options))


def source_kind(kind: str, locale: str) -> str:
    return t(f"report.kind.{kind}", locale)


def _options_table(plan: Plan, shown: list[PlanOption], locale: str) -> Table:
    currencies = {o.cost.currency for o in shown if o.cost}
    currency = next(iter(currencies)) if len(currencies) == 1 else "USD"
    local = currency != "USD"
    headers = [t("report.col.option", locale), t("report.col.precision", locale), t("report.col.batch", locale),
               t("report.col.memory", locale), t("report.col.step", locale), t("report.col.source", locale),
               t("report.col.time", locale)]
    numeric = [False, False, True, True, True, False, True]
    if local:
        headers.append(t("report.col.cost", locale, currency=currency))
        numeric.append(True)
    headers += [t("report.col.cost", locale, currency="USD"), t("report.col.price", locale),
                t("report.col.role", locale)]
    numeric += [True, True, False]
    r = plan.recommendation
    rows, marks = [], []
    for o in shown:
        m, s, c = o.memory, o.step, o.cost
        row = [
            f"{o.n_gpus} × {o.gpu_name}", o.precision,
            f"{o.micro_batch} × {o.grad_accum}" if o.micro_batch else "—",
            f"{fmt.number(m.total / GIB, locale)} / {fmt.number(m.capacity / GIB, locale)}" if m else "—",
            fmt.sig(s.step_time_s, locale) if s else "—",
            source_kind(s.source.kind, locale) if s else "—",
            (f"{fmt.number(c.hours, locale)} ({fmt.number(c.hours_range[0], locale)}–"
             f"{fmt.number(c.hours_range[1], locale)})") if c else "—",
        ]
        if local:
            row.append(fmt.money(c.amount_in_currency, c.currency, locale) if c else "—")
        row += [fmt.money(c.usd, "USD", locale) if c else "—",
                fmt.money(c.price.usd_per_gpu_hour, "USD", locale, 2) if c and c.price else "—",
                _role_text(o, r, locale)]
        rows.append(tuple(row))
        marks.append("primary" if o.id == r.primary else "runner_up" if o.id == r.runner_up else "")
    return Table(tuple(headers), tuple(rows), tuple(numeric), tuple(marks))


def _role_text(o: PlanOption, r, locale: str) -> str:
    if o.fits is None:
        return t("report.role.fit_unknown", locale)
    if not o.fits and o.planned_with is None:
        # Without a memory estimate the option could not be sized at all (e.g. precision unsupported): say why.
        return render_note(o.notes[0], locale) if o.memory is None and o.notes else t("report.role.no_fit", locale)
    if o.cost is None or o.cost.price is None:
        return t("report.role.no_price", locale)
    roles = []
    if o.planned_with is not None:  # issue 33: does not fit as given, planned with a change
        roles.append(t("report.role.planned_with", locale,
                       changes=", ".join(render_part(c, locale) for c in o.planned_with.change_notes())))
    if o.id == r.primary:
        roles.append(t("report.role.recommended", locale))
    if o.id == r.runner_up:
        roles.append(t("report.role.runner_up", locale))
    if o.id == r.fastest_within_budget and o.id != r.primary:
        roles.append(t("report.role.fastest_in_budget", locale))
    return ", ".join(roles)


# ---------------------------------------------------------------- charts

def _charts(plan: Plan, scenario: Scenario, shown: list[PlanOption], locale: str,
            with_specs: bool) -> list[ChartItem]:
    """The three charts with a text alternative quoting their numbers; specs only when an image will be drawn."""
    from planner.present import charts

    def spec(build, *args) -> dict | None:
        return build(plan, locale, *args) if with_specs else None

    out = []
    if costed(plan.options):
        pts = "; ".join(f"{option_label(o)}: {fmt.hours(cost_of(o).hours, locale)}, {cost_text(o, locale)}"
                        for o in pareto_frontier(plan.options))
        out.append(ChartItem("cost_time", t("report.chart.cost_time_title", locale),
                             t("report.chart.cost_time_alt", locale, points=pts),
                             spec(charts.cost_time_spec, scenario.constraints.deadline_hours,
                                  scenario.constraints.budget_usd)))
    with_memory = [o for o in shown if o.memory is not None][:charts.MAX_OPTIONS_IN_MEMORY_CHART]
    if with_memory:
        parts = "; ".join(f"{option_label(o)}: {fmt.number(memory_of(o).total / GIB, locale)} / "
                          f"{fmt.number(memory_of(o).capacity / GIB, locale)} GiB" for o in with_memory)
        out.append(ChartItem("memory", t("report.chart.memory_title", locale),
                             t("report.chart.memory_alt", locale, parts=parts),
                             spec(charts.memory_spec, with_memory)))
    if len(scenario.hardware.gpu_counts) > 1 and costed(plan.options):
        out.append(ChartItem("gpu_count", t("report.chart.count_title", locale),
                             t("report.chart.count_alt", locale,
                               counts=", ".join(str(n) for n in scenario.hardware.gpu_counts)),
                             spec(charts.gpu_count_spec)))
    return out


# ---------------------------------------------------------------- assumptions and sources

def _assumptions(plan: Plan, scenario: Scenario, locale: str) -> list[str]:
    w, p = scenario.workload, scenario.pricing
    out = [render_note(a, locale) for a in plan.assumptions]
    out.append(t("report.assume.overheads", locale, eval=fmt.percent(w.eval_overhead, locale),
                 ckpt=fmt.percent(w.checkpoint_overhead, locale), failure=fmt.percent(p.failure_overhead, locale),
                 early=fmt.percent(w.early_stop_fraction, locale), runs=p.runs))
    provider = t("report.assume.cheapest", locale) if p.provider == "cheapest" else p.provider
    out.append(t("report.assume.pricing", locale, tier=t(f"report.tier.{p.tier}", locale), provider=provider,
                 tax=fmt.percent(p.tax_rate, locale)))
    return out


def _option_sources(plan: Plan, shown: list[PlanOption], locale: str) -> list[tuple[str, tuple[str, ...]]]:
    """Per shown option, where its figures come from; lines true of every option are listed once, first."""
    per_option = []
    for o in shown:
        if o.fits is False and o.planned_with is None:
            continue
        lines = []
        if o.step:
            lines.append(t("report.src.step", locale, kind=source_kind(o.step.source.kind, locale),
                           detail=detail_text(o.step.source, locale)))
        if o.memory:
            lines.append(t("report.src.memory", locale, kind=source_kind(o.memory.source.kind, locale),
                           detail=detail_text(o.memory.source, locale)))
            m = o.memory
            lines.append(t("report.src.memory_figures", locale, allocated=fmt.number(m.allocated_peak / GIB, locale),
                           reserved=fmt.number(m.reserved_peak / GIB, locale),
                           device=fmt.number(m.device_total / GIB, locale),
                           phase=t(f"common.phase.{m.phase}", locale)))
        if o.convergence:
            lines.append(t("report.src.steps", locale, kind=source_kind(o.convergence.source.kind, locale),
                           detail=detail_text(o.convergence.source, locale)))
        if o.scaling:
            lines.append(t("report.src.scaling", locale, kind=source_kind(o.scaling.source.kind, locale),
                           detail=detail_text(o.scaling.source, locale),
                           eff=fmt.percent(o.scaling.efficiency, locale)))
        lines.extend(render_note(n, locale) for n in o.notes)
        per_option.append((option_label(o), list(dict.fromkeys(lines))))
    if len(per_option) < 2:
        return [(label, tuple(lines)) for label, lines in per_option]
    common = [line for line in per_option[0][1] if all(line in lines for _, lines in per_option[1:])]
    out = [(t("report.src.all_options", locale), tuple(common))] if common else []
    out += [(label, tuple(line for line in lines if line not in common)) for label, lines in per_option]
    return out


def _prices_table(shown: list[PlanOption], today: dt.date, locale: str) -> Table:
    headers = tuple(t(f"report.price.{k}", locale)
                    for k in ("gpu", "provider", "instance", "tier", "usd", "as_of", "age", "source"))
    seen, rows = set(), []
    for o in shown:
        p = o.cost.price if o.cost else None
        if p is None:
            continue
        key = (o.gpu_id, p.provider, p.instance, p.region, p.tier, p.usd_per_gpu_hour)
        if key in seen:
            continue
        seen.add(key)
        age = (today - dt.date.fromisoformat(p.as_of[:10])).days if p.as_of else None
        rows.append((o.gpu_name, p.provider, fmt.offer("", p.instance, p.region), t(f"report.tier.{p.tier}", locale),
                     fmt.money(p.usd_per_gpu_hour, "USD", locale, 2),
                     fmt.date(p.as_of, locale) if p.as_of else t("report.price.undated", locale),
                     t("report.price.days", locale, days=fmt.number(age, locale, 0)) if age is not None else "—",
                     price_source_text(p, locale)))
    return Table(headers, tuple(rows), (False, False, False, False, True, False, True, False))


MAX_RECORDED_RUNS = 12  # the newest; the Runs page lists them all


def _recorded(plan: Plan, runs: Sequence[RecordedRun], locale: str) -> dict:
    """The report's "plan against actual" part: the recorded runs of this plan's model, newest first, one row per
    recorded figure (predicted, actual, error = actual / predicted - 1, inside the predicted range), and one
    sentence with the median error and how many figures fell inside their range."""
    name = plan.model.name if plan.model else None
    mine = sorted((r for r in runs if name and r.model.name == name), key=lambda r: r.date, reverse=True)
    if not mine:
        return {}
    names = {o.gpu_id: o.gpu_name for o in plan.options}
    rows, errors, inside = [], [], []
    for run in mine[:MAX_RECORDED_RUNS]:
        o = run.option
        label = f"{o.n_gpus} × {names.get(o.gpu_id, o.gpu_id)} · {o.precision}"
        for e in run_errors(run):
            if e.error is not None:
                errors.append(e.error)
            if e.inside is not None:
                inside.append(e.inside)
            rows.append((fmt.date(run.date, locale), label, t(f"actuals.figure.{e.figure}", locale),
                         _figure(e.figure, e.predicted, locale), _figure(e.figure, e.actual, locale),
                         ("+" if e.error > 0 else "") + fmt.percent(e.error, locale) if e.error is not None else "—",
                         "—" if e.inside is None else t(f"report.recorded.{'yes' if e.inside else 'no'}", locale)))
    headers = tuple(t(f"report.recorded.{k}", locale)
                    for k in ("date", "option", "figure", "predicted", "actual", "error", "inside"))
    intro = t("report.recorded.intro", locale, n=fmt.number(len(mine), locale, 0), model=name)
    if len(mine) > MAX_RECORDED_RUNS:
        intro += " " + t("report.recorded.newest", locale, shown=fmt.number(MAX_RECORDED_RUNS, locale, 0))
    if errors:
        intro += " " + t("report.recorded.summary", locale,
                         median=fmt.percent(statistics.median(abs(x) for x in errors), locale),
                         inside=fmt.number(sum(inside), locale, 0), total=fmt.number(len(inside), locale, 0))
    return {"recorded_intro": intro,
            "recorded": Table(headers, tuple(rows), (False, False, False, True, True, True, False))}


def _figure(figure: str, value: float | None, locale: str) -> str:
    if value is None:
        return "—"
    if figure == "step_time_s":
        return f"{fmt.sig(value, locale)} s"
    if figure == "hours":
        return fmt.hours(value, locale)
    return fmt.money(value, "USD", locale, 2)


def _exchange(scenario: Scenario, locale: str) -> str:
    p = scenario.pricing
    if p.currency == "USD":
        return t("report.exchange.usd", locale)
    if p.exchange_rate_as_of is None:
        return t("report.exchange.undated", locale, rate=fmt.sig(p.exchange_rate, locale, 4), currency=p.currency)
    return t("report.exchange.dated", locale, rate=fmt.sig(p.exchange_rate, locale, 4), currency=p.currency,
             date=fmt.date(p.exchange_rate_as_of, locale))


# ---------------------------------------------------------------- reproducibility

def _reproducibility(plan: Plan, scenario: Scenario, locale: str) -> list[tuple[str, str]]:
    files = ", ".join(plan.result_files_used) if plan.result_files_used else t("report.repro.no_files", locale)
    return [
        (t("report.repro.version", locale), f"trainplan {__version__}"),
        (t("report.repro.locale", locale), locale),
        (t("report.repro.profiles", locale), ", ".join(plan.profiles_used) or "—"),
        (t("report.repro.files", locale), files),
        (t("report.repro.command", locale), "python -m planner SCENARIO.yaml --format html|pdf|markdown "
                                            f"--lang {locale}"),
    ]
