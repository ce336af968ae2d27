"""The plan as JSON (schema trainplan.plan/2; the README has the changelog from /1), the contract in DESIGN.md;
also the options as flat rows."""

from __future__ import annotations

import json
import math

from planner import __version__
from planner.engine.estimates import Plan, PlannedWith, PlanOption, Source
from planner.present.notes import english, parts_text, price_source_text, source_text
from planner.vocab import GIB

SCHEMA = "trainplan.plan/2"



def _planned_with(pw: PlannedWith | None) -> dict[str, object] | None:
    """plan/2 `planned_with` (issue 33): the configuration the option's time and cost are for, when the scenario's
    does not fit; its device total and verdict."""
    if pw is None:
        return None
    return {"micro_batch": pw.micro_batch, "grad_accum": pw.grad_accum,
            "activation_checkpointing": pw.activation_checkpointing, "sharding": pw.sharding, "offload": False,
            "optimizer_state_bits": pw.optimizer_state_bits, "changed": list(pw.changed),
            "memory_gib": _r(pw.memory.total / GIB, 2), "verdict": pw.memory.verdict,
            "fit_margin_gib": _r(pw.memory.fit_margin_gib, 2)}

def _r(x: float | None, digits: int = 4) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def _pair(p: tuple[float, float] | None, digits: int = 4) -> list | None:
    return [_r(p[0], digits), _r(p[1], digits)] if p else None


def option_to_dict(o: PlanOption) -> dict:
    m, s, c, conv = o.memory, o.step, o.cost, o.convergence
    memory_gib = None
    if m is not None:
        memory_gib = {k: _r(v) for k, v in m.parts_gib().items()}
        memory_gib.update(total=_r(m.total / GIB), capacity=_r(m.capacity / GIB), usable=_r(m.usable / GIB),
                          allocated_peak=_r(m.allocated_peak / GIB), reserved_peak=_r(m.reserved_peak / GIB),
                          device_total=_r(m.device_total / GIB))
    price = None
    if c is not None and c.price is not None:
        p = c.price
        price = {"provider": p.provider, "instance": p.instance, "tier": p.tier,
                 "usd_per_gpu_hour": _r(p.usd_per_gpu_hour), "as_of": p.as_of, "source": price_source_text(p, "en"),
                 "origin": p.origin, "gpus_per_instance": p.gpus_per_instance, "region": p.region,
                 "retrieved": p.retrieved}
    out = {
        "id": o.id, "gpu_id": o.gpu_id, "gpu_name": o.gpu_name, "n_gpus": o.n_gpus, "topology": o.topology,
        "precision": o.precision,
        "fits": o.fits, "verdict": m.verdict if m else None,
        "fit_margin_gib": _r(m.fit_margin_gib, 2) if m else None,
        "planned_with": _planned_with(o.planned_with),
        "micro_batch": o.micro_batch, "grad_accum": o.grad_accum,
        "memory_gib": memory_gib,
        "headroom": _r(m.headroom, 3) if m else None,
        "memory_source": source_text(m.source) if m else None,
        "memory_phase": m.phase if m else None,
        "memory_published": ({"outcome": m.published_outcome, "source": m.published_label,
                              "peak_gib": _r(m.published_figure / GIB) if m.published_figure else None,
                              "counter": m.published_meaning} if m and m.published_outcome else None),
        "step_time_s": _r(s.step_time_s) if s else None,
        "micro_step_time_s": _r(s.micro_step_time_s) if s else None,
        "step_time_source": source_text(s.source) if s else None,
        "step_time_range_s": _pair(s.band_s) if s else None,
        "range_meaning": s.band_meaning if s else None,
        # False when no published or measured run shares the option's model family, stack and architecture group
        # (its range is widened, a note says so): docs/methods.md#step-time
        "published_like": (not any(n.key == "unlike_corpus" for n in s.notes)) if s else None,
        "samples_per_s": _r(s.samples_per_s) if s else None,
        # What the step time means per GPU (same source as step_time_source): docs/methods.md#software-stack
        "throughput_per_gpu": ({"samples_per_s": _r(tp.samples_per_s_per_gpu),
                                "tokens_per_s": _r(tp.tokens_per_s_per_gpu),
                                "model_tflops_per_s": _r(tp.model_tflops_per_s_per_gpu),
                                "peak_tflops": _r(tp.peak_tflops), "mfu": _r(tp.mfu)}
                               if (tp := o.throughput) is not None else None),
        "steps": _r(conv.steps, 6) if conv else None,
        "epochs": _r(conv.epochs) if conv and conv.epochs is not None else None,
        "convergence_source": source_text(conv.source) if conv else None,
        "hours": _r(c.hours) if c else None,
        "hours_range": _pair(c.hours_range) if c else None,
        "gpu_hours": _r(c.gpu_hours) if c else None,
        "cost_usd": _r(c.usd, 6) if c else None,
        "cost_usd_range": _pair(c.usd_range, 6) if c else None,
        "data_cost_usd": _r(c.data_usd, 6) if c and c.data_usd is not None else None,
        "cost_lines_usd": ({"gpu": _r(ln.gpu_usd, 6), "storage": _r(ln.storage_usd, 6), "egress": _r(ln.egress_usd, 6),
                            "tax": _r(ln.tax_usd, 6)} if c and (ln := c.lines) is not None else None),
        "cost_local": ({"amount": _r(c.amount_in_currency, 6), "currency": c.currency,
                        "range": _pair(c.amount_range_in_currency, 6)} if c else None),
        "price": price,
        "n_gpus_billed": c.n_gpus_billed if c else None,
        "scaling": ({"source": source_text(o.scaling.source), "efficiency": _r(o.scaling.efficiency, 3),
                     "exposed_comm_s": _r(o.scaling.exposed_comm_s),
                     "formula_step_time_s": _r(o.scaling.formula_step_time_s)} if o.scaling else None),
        "energy_kwh": _r(c.energy_kwh) if c else None,
        "co2_kg": _r(c.co2_kg) if c else None,
        "checkpoint_gib": _r(o.checkpoint_gib),
        "notes": [english(n) for n in o.notes],
    }
    # Only where the step time rests on a partial result file (a sweep that stopped early): the files (issue 34)
    partial = _partial_files(s.source) if s else []
    if partial:
        out["partial_files"] = partial
    return out


def _partial_files(source: Source) -> list[str]:
    """The files the step_ladder's partial_files part names (a time resting on a partial file's points)."""
    out: list[str] = []
    for part in source.parts:
        files = part.params.get("files") if part.key == "source_detail.partial_files" else None
        if isinstance(files, tuple):
            out.extend(str(f) for f in files)
    return out


def display_path(path: str) -> str:
    """A result file's path relative to the project when it lies inside it (portable plans and reports)."""
    from pathlib import Path

    from planner.inputs.userdata import PROJECT_ROOT
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def plan_to_dict(plan: Plan, inputs_profiles: list[str] | None = None) -> dict:
    r = plan.recommendation
    return {
        "schema": SCHEMA,
        "trainplan_version": __version__,
        "scenario_name": plan.scenario_name,
        "stack": plan.stack,
        "stack_defaulted": plan.stack_defaulted,
        "inputs": {"profiles": list(inputs_profiles or plan.profiles_used),
                   "result_files": [display_path(p) for p in plan.result_files_used]},
        "options": [option_to_dict(o) for o in plan.options],
        "recommendation": {"primary": r.primary, "runner_up": r.runner_up,
                           "cheapest_within_deadline": r.cheapest_within_deadline,
                           "fastest_within_budget": r.fastest_within_budget, "reason": parts_text(r.reason, "en"),
                           "primary_risks": list(r.primary_risks), "deadline_confidence": r.deadline_confidence,
                           "set_aside": r.set_aside, "set_aside_risks": list(r.set_aside_risks),
                           "fallback": r.fallback},
        "advice": [english(a) for a in plan.advice],
        "assumptions": [english(a) for a in plan.assumptions],
        "warnings": [english(w) for w in plan.warnings],
    }


def plan_to_json(plan: Plan) -> str:
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False, allow_nan=False)
