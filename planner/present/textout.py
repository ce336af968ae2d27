"""The plan as a plain-text table for the terminal (python -m planner --format table)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.engine.estimates import Plan, PlanOption, cost_of
from planner.engine.what_fits import WhatFits
from planner.present.fit_answers import what_fits_headers, what_fits_rows
from planner.present.fmt import MISSING, SCIENTIFIC_FROM
from planner.present.notes import english, parts_text
from planner.present.viewmodel import (
    cost_lines_sentence,
    degraded_sentence,
    planned_for_sentence,
    throughput_sentence,
    trade_off,
)
from planner.vocab import GIB

COLUMNS = (
    ("option", 26), ("fits", 7), ("mem GiB W/G/O/A/T+ovh", 26), ("total/cap", 11), ("mb x acc", 8),
    ("step s", 8), ("source", 12), ("steps", 9), ("hours [low-high]", 20), ("GPU-h", 8), ("cost USD", 10),
    ("local", 14), ("price (provider, tier, date)", 36), ("kWh", 7),
)


def _fmt(x: float | None, spec: str = ",.1f") -> str:
    if x is None or not math.isfinite(x):
        return MISSING
    return format(x, ".3g") if abs(x) >= SCIENTIFIC_FROM else format(x, spec)


def _money(x: float | None) -> str:
    return _fmt(x, ",.0f" if x is not None and abs(x) >= 100 else ",.2f")


def _row(o: PlanOption) -> list[str]:
    m, s, c = o.memory, o.step, o.cost
    parts = MISSING
    total = MISSING
    if m:
        g = m.parts_gib()
        ovh = g["transients"] + g["workspace"] + g["context"] + g["nccl"]
        parts = "/".join(f"{v:.1f}" for v in (g["weights"], g["grads"], g["optimizer"], g["activations"], ovh))
        total = f"{m.total / GIB:.1f}/{m.capacity / GIB:.1f}"
    hours = MISSING
    if c:
        hours = f"{_fmt(c.hours)} [{_fmt(c.hours_range[0])}-{_fmt(c.hours_range[1])}]"
    price = MISSING
    if c and c.price:
        price = f"{c.price.provider} {c.price.tier} {c.price.as_of or 'undated'} ${c.price.usd_per_gpu_hour:.2f}"
    local = f"{_money(c.amount_in_currency)} {c.currency}" if c and c.price else MISSING
    return [
        o.id, "planned" if o.planned_with else {True: "yes", False: "NO", None: "unknown"}[o.fits], parts, total,
        f"{o.micro_batch}x{o.grad_accum}" if o.micro_batch else MISSING,
        _fmt(s.step_time_s, ".3f") if s else MISSING, s.source.kind if s else MISSING,
        _fmt(o.convergence.steps, ",.0f") if o.convergence else MISSING, hours,
        _fmt(c.gpu_hours, ",.1f") if c else MISSING, _money(c.usd) if c and c.price else MISSING, local, price,
        (_fmt(c.energy_kwh, ",.0f") if c.energy_kwh and c.energy_kwh >= 10 else _fmt(c.energy_kwh, ",.2f"))
        if c else MISSING,
    ]


def render_table(plan: Plan) -> str:
    lines = [f"Plan: {plan.scenario_name}", *filter(None, [planned_for_sentence(plan, "en")]), ""]
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
        return [f"Recommendation: none ({parts_text(r.reason, 'en')})"]
    c = cost_of(primary)
    out = [f"Recommendation: {primary.id} (micro-batch {primary.micro_batch} x {primary.grad_accum} accumulation): "
           f"{_fmt(c.hours)} h [{_fmt(c.hours_range[0])}-{_fmt(c.hours_range[1])}], {_money(c.usd)} USD "
           f"({_money(c.amount_in_currency)} {c.currency}) — {parts_text(r.reason, 'en')}"]
    if adds_up := cost_lines_sentence(primary, "en"):  # issue 35 d: every line of the cost
        out.append(adds_up)
    if degraded := degraded_sentence(primary, "en"):  # issue 33: planned with a change the scenario did not ask for
        out.append(degraded)
    runner = plan.option(r.runner_up)
    if rate := throughput_sentence(primary, "en"):
        out.append(rate)
    out.append(f"Runner-up: {runner.id}: {trade_off(primary, runner, 'en')}" if runner
               else "Runner-up: none (no other point on the time-cost frontier)")
    out.append(f"Cheapest within the deadline: {r.cheapest_within_deadline or 'none meets the deadline'}")
    out.append(f"Fastest within the budget: {r.fastest_within_budget or 'none within the budget'}")
    return out


def what_fits_lines(answers: Sequence[WhatFits]) -> list[str]:
    """What fits on each GPU (planner.engine.what_fits), as the CLI table prints it (English)."""
    headers = what_fits_headers("en", answers)
    rows = what_fits_rows(answers, "en")
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return ("  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))).rstrip()

    return ["What fits on each GPU:", line(headers), *(line(r) for r in rows)]
