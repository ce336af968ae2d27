"""Risks a report lists: each only when the plan triggers it, each quoting the number that triggered it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from planner.engine.estimates import Plan, PlanOption
from planner.inputs.scenario import Scenario
from planner.present import fmt
from planner.present.charts import option_label
from planner.present.i18n import t
from planner.present.notes import render_note
from planner.vocab import GIB, QUOTE_MAX_AGE_DAYS

STALE_PRICE_DAYS = QUOTE_MAX_AGE_DAYS  # docs/methods.md#cost: quotes older than 180 days are flagged (planner.vocab)
FAR_KINDS = ("analytic", "extrapolated", "transferred")  # step times not read off a measurement of this GPU
FP16_MAX = 65504  # largest finite IEEE half-precision value: gradients above it overflow without loss scaling
KEYS = ("fp16", "b_crit", "input_bound", "spot", "far", "headroom", "stale_price", "warning")


@dataclass(frozen=True)
class Risk:
    key: str  # one of KEYS
    title: str
    text: str


def featured(plan: Plan) -> list[PlanOption]:
    """The options a manager decides between: the recommendation and its runner-up."""
    r = plan.recommendation
    return [o for o in (plan.option(r.primary), plan.option(r.runner_up)) if o is not None]


def find_risks(plan: Plan, scenario: Scenario, locale: str, today: dt.date) -> list[Risk]:
    options = featured(plan)
    out: list[Risk] = []
    for check in (_fp16, _input_bound, _spot, _far, _headroom, _stale_price):
        for o in options:
            risk = check(o, scenario, locale, today)
            if risk is not None:
                out.append(risk)
    b_crit = _b_crit(options, scenario, locale)
    if b_crit is not None:
        out.insert(sum(r.key == "fp16" for r in out), b_crit)
    for w in plan.warnings:
        out.append(Risk("warning", t("report.risk.warning.title", locale), render_note(w, locale)))
    return out


def _risk(key: str, locale: str, **params: object) -> Risk:
    return Risk(key, t(f"report.risk.{key}.title", locale), t(f"report.risk.{key}.text", locale, **params))


def _fp16(o: PlanOption, scenario: Scenario, locale: str, today: dt.date) -> Risk | None:
    if o.precision != "fp16":
        return None
    return _risk("fp16", locale, option=option_label(o), max=fmt.number(FP16_MAX, locale, 0))


def _b_crit(options: list[PlanOption], scenario: Scenario, locale: str) -> Risk | None:
    conv = next((o.convergence for o in options if o.convergence is not None), None)
    batch = scenario.training.global_batch
    if conv is None or not conv.b_crit or batch <= conv.b_crit:
        return None
    return _risk("b_crit", locale, batch=fmt.number(batch, locale, 0), b_crit=fmt.number(conv.b_crit, locale, 0),
                 ratio=fmt.number(batch / conv.b_crit, locale, 1))


def _input_bound(o: PlanOption, scenario: Scenario, locale: str, today: dt.date) -> Risk | None:
    s = o.step
    if s is None or s.input_time_s is None or not o.grad_accum:
        return None
    loading = o.grad_accum * s.input_time_s
    busy = s.compute_step_time_s + s.exposed_comm_s
    if loading <= busy:
        return None
    return _risk("input_bound", locale, option=option_label(o), loading=fmt.sig(loading, locale),
                 compute=fmt.sig(busy, locale), workers=scenario.hardware.cpu_workers_per_gpu)


def _spot(o: PlanOption, scenario: Scenario, locale: str, today: dt.date) -> Risk | None:
    c = o.cost
    if c is None or c.price is None or c.price.tier != "spot" or c.preemptions <= 0:
        return None
    spot = scenario.pricing.spot
    return _risk("spot", locale, option=option_label(o), n=fmt.sig(c.preemptions, locale, 2),
                 rate=fmt.sig(spot.preemptions_per_instance_hour, locale),
                 lost=fmt.number(spot.checkpoint_interval_min / 2 + spot.restart_min, locale, 0))


def _far(o: PlanOption, scenario: Scenario, locale: str, today: dt.date) -> Risk | None:
    s = o.step
    if s is None or s.source.kind not in FAR_KINDS:
        return None
    lo, hi = s.band_s
    return _risk("far", locale, option=option_label(o), kind=t(f"report.kind.{s.source.kind}", locale),
                 step=fmt.sig(s.step_time_s, locale), low=fmt.sig(lo, locale), high=fmt.sig(hi, locale))


def _headroom(o: PlanOption, scenario: Scenario, locale: str, today: dt.date) -> Risk | None:
    m = o.memory
    if m is None or m.verdict != "borderline" or not o.fits:  # one notion of "tight" (issue 33): the verdict's band
        return None
    return _risk("headroom", locale, option=option_label(o), headroom=fmt.percent(m.headroom, locale, 1),
                 total=fmt.number(m.total / GIB, locale), capacity=fmt.number(m.capacity / GIB, locale))


def _stale_price(o: PlanOption, scenario: Scenario, locale: str, today: dt.date) -> Risk | None:
    p = o.cost.price if o.cost else None
    if p is None or p.origin != "published":
        return None
    if p.as_of is None:
        return Risk("stale_price", t("report.risk.stale_price.title", locale),
                    t("report.risk.stale_price.undated", locale, option=option_label(o), provider=p.provider,
                      instance=p.instance))
    age = (today - dt.date.fromisoformat(p.as_of[:10])).days
    if age <= STALE_PRICE_DAYS:
        return None
    return _risk("stale_price", locale, option=option_label(o), provider=p.provider, instance=p.instance,
                 date=fmt.date(p.as_of, locale), days=fmt.number(age, locale, 0),
                 limit=STALE_PRICE_DAYS)
