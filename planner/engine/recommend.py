"""Choose among plan options: time-cost Pareto frontier, primary, runner-up and constrained picks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from planner.engine.estimates import CostEstimate, PlanOption, Recommendation, cost_of
from planner.engine.notes import Note
from planner.inputs.scenario import Constraints
from planner.vocab import PRECISION_PREFERENCE, QUOTE_MAX_AGE_DAYS


def costed(options: Sequence[PlanOption]) -> list[PlanOption]:
    """Options that fit, as given or with the change they are planned with (issue 33), and have a price (an option
    timed but with no quote cannot be compared on cost). Options whose fit is unknown (fits None: no activation
    figure) count only when no option is known to fit."""
    priced = [o for o in options if o.cost is not None and o.cost.price is not None]
    known = [o for o in priced if o.fits or o.planned_with is not None]
    return known or [o for o in priced if o.fits is None]


def pareto_frontier(options: Sequence[PlanOption]) -> list[PlanOption]:
    """Options no other option beats on both hours and cost (ties keep the first), fastest first."""
    pts = sorted(costed(options), key=lambda o: (cost_of(o).hours, cost_of(o).usd, PRECISION_PREFERENCE.get(o.precision, 9)))
    frontier: list[PlanOption] = []
    best_usd = float("inf")
    for o in pts:
        if cost_of(o).usd < best_usd:
            frontier.append(o)
            best_usd = cost_of(o).usd
    return frontier


# The one rule on risks (issue 18): an option with a risk -- a borderline memory verdict (issue 33: within the
# memory model's held-out error of the capacity, estimates.BORDERLINE_FRACTION), or a published price
# that is stale (older than QUOTE_MAX_AGE_DAYS) or undated -- is the primary only when no option without one meets
# the constraints (deadline at the scenario's confidence, and budget); the recommendation then names its risks, and
# names a cheaper risky option that meets them when the primary is clean. The runner-up and the fastest within the
# budget are drawn from the clean options too when the primary is clean. p90 = the high end of the hours range.

def option_risks(o: PlanOption, today: dt.date) -> tuple[str, ...]:
    """What counts against `o` (planner.vocab.RISKS), in that order."""
    out = []
    m = o.planned_with.memory if o.planned_with is not None else o.memory  # what will run
    if m is not None and m.fits and m.verdict == "borderline":
        out.append("tight_memory")
    price = o.cost.price if o.cost else None
    if price is not None and price.origin == "published":
        if price.as_of is None:
            out.append("undated_price")
        elif (today - dt.date.fromisoformat(price.as_of[:10])).days > QUOTE_MAX_AGE_DAYS:
            out.append("stale_price")
    return tuple(out)


def deadline_hours(o: PlanOption, confidence: str) -> float:
    """The hours that must meet the deadline: the range's high end at p90, the likely hours at p50."""
    return cost_deadline_hours(cost_of(o), confidence)


def cost_deadline_hours(c: CostEstimate, confidence: str) -> float:
    """deadline_hours for one cost estimate (plan._option compares the rentals of one option with it)."""
    return c.hours_range[1] if confidence == "p90" else c.hours


def _why(key: str, **params: object) -> Note:
    """One part of the recommendation's reason: the catalog text rec_reason.<key> (present/ says it)."""
    return Note(f"rec_reason.{key}", **params)


def _risk_words(risks: Sequence[str]) -> tuple[Note, ...]:
    return tuple(Note(f"rec_reason.risk.{r}") for r in risks)


def recommend(options: Sequence[PlanOption], constraints: Constraints, today: dt.date | None = None) -> Recommendation:
    today = today or dt.date.today()
    confidence = constraints.deadline_confidence
    pool = costed(options)
    if not pool:
        why = _why("no_fit" if not any(o.fits or o.fits is None or o.planned_with for o in options) else "no_price")
        return Recommendation(None, None, None, None, (why,), deadline_confidence=confidence)
    deadline, budget = constraints.deadline_hours, constraints.budget_usd

    def on_time(o: PlanOption, level: str = confidence) -> bool:
        return deadline is None or deadline_hours(o, level) <= deadline

    def affordable(o: PlanOption) -> bool:
        return budget is None or cost_of(o).usd <= budget

    def clean_first(opts: list[PlanOption]) -> list[PlanOption]:
        return [o for o in opts if not option_risks(o, today)] or opts

    in_deadline = [o for o in pool if on_time(o)]
    in_budget = [o for o in pool if affordable(o)]
    meets = [o for o in in_deadline if affordable(o)]
    fallback = ""
    if meets:
        primary = min(clean_first(meets), key=_cheapest_key)
        budgeted = "_budget" if budget is not None else ""
        reason = [_why(f"cheapest{budgeted}", budget=budget) if deadline is None else
                  _why(f"cheapest_deadline_{confidence}{budgeted}", deadline=deadline, budget=budget)]
    elif deadline is None:  # no deadline, and nothing within the budget: the cheapest (the budget sentence says so)
        primary = min(clean_first(pool), key=_cheapest_key)
        reason = [_why("cheapest")]
    elif in_deadline:  # on time only over budget: the cheapest of those
        primary, fallback = min(clean_first(in_deadline), key=_cheapest_key), "over_budget"
        reason = [_why("over_budget_on_time", deadline=deadline)]
    elif confidence == "p90" and (likely := [o for o in pool if on_time(o, "p50")]):
        primary, fallback = min(clean_first(likely), key=_cheapest_key), "p50"
        reason = [_why("likely_on_time", deadline=deadline)]
    else:
        primary, fallback = min(clean_first(pool), key=lambda o: (deadline_hours(o, confidence), *_cheapest_key(o))), \
            "fastest"
        reason = [_why("fastest", deadline=deadline)]
    risks = option_risks(primary, today)
    set_aside = None
    if not risks and meets:
        cheaper = [o for o in meets if _cheapest_key(o) < _cheapest_key(primary)]
        set_aside = min(cheaper, key=_cheapest_key, default=None)
    if risks:
        reason.append(_why("picked_although", risks=_risk_words(risks)))
    if set_aside is not None:
        reason.append(_why("set_aside", option=set_aside.id, risks=_risk_words(option_risks(set_aside, today))))
    if budget is not None and cost_of(primary).usd > budget and fallback != "over_budget":
        reason.append(_why("over_budget", budget=budget))
    if primary.fits is None:
        reason.append(_why("fit_unknown"))
        if any(o.fits for o in options):
            reason.append(_why("fitting_unpriced"))
    if deadline is not None and cost_of(primary).hours <= deadline < cost_of(primary).hours_range[1]:
        reason.append(_why("misses_at_high_end", hours=cost_of(primary).hours_range[1]))
    # Runner-up and fastest within the budget: among the clean options when the primary is clean (a pick beaten on
    # both time and cost by an option it was preferred to would read as a mistake).
    alternatives = pool if risks else clean_first(pool)
    runner = _runner_up(primary, pareto_frontier(alternatives))
    # membership by id: `o in alternatives` compared whole dataclasses, quadratic in the options (issue 38)
    alternative_ids = {o.id for o in alternatives}
    fastest_in_budget = _fastest([o for o in in_budget if o.id in alternative_ids])
    return Recommendation(
        primary=primary.id,
        runner_up=runner.id if runner else None,
        cheapest_within_deadline=min(in_deadline, key=_cheapest_key).id if in_deadline else None,
        fastest_within_budget=fastest_in_budget.id if fastest_in_budget else None,
        reason=tuple(reason),
        primary_risks=risks,
        deadline_confidence=confidence,
        set_aside=set_aside.id if set_aside else None,
        set_aside_risks=option_risks(set_aside, today) if set_aside else (),
        fallback=fallback,
    )


# Equal cost and time (e.g. an input-bound run): prefer bf16 (no loss scaling), then fp16, tf32, fp32.


# Hours within 2% are a tie for "fastest": estimates are not that precise, so the cheaper one wins.
FASTEST_TIE_FRACTION = 0.02


def _fastest(pool: list[PlanOption]) -> PlanOption | None:
    if not pool:
        return None
    best_hours = min(cost_of(o).hours for o in pool)
    near = [o for o in pool if cost_of(o).hours <= best_hours * (1 + FASTEST_TIE_FRACTION)]
    return min(near, key=_cheapest_key)


def _cheapest_key(o: PlanOption) -> tuple[float, float, int]:
    return (round(cost_of(o).usd, 6), round(cost_of(o).hours, 6), PRECISION_PREFERENCE.get(o.precision, 9))


def _runner_up(primary: PlanOption, frontier: list[PlanOption]) -> PlanOption | None:
    """The next frontier point: the closest faster one, else the closest cheaper one."""
    faster = [o for o in frontier if cost_of(o).hours < cost_of(primary).hours and o.id != primary.id]
    if faster:
        return max(faster, key=lambda o: cost_of(o).hours)
    slower = [o for o in frontier if o.id != primary.id]
    return min(slower, key=lambda o: cost_of(o).hours, default=None)
