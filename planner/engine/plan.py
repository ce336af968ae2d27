"""Build a Plan: every GPU × count × precision option with memory fit, step time, convergence and cost, and the
recommendation. The decisions live in their own rooms: context.py (what a plan shares), option_memory.py (the
micro-batch and its memory), step_ladder.py (the step time), cost.py (the bill), advice.py (assumptions, advice,
warnings), recommend.py (the pick)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from planner.engine import advice, cost, degrade, memo
from planner.engine.context import PlanContext, gpu_ids, model_flops_per_sample, model_label, plan_context
from planner.engine.estimates import CostEstimate, Plan, PlanOption, ScalingEstimate, StepEstimate, Throughput
from planner.engine.notes import PLAN_LEVEL_NOTE_KEYS, Note
from planner.engine.option import OptionPlan
from planner.engine.option_memory import option_memory
from planner.engine.recommend import cost_deadline_hours, recommend
from planner.engine.stack import planned_stack
from planner.engine.step_ladder import step_for
from planner.engine.throughput import SEQUENCE_FAMILIES, option_throughput
from planner.inputs.errors import CannotEstimate, InputError
from planner.inputs.folders import Inputs
from planner.inputs.profiles import GpuProfile
from planner.inputs.quotes import PriceQuote
from planner.inputs.scenario import Constraints, Pricing, Scenario, TrainingSetup
from planner.vocab import GIB


def _loaded_quotes(inputs: Inputs) -> list[PriceQuote]:
    """Every loaded price quote: the profiles' (catalog snapshots included) and the user's overrides."""
    return [*(q for p in inputs.profiles.values() for q in p.prices),
            *(q for qs in inputs.price_overrides.values() for q in qs)]


def build_plan(scenario: Scenario, inputs: Inputs, today: dt.date | None = None, source: str = "<scenario>") -> Plan:
    """Plan every option of the scenario. Bad input raises InputError; infeasible options carry their numbers."""
    today = today or dt.date.today()
    ids = gpu_ids(scenario, inputs, source)
    ctx = plan_context(scenario, inputs, today, source)
    options: list[PlanOption] = []
    for gpu_id in ids:
        gpu = inputs.profiles[gpu_id]
        for precision in scenario.training.precisions:
            for n in scenario.hardware.gpu_counts:
                try:
                    options.append(_option(ctx, gpu, n, precision))
                except CannotEstimate as exc:
                    raise InputError(source, exc.field, model_label(scenario), exc.missing) from None
    rec = recommend(options, scenario.constraints, today)
    warnings: list[Note | str] = [*inputs.problems, *advice.plan_warnings(scenario, options, today)]
    quotes = _loaded_quotes(inputs)
    for unknown in (advice.unknown_provider_warning(scenario.pricing, {q.provider for q in quotes}),
                    advice.unknown_regions_warning(scenario.pricing, {q.region for q in quotes if q.region})):
        if unknown:
            warnings.append(unknown)
    rows = ctx.work.dataset_rows if ctx.work else scenario.workload.dataset_samples
    if (over := advice.batch_over_dataset_warning(scenario.training.global_batch, rows, ctx.conv)) is not None:
        warnings.append(over)
    stack = planned_stack(scenario.training.stack, ctx.model.family)
    return Plan(
        scenario_name=scenario.name,
        options=tuple(options),
        recommendation=rec,
        assumptions=tuple(advice.assumptions(scenario, ctx.model, ctx.conv, ctx.idx))
        + (ctx.work.notes if ctx.work else ()),
        warnings=tuple(dict.fromkeys(warnings)),
        profiles_used=tuple(ids),
        result_files_used=tuple(sorted(ctx.idx.files_used)),
        advice=advice.batch_advice(scenario, ctx.conv, rows),
        model=ctx.model,
        convergence=ctx.conv,
        trainable_params=ctx.facts.trainable,
        stack=stack.stack,
        stack_defaulted=stack.defaulted,
    )


def _option(ctx: PlanContext, gpu: GpuProfile, n: int, precision: str) -> PlanOption:
    scenario, t = ctx.scenario, ctx.scenario.training
    base = PlanOption(id=OptionPlan(gpu=gpu, n_gpus=n, precision=precision).id, gpu_id=gpu.id, gpu_name=gpu.name, n_gpus=n,
                      precision=precision, fits=False, micro_batch=None, grad_accum=None, memory=None, step=None,
                      convergence=ctx.conv, cost=None, scaling=None, checkpoint_gib=None)
    if not gpu.supports(precision):
        return replace(base, notes=(Note("unsupported_precision", precision=precision, gpu=gpu.name),))
    fit = option_memory(ctx.inputs, scenario.model, t, workspace_gib=scenario.hardware.workspace_gib, gpu_id=gpu.id,
                        n_gpus=n, precision=precision, source=ctx.source)
    micro, accum, mem = fit.micro_batch, fit.grad_accum, fit.memory
    base = replace(base, micro_batch=micro, grad_accum=accum, memory=mem, checkpoint_gib=fit.checkpoint_gib)
    notes = list(mem.notes)
    hw = scenario.hardware
    if mem.fits is False:
        notes.insert(0, Note("does_not_fit", need=round(mem.total / GIB, 1), micro=micro,
                             usable=round(mem.usable / GIB, 1), capacity=round(mem.capacity / GIB, 1)))
        # Degrade, never refuse (issue 33): plan the cheapest change in time that fits, and say what changed.
        pw = degrade.planned_with(ctx.inputs, scenario.model, t, hw, gpu_id=gpu.id, n_gpus=n, precision=precision,
                                  step_time_s=_step_timer(ctx, gpu.id, n, precision), source=ctx.source)
        if pw is None:
            return replace(base, notes=tuple(notes))
        notes.insert(1, Note("planned_with", changes=pw.change_notes(), gib=round(pw.memory.total / GIB, 1),
                             capacity=round(pw.memory.capacity / GIB, 1)))
        notes.extend(x for x in pw.memory.notes if x not in notes)
        t, micro, accum = pw.training, pw.micro_batch, pw.grad_accum
        base = replace(base, micro_batch=micro, grad_accum=accum, checkpoint_gib=pw.checkpoint_gib, planned_with=pw)
    if mem.fits is None and not t.micro_batch:
        notes.append(Note("micro_batch_fit_unknown", micro=micro))
    # The rental first: its instances decide which links the gradients cross, so time and price assume the same
    # hardware (issue 18). On-prem and unpriced options are timed on the scenario's hardware.
    billings: tuple[cost.Billing | None, ...] = (None,)
    no_quote: Note | None = None
    if scenario.pricing.tier != "on_prem":
        billings, no_quote = _rentals(ctx.inputs, scenario.pricing, gpu_id=gpu.id, n_gpus=n,
                                      gpus_per_node=hw.gpus_per_node, today=ctx.today)
    else:  # no cited purchase price and no override: unpriced, with a note saying how to price it
        no_quote = cost.on_prem_unpriced(gpu, scenario.pricing.on_prem)
    option = OptionPlan(gpu=gpu, n_gpus=n, precision=precision, micro_batch=micro, grad_accum=accum)
    power_w = ctx.idx.power_w.get((gpu.id, precision))
    overrides = ctx.inputs.price_overrides.get(gpu.id, [])

    def priced(billing: cost.Billing | None) -> tuple[StepEstimate, ScalingEstimate | None, CostEstimate]:
        timing_hw = hw
        if billing is not None:
            timing_hw = replace(hw, gpus_per_node=billing.gpus_per_node,
                                inter_node_gb_per_s=billing.inter_node_gb_per_s or hw.inter_node_gb_per_s)
        timed = step_for(ctx.inputs, scenario.model, t, timing_hw, time_factor=ctx.time_factor, gpu_id=gpu.id,
                         n_gpus=n, precision=precision, micro_batch=micro, grad_accum=accum,
                         source=ctx.source)
        step = timed.step
        if no_quote is None:
            c = cost.estimate_cost(option, step, ctx.conv, scenario.pricing, scenario.workload, mean_power_w=power_w,
                                   overrides=overrides, today=ctx.today, gpus_per_node=hw.gpus_per_node,
                                   billing=billing, storage=ctx.inputs.storage)
        else:
            c = cost.estimate_time_only(option, step, ctx.conv, scenario.pricing, scenario.workload,
                                        mean_power_w=power_w, reason=no_quote)
        return step, timed.scaling, c

    # Each candidate rental is timed on its own hardware and the cheapest in total is billed (ties: the sooner):
    # by the hourly rate alone, slow 1-GPU rentals would win over a dearer node that finishes first.
    timed = [(b, *priced(b)) for b in billings]
    billing, step, scale, c = min(timed, key=lambda t: _rental_preference(t[3], scenario.constraints))
    first = timed[0]
    if billing is not None and first[0] is not None and billing is not first[0]:
        notes.append(Note("billed_by_total", provider=billing.quote.provider, instance=billing.quote.instance,
                          usd=c.usd, other_provider=first[0].quote.provider,
                          other=first[0].quote.instance, other_usd=first[3].usd))
    # Unpriced: timed on the scenario's own nodes; a job no rental can hold has no topology.
    topology = (billing.topology if billing else None if no_quote is not None and no_quote.key == "no_rentable_topology"
                else cost.topology_for(n, hw.gpus_per_node, hw.gpus_per_node))
    notes.extend(step.notes)
    if precision == "fp16":
        notes.append(Note("fp16_loss_scaling"))
    notes.extend(n for n in c.notes if n.key not in PLAN_LEVEL_NOTE_KEYS)
    return replace(base, fits=mem.fits, step=step, cost=c, scaling=scale, topology=topology,
                   notes=tuple(dict.fromkeys(notes)), throughput=_throughput(ctx, gpu, n, precision, step))


def _step_timer(ctx: PlanContext, gpu_id: str, n: int, precision: str) -> degrade.StepTimer:
    """Seconds per optimizer step of a changed setup on the scenario's hardware (degrade.planned_with compares them)."""
    def step_time_s(setup: TrainingSetup, micro_batch: int, grad_accum: int) -> float:
        return step_for(ctx.inputs, ctx.scenario.model, setup, ctx.scenario.hardware, time_factor=ctx.time_factor,
                        gpu_id=gpu_id, n_gpus=n, precision=precision, micro_batch=micro_batch,
                        grad_accum=grad_accum, source=ctx.source).step.step_time_s
    return step_time_s


def _throughput(ctx: PlanContext, gpu: GpuProfile, n: int, precision: str, step: StepEstimate) -> Throughput:
    """The planned step time per GPU in a log's units: tokens/s for sequence models (the tokens the plan counts
    per training row: the sequence length, or the mean per example unpacked), and MFU at the precision's peak."""
    model = ctx.model
    tokens = None
    if model.family in SEQUENCE_FAMILIES and model.seq_len:
        tokens = ctx.work.tokens_per_row if ctx.work is not None else float(model.seq_len)
    return option_throughput(step.samples_per_s, n, model_flops_per_sample=model_flops_per_sample(ctx),
                             tokens_per_sample=tokens, peak_tflops=gpu.peak_tflops_for(precision))


@memo.cached
def _rentals(inputs: Inputs, pricing: Pricing, *, gpu_id: str, n_gpus: int, gpus_per_node: int,
             today: dt.date) -> tuple[tuple[cost.Billing | None, ...], Note | None]:
    """The rentals that can run n of this GPU (cost.billing_candidates), or none and the note saying why."""
    gpu = inputs.profiles[gpu_id]
    try:
        return tuple(cost.billing_candidates(gpu.prices, pricing, inputs.price_overrides.get(gpu.id, []), today,
                                            n_gpus=n_gpus, gpus_per_node=gpus_per_node, networks=inputs.networks,
                                            gpu_name=gpu.name, gpu_id=gpu.id)), None
    except cost.NoQuoteError as exc:
        return (None,), exc.note


def _rental_preference(c: CostEstimate, constraints: Constraints) -> tuple[bool, float, float]:
    """Among rentals of one option: those that meet the deadline at the scenario's confidence first (a cheaper but
    slower rental must not cost the option its deadline), then the lowest total, then the sooner."""
    misses = constraints.deadline_hours is not None and cost_deadline_hours(c, constraints.deadline_confidence) > \
        constraints.deadline_hours
    return misses, c.usd, c.hours


