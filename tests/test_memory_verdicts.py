"""Issue 33, memory that never refuses a run that ran: one verdict with a band (fits | borderline | does_not_fit)
and, when the scenario's configuration does not fit, the cheapest change in time that fits, planned and priced."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.engine.degrade import variants
from planner.engine.estimates import BORDERLINE_FRACTION
from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import TrainingSetup, parse_scenario
from planner.present.planjson import plan_to_dict
from planner.present.viewmodel import plan_view
from planner.vocab import GIB
from tests.notes_support import english

TODAY = dt.date(2026, 12, 2)


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


def _scenario(*, micro: int | None, gpus: list[str], counts: list[int], **training) -> dict:
    return {"schema": "trainplan.scenario/1", "name": "7B full fine-tune at a fixed micro-batch",
            "model": {"name": "llama2_7b"},
            "training": {"precisions": ["bf16"], "global_batch": 64, "micro_batch": micro if micro else "auto",
                         "optimizer": "adamw", **training},
            "workload": {"dataset_samples": 10000, "epochs": 1},
            "hardware": {"gpus": gpus, "gpu_counts": counts}}


def test_a_fixed_micro_batch_that_does_not_fit_is_planned_with_the_cheapest_change(inputs):
    scenario = parse_scenario(_scenario(micro=8, gpus=["h100-sxm-80gb"], counts=[8]))
    plan = build_plan(scenario, inputs, today=TODAY)
    (o,) = plan.options
    assert o.fits is False and o.memory.verdict == "does_not_fit" and o.memory.total > o.memory.capacity
    pw = o.planned_with
    assert pw is not None and pw.memory.fits and pw.memory.total <= pw.memory.capacity
    assert o.step is not None and o.cost is not None and o.cost.usd > 0, "degrade, never refuse: timed and priced"
    assert o.micro_batch == pw.micro_batch and o.grad_accum == pw.grad_accum
    assert pw.micro_batch * pw.grad_accum * 8 == 64
    assert "optimizer_state_bits" not in pw.changed, "8-bit states change the optimizer: only when nothing else fits"
    assert plan.recommendation.primary == o.id, "a planned option may be recommended"
    keys = [n.key for n in o.notes]
    assert keys[:2] == ["does_not_fit", "planned_with"]
    assert "planned with" in english(o.notes[1]) and "the time and cost are for that configuration" in \
        english(o.notes[1])
    row = plan_to_dict(plan)["options"][0]
    assert row["fits"] is False and row["verdict"] == "does_not_fit" and row["fit_margin_gib"] < 0
    assert row["planned_with"]["changed"] == list(pw.changed)
    assert row["planned_with"]["verdict"] in ("fits", "borderline") and row["planned_with"]["offload"] is False
    assert row["hours"] is not None and row["cost_usd"] is not None
    for locale, words in (("en", "Does not fit as given"), ("es", "No cabe tal como está dada")):
        view = plan_view(plan, scenario, locale, TODAY)
        assert view.degraded.startswith(words) and view.degraded in view.summary


def test_the_change_is_the_cheapest_in_step_time(inputs):
    """Every other change that fits is no faster than the one planned (same global batch, same GPUs)."""
    from planner.engine.option_memory import option_memory
    from planner.engine.step_ladder import step_for
    scenario = parse_scenario(_scenario(micro=8, gpus=["a100-sxm-80gb"], counts=[8]))
    (o,) = build_plan(scenario, inputs, today=TODAY).options
    chosen = o.step.step_time_s
    assert o.planned_with is not None and o.planned_with.memory.verdict == "fits"
    for setup, changed in variants(scenario.training, 8):
        if "optimizer_state_bits" in changed:
            continue
        fit = option_memory(inputs, scenario.model, setup, workspace_gib=None, gpu_id="a100-sxm-80gb", n_gpus=8,
                            precision="bf16")
        if fit.memory.verdict != "fits":
            continue
        other = step_for(inputs, scenario.model, setup, scenario.hardware, time_factor=1.0, gpu_id="a100-sxm-80gb",
                         n_gpus=8, precision="bf16", micro_batch=fit.micro_batch, grad_accum=fit.grad_accum)
        assert other.step.step_time_s >= chosen * (1 - 1e-9), (changed, other.step.step_time_s, chosen)


def test_nothing_that_fits_is_still_refused_with_its_numbers(inputs):
    (o,) = build_plan(parse_scenario(_scenario(micro=8, gpus=["rtx4090-24gb"], counts=[1])), inputs,
                      today=TODAY).options
    assert o.fits is False and o.planned_with is None and o.step is None and o.cost is None
    assert o.notes[0].key == "does_not_fit"


def test_an_option_that_fits_as_given_has_no_change(inputs):
    plan = build_plan(parse_scenario(_scenario(micro=1, gpus=["h100-sxm-80gb"], counts=[8], sharding="zero3",
                                               activation_checkpointing=True)), inputs, today=TODAY)
    (o,) = plan.options
    assert o.fits and o.planned_with is None and plan_to_dict(plan)["options"][0]["planned_with"] is None
    assert "planned_with" not in [n.key for n in o.notes]


def test_variants_only_add_memory_savings():
    t = TrainingSetup(global_batch=64, micro_batch=8, optimizer="adamw", sharding="zero1")
    seen = list(variants(t, 8))
    assert seen and all(changed for _, changed in seen)
    for setup, changed in seen:
        assert setup.activation_checkpointing or "activation_checkpointing" not in changed
        assert setup.sharding in ("zero1", "zero2", "zero3")
        assert setup.optimizer in ("adamw", "adam8bit")
    assert not list(variants(TrainingSetup(global_batch=8, activation_checkpointing=True, optimizer="sgd"), 1))


@pytest.mark.parametrize(("total_gib", "verdict"), [(70.0, "fits"), (74.0, "borderline"), (80.0, "borderline"),
                                                     (86.0, "borderline"), (87.0, "does_not_fit")])
def test_the_verdict_band_is_the_held_out_error_on_either_side(total_gib, verdict):
    from planner.engine.estimates import MemoryEstimate
    m = MemoryEstimate(weights=total_gib * GIB, grads=0, optimizer=0, activations=0, transients=0, workspace=0,
                       context=0, nccl=0, capacity=80 * GIB)
    assert BORDERLINE_FRACTION == 0.08
    assert m.verdict == verdict
    assert m.fits == (total_gib <= 80.0)
    assert m.fit_margin_gib == pytest.approx(80.0 - total_gib)
