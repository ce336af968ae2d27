"""What a plan says besides its options: the assumptions it rests on, the batch advice and the plan-wide warnings."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence

from planner.engine import convergence, cost
from planner.engine.estimates import BORDERLINE_FRACTION, ConvergenceEstimate, PlanOption, ResolvedModel
from planner.engine.measurements import MeasurementIndex
from planner.engine.notes import Note
from planner.inputs.scenario import Pricing, Scenario
from planner.inputs.zoo_catalog import canonical_id


def assumptions(scenario: Scenario, model: ResolvedModel, conv: ConvergenceEstimate,
                idx: MeasurementIndex) -> list[Note]:
    out: list[Note] = [
        Note("assumption_model_flops", model=model.name, params=model.params, flops=model.flops_per_sample,
             source=model.flops_source) if model.flops_per_sample else
        Note("assumption_model", model=model.name, params=model.params),
        Note("assumption_steps", steps=round(conv.steps), source=conv.source),
        Note("assumption_memory_fit", band=round(BORDERLINE_FRACTION * 100)),
        Note("assumption_layout", layout=scenario.training.state_layout, optimizer=scenario.training.optimizer,
             impl=scenario.training.optimizer_impl),
    ]
    if scenario.pricing.exchange_rate != 1.0 or scenario.pricing.currency != "USD":
        as_of = scenario.pricing.exchange_rate_as_of
        if as_of:
            out.append(Note("assumption_rate_dated", rate=scenario.pricing.exchange_rate,
                            currency=scenario.pricing.currency, as_of=as_of.isoformat()))
        else:
            out.append(Note("assumption_rate_undated", rate=scenario.pricing.exchange_rate,
                            currency=scenario.pricing.currency))
    out.append(Note("energy_assumption", pct=round(100 * cost.tdp_fraction(scenario.pricing))))
    if scenario.model.name and canonical_id(scenario.model.name)[0] != scenario.model.name:
        out.append(Note("model_renamed", old=scenario.model.name, new=model.name))
    out.extend(conv.notes)
    out.extend(idx.skipped)
    return out


def lr_reference_batch(scenario: Scenario) -> int | None:
    """The batch the LR was tuned at: training.lr_reference_batch, else the reference run nearest the global batch."""
    t, w = scenario.training, scenario.workload
    if t.lr_reference_batch:
        return t.lr_reference_batch
    batches = [p.global_batch for p in w.reference_points]
    return min(batches, key=lambda b: (abs(math.log(b / t.global_batch)), b)) if batches else None


def batch_advice(scenario: Scenario, conv: ConvergenceEstimate, rows_per_epoch: int | None) -> tuple[Note, ...]:
    """The seeds' checklist when the batch moves from where the LR was tuned: the LR rule, its warm-up, the
    noise-scale optimum, and the critical-batch warning (convergence.lr_advice; docs/methods.md#convergence)."""
    t = scenario.training
    ref = lr_reference_batch(scenario)
    out: list[Note] = []
    if ref is not None and ref != t.global_batch:
        out.extend(convergence.lr_advice(t.optimizer, ref, t.global_batch, conv.b_crit,
                                         samples_per_epoch=rows_per_epoch))
    out.extend(n for n in conv.notes if n.key == "past_b_crit")
    return tuple(out)


def batch_over_dataset_warning(global_batch: int, rows_per_epoch: int | None,
                               conv: ConvergenceEstimate) -> Note | None:
    """A warning, not a refusal (files that load today keep loading), when one global batch holds more samples than
    an epoch has (issue 35 e): each step then takes more than the whole dataset, and the plan's steps say so."""
    if not rows_per_epoch or global_batch <= rows_per_epoch:
        return None
    return Note("batch_over_dataset", batch=global_batch, rows=rows_per_epoch, steps=round(conv.steps),
                epochs=round(conv.epochs, 3) if conv.epochs is not None else "?")


def plan_warnings(scenario: Scenario, options: Sequence[PlanOption], today: dt.date) -> list[Note]:
    out: list[Note] = []
    w = cost.undated_rate_warning(scenario.pricing)
    if w:
        out.append(w)
    if options and not any(o.fits for o in options):
        out.append(Note("no_option_fits_known") if any(o.fits is None for o in options) else Note("no_option_fits"))
    return out


def unknown_provider_warning(pricing: Pricing, known_providers: Iterable[str]) -> Note | None:
    """A warning, never a refusal, when pricing.provider is none of the loaded quotes' providers (profiles, catalog
    snapshots, price overrides): likely a misspelling here, yet the same scenario must stay valid on a machine whose
    profiles or overrides have that provider. None for "cheapest", on-prem (no provider bills it) or a known one."""
    if pricing.provider == "cheapest" or pricing.tier == "on_prem":
        return None
    known = sorted({p.lower() for p in known_providers})
    if pricing.provider.lower() in known:
        return None
    return Note("provider_unknown", provider=pricing.provider, known=", ".join(known))


def unknown_regions_warning(pricing: Pricing, known_regions: Iterable[str]) -> Note | None:
    """A warning, never a refusal, naming the pricing.regions no loaded quote is in (a misspelling here, or a region
    only another machine's profiles or overrides have); None when every one is known, or none is given."""
    if not pricing.regions or pricing.tier == "on_prem":
        return None
    known = sorted({r.strip() for r in known_regions if r and r.strip()}, key=str.lower)
    lowered = {r.lower() for r in known}
    unknown = [r for r in pricing.regions if r.strip().lower() not in lowered]
    if not unknown:
        return None
    return Note("regions_unknown", regions=", ".join(unknown), known=", ".join(known))
