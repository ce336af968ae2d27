"""Sentences that derive from the figures beside them (issue 35 e): a runner-up that misses the deadline at the
plan's confidence is said to, and "the fastest" is the argmin of hours at that confidence over the costed options,
or the sentence names the faster one. Properties over every shipped scenario, preset and golden variant, en and es."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from planner.engine.plan import build_plan
from planner.engine.recommend import costed, deadline_hours
from planner.inputs.scenario import parse_scenario, scenario_to_dict
from planner.present.charts import option_label
from planner.present.viewmodel import plan_view
from tests.golden.cases import CASES, ROOT, TODAY, _shipped_inputs

PRESETS = sorted((ROOT / "scenarios" / "presets").glob("*.yaml"))
MISSES = {"en": "The runner-up misses the", "es": "La alternativa no cumple el plazo"}
FASTEST = {"en": "is the fastest", "es": "es la más rápida"}


def _scenario(case_scenario: str, patch=None):  # type: ignore[no-untyped-def]
    inputs = _shipped_inputs()
    path = ROOT / "scenarios" / f"{case_scenario}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data = scenario_to_dict(parse_scenario(data, str(path)))
    if patch is not None:
        patch(data)
    return parse_scenario(data, str(path), known_gpu_ids=inputs.profiles)


SCENARIOS = [(c.name, c.scenario, c.patch) for c in CASES] + [
    (p.stem, f"presets/{p.stem}", None) for p in PRESETS]


def _check(scenario, lang: str) -> None:  # type: ignore[no-untyped-def]
    scenario = dataclasses.replace(scenario, locale=lang)
    plan = build_plan(scenario, _shipped_inputs(), today=TODAY)
    view = plan_view(plan, scenario, lang, today=TODAY)
    r, deadline = plan.recommendation, scenario.constraints.deadline_hours
    if view.primary is None:
        return
    runner = view.runner_up
    if runner is not None:
        late = deadline is not None and deadline_hours(runner, r.deadline_confidence) > deadline
        assert (MISSES[lang] in view.runner) == late, (view.runner, deadline)
    if r.fallback == "fastest":
        assert FASTEST[lang] in view.reason, view.reason
        best = min(costed(plan.options), key=lambda o: deadline_hours(o, r.deadline_confidence))
        mine = deadline_hours(view.primary, r.deadline_confidence)
        if deadline_hours(best, r.deadline_confidence) < mine:
            assert option_label(best) in view.reason, view.reason  # the faster one is named
        else:
            assert mine == deadline_hours(best, r.deadline_confidence)


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize(("name", "stem", "patch"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_runner_up_and_fastest_sentences_agree_with_the_numbers(name, stem, patch, lang):
    _check(_scenario(stem, patch), lang)


def _tiny_deadline(data: dict) -> None:
    data.setdefault("constraints", {})["deadline_hours"] = 0.1


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("stem", ["resnet50-imagenet", "gpt2-124m-10b-tokens", "bert-base-finetune"])
def test_when_nothing_is_on_time_the_fastest_is_the_fastest(stem, lang):
    scenario = _scenario(stem, _tiny_deadline)
    plan = build_plan(scenario, _shipped_inputs(), today=TODAY)
    assert plan.recommendation.fallback == "fastest"  # the case under test happens
    _check(scenario, lang)


# ---------------------------------------------------------------- the LR rule stops at the critical batch

@pytest.mark.parametrize(("optimizer", "exponent"), [("sgd", 1.0), ("adamw", 0.5)])
def test_the_lr_factor_stops_growing_at_the_critical_batch(optimizer, exponent):
    from planner.engine.convergence import lr_advice

    (scale, *_) = lr_advice(optimizer, 256, 8192, 2000)
    assert scale.key == "lr_scale_capped"
    assert scale.params["factor"] == pytest.approx((2000 / 256) ** exponent)  # not (8192 / 256) ** exponent
    (below, *_) = lr_advice(optimizer, 256, 1024, 2000)
    assert below.key == "lr_scale" and below.params["factor"] == pytest.approx(4 ** exponent)
    (both_past, *_) = lr_advice(optimizer, 4096, 8192, 2000)
    assert both_past.key == "lr_scale_capped" and both_past.params["factor"] == pytest.approx(1.0)


@pytest.mark.parametrize("lang", ["en", "es"])
def test_a_plan_past_its_critical_batch_caps_the_lr_it_advises(lang):
    b_crit = 4096

    def given_b_crit(data: dict) -> None:
        data["workload"]["b_crit"] = b_crit

    scenario = _scenario("gpt2-124m-10b-tokens", given_b_crit)
    past = dataclasses.replace(scenario, locale=lang, training=dataclasses.replace(
        scenario.training, global_batch=int(4 * b_crit), lr_reference_batch=max(1, int(b_crit / 8))))
    plan = build_plan(past, _shipped_inputs(), today=TODAY)
    (note,) = [n for n in plan.advice if n.key.startswith("lr_scale")]
    assert note.key == "lr_scale_capped" and note.params["b_crit"] == b_crit
    assert note.params["factor"] == pytest.approx(8.0 ** 0.5)  # AdamW, square root, from b_crit/8 to b_crit


# ---------------------------------------------------------------- a global batch larger than the dataset

@pytest.mark.parametrize(("lang", "words"), [("en", "larger than one epoch"), ("es", "mayor que una época")])
def test_a_batch_larger_than_the_dataset_is_warned_with_its_numbers_not_refused(lang, words):
    from planner.present.notes import render_note

    def tiny_dataset(data: dict) -> None:
        data["workload"]["dataset_samples"] = 100
        data["workload"].pop("dataset_gb", None)
        data["workload"].pop("data_location", None)

    scenario = _scenario("resnet50-imagenet", tiny_dataset)  # loads: a warning, not a refusal
    assert scenario.training.global_batch > 100
    plan = build_plan(scenario, _shipped_inputs(), today=TODAY)
    (warning,) = [w for w in plan.warnings if getattr(w, "key", "") == "batch_over_dataset"]
    epochs = scenario.workload.epochs
    assert warning.params["rows"] == 100 and warning.params["batch"] == scenario.training.global_batch
    assert warning.params["steps"] == -(-epochs * 100 // scenario.training.global_batch)  # ceil(epochs x D / B)
    said = render_note(warning, lang)
    assert words in said and str(warning.params["steps"]) in said
    normal = build_plan(_scenario("resnet50-imagenet"), _shipped_inputs(), today=TODAY)
    assert not [w for w in normal.warnings if getattr(w, "key", "") == "batch_over_dataset"]
