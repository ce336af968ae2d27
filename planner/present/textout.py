"""The plan as a plain-text table for the terminal (python -m planner --format table)."""

from __future__ import annotations

from planner.engine.estimates import Plan, PlanOption
from planner.engine.recommend import trade_off_text
from planner.present.notes import english
from planner.vocab import GIB

COLUMNS = (
    ("option", 26), ("fits", 4), ("mem GiB W/G/O/A/T+ovh", 26), ("total/cap", 11), ("mb x acc", 8),
    ("step s", 8), ("source", 12), ("steps", 9), ("hours [low-high]", 20), ("GPU-h", 8), ("cost USD", 10),
    ("local", 14), ("price (provider, tier, date)", 36), ("kWh", 7),
)


def _fmt(x: float | None, spec: str = ",.1f") -> str:
    return "-" if x is None else format(x, spec)


def _money(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"


def _row(o: PlanOption) -> list[str]:
    m, s, c = o.memory, o.step, o.cost
    parts = "-"
    total = "-"
    if m:
        g = m.parts_gib()
        ovh = g["transients"] + g["workspace"] + g["context"] + g["nccl"]
        parts = "/".join(f"{v:.1f}" for v in (g["weights"], g["grads"], g["optimizer"], g["activations"], ovh))
        total = f"{m.total / GIB:.1f}/{m.capacity / GIB:.1f}"
    hours = "-"
    if c:
        hours = f"{c.hours:,.1f} [{c.hours_range[0]:,.1f}-{c.hours_range[1]:,.1f}]"
    price = "-"
    if c and c.price:
        price = f"{c.price.provider} {c.price.tier} {c.price.as_of or 'undated'} ${c.price.usd_per_gpu_hour:.2f}"
    local = f"{_money(c.amount_in_currency)} {c.currency}" if c else "-"
    return [
        o.id, "yes" if o.fits else "NO", parts, total,
        f"{o.micro_batch}x{o.grad_accum}" if o.micro_batch else "-",
        _fmt(s.step_time_s, ".3f") if s else "-", s.source.kind if s else "-",
        _fmt(o.convergence.steps, ",.0f") if o.convergence else "-", hours,
        _fmt(c.gpu_hours, ",.1f") if c else "-", _money(c.usd) if c else "-", local, price,
        (_fmt(c.energy_kwh, ",.0f") if c.energy_kwh and c.energy_kwh >= 10 else _fmt(c.energy_kwh, ",.2f"))
        if c else "-",
    ]


def render_table(plan: Plan) -> str:
    lines = [f"Plan: {plan.scenario_name}", ""]
    header = [name for name, _ in COLUMNS]
    rows = [_row(o) for o in plan.options]
    widths = [max(w, *(len(r[i]) for r in rows)) if rows else w for i, (_, w) in enumerate(COLUMNS)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    lines.append("")
    lines.extend(recommendation_lines(plan))
    notes = [(o.id, n) for o in plan.options for n in o.notes]
    if notes:
        lines += ["", "Notes:"] + [f"  {oid}: {english(n)}" for oid, n in notes]
    if plan.warnings:
        lines += ["", "Warnings:"] + [f"  ! {english(w)}" for w in plan.warnings]
    if plan.assumptions:
        lines += ["", "Assumptions:"] + [f"  - {english(a)}" for a in plan.assumptions]
    return "\n".join(lines) + "\n"


def recommendation_lines(plan: Plan) -> list[str]:
    r = plan.recommendation
    primary = plan.option(r.primary)
    if primary is None:
        return [f"Recommendation: none ({r.reason})"]
    c = primary.cost
    out = [f"Recommendation: {primary.id} (micro-batch {primary.micro_batch} x {primary.grad_accum} accumulation): "
           f"{c.hours:,.1f} h [{c.hours_range[0]:,.1f}-{c.hours_range[1]:,.1f}], {_money(c.usd)} USD "
           f"({_money(c.amount_in_currency)} {c.currency}) — {r.reason}"]
    runner = plan.option(r.runner_up)
    out.append(f"Runner-up: {runner.id}: {trade_off_text(primary, runner)}" if runner
               else "Runner-up: none (no other point on the time-cost frontier)")
    out.append(f"Cheapest within the deadline: {r.cheapest_within_deadline or 'none meets the deadline'}")
    out.append(f"Fastest within the budget: {r.fastest_within_budget or 'none within the budget'}")
    return out
