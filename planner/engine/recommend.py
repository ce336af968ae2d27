"""Choose among plan options: time-cost Pareto frontier, primary, runner-up and constrained picks."""

from __future__ import annotations

from collections.abc import Sequence

from planner.engine.estimates import PlanOption, Recommendation, cost_of
from planner.inputs.scenario import Constraints
from planner.vocab import PRECISION_PREFERENCE


def costed(options: Sequence[PlanOption]) -> list[PlanOption]:
    """Options that fit and have a price (an option timed but with no quote cannot be compared on cost). Options
    whose fit is unknown (fits None: no activation figure) count only when no option is known to fit."""
    priced = [o for o in options if o.cost is not None and o.cost.price is not None]
    known = [o for o in priced if o.fits]
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


def recommend(options: Sequence[PlanOption], constraints: Constraints) -> Recommendation:
    pool = costed(options)
    if not pool:
        reason = ("no option fits in memory" if not any(o.fits or o.fits is None for o in options)
                  else "no option has a price for the chosen tier")
        return Recommendation(None, None, None, None, reason)
    deadline = constraints.deadline_hours
    budget = constraints.budget_usd
    in_deadline = [o for o in pool if deadline is None or cost_of(o).hours <= deadline]
    in_budget = [o for o in pool if budget is None or cost_of(o).usd <= budget]
    cheapest_in_deadline = min(in_deadline, key=_cheapest_key, default=None)
    fastest_in_budget = _fastest(in_budget)
    if cheapest_in_deadline is not None:
        primary = cheapest_in_deadline
        reason = ("cheapest option" if deadline is None
                  else f"cheapest option that finishes within the {deadline:g} h deadline")
    else:
        primary = min(pool, key=_cheapest_key)
        reason = f"no option finishes within the {deadline:g} h deadline; cheapest option that fits"
    if budget is not None and cost_of(primary).usd > budget:
        reason += f"; over the {budget:,.0f} USD budget"
    if primary.fits is None:
        reason += ("; its memory fit is unknown (no activation figure for the model)"
                   + ("; the options known to fit have no price" if any(o.fits for o in options) else ""))
    if deadline is not None and cost_of(primary).hours <= deadline < cost_of(primary).hours_range[1]:
        reason += f"; at the high end of its range ({cost_of(primary).hours_range[1]:,.1f} h) it misses the deadline"
    runner = _runner_up(primary, pareto_frontier(pool))
    return Recommendation(
        primary=primary.id,
        runner_up=runner.id if runner else None,
        cheapest_within_deadline=cheapest_in_deadline.id if cheapest_in_deadline else None,
        fastest_within_budget=fastest_in_budget.id if fastest_in_budget else None,
        reason=reason,
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
