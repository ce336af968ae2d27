"""planner.present.compare: saved scenarios under $TRAINPLAN_HOME, side-by-side summary, the joint frontier, scaling rows."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from planner.engine.plan import build_plan
from planner.engine.recommend import costed
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file
from planner.inputs.userdata import DEFAULT_SCENARIO, SHIPPED_SCENARIOS_DIR
from planner.present import compare

TODAY = dt.date(2026, 11, 29)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


def _item(label, scenario, inputs):
    return compare.Compared(label, scenario, build_plan(scenario, inputs, today=TODAY))


def _narrow(s, gpus, counts=(1, 2, 4, 8), precisions=("bf16",), name=None):
    return dataclasses.replace(
        s, name=name or s.name, hardware=dataclasses.replace(s.hardware, gpus=tuple(gpus), gpu_counts=tuple(counts)),
        training=dataclasses.replace(s.training, precisions=tuple(precisions)))


# ---------------------------------------------------------------- saved scenarios

def test_save_list_load_round_trip(tmp_path):
    s = load_scenario_file(DEFAULT_SCENARIO)
    path = compare.save_scenario(s, "My ResNet plan")
    assert path.parent == tmp_path / "home" / "scenarios"
    assert path.name == "my-resnet-plan.yaml"
    saved, problems = compare.list_saved()
    assert problems == []
    assert [x.name for x in saved] == ["My ResNet plan"]
    back = load_scenario_file(saved[0].path)
    assert back == dataclasses.replace(s, name="My ResNet plan")


def test_saving_the_same_name_replaces_and_a_new_name_adds():
    s = load_scenario_file(DEFAULT_SCENARIO)
    first = compare.save_scenario(s, "A")
    again = compare.save_scenario(dataclasses.replace(s, locale="es-AR"), "A")
    assert first == again
    assert load_scenario_file(first).locale == "es-AR"
    compare.save_scenario(s, "B")
    assert sorted(x.name for x in compare.list_saved()[0]) == ["A", "B"]


@pytest.mark.parametrize("name", ["", "   ", "x" * 121])
def test_a_bad_name_is_refused_and_nothing_is_written(name, tmp_path):
    with pytest.raises(InputError) as e:
        compare.save_scenario(load_scenario_file(DEFAULT_SCENARIO), name)
    assert e.value.field == "name"
    assert not (tmp_path / "home" / "scenarios").exists()


def test_a_bad_saved_file_is_a_problem_and_never_hides_the_others(tmp_path):
    compare.save_scenario(load_scenario_file(DEFAULT_SCENARIO), "Good")
    (tmp_path / "home" / "scenarios" / "broken.yaml").write_text("schema: trainplan.scenario/1\nmodel: {}\n")
    saved, problems = compare.list_saved()
    assert [x.name for x in saved] == ["Good"]
    assert len(problems) == 1 and "broken.yaml" in problems[0]


def test_delete_removes_only_saved_scenarios(tmp_path):
    path = compare.save_scenario(load_scenario_file(DEFAULT_SCENARIO), "Gone")
    with pytest.raises(InputError):
        compare.delete_saved(DEFAULT_SCENARIO)  # a shipped example is not a saved scenario
    assert DEFAULT_SCENARIO.exists()
    compare.delete_saved(path)
    assert compare.list_saved() == ([], [])


def test_unique_labels():
    assert compare.unique_labels(["a", "b", "a", "a"]) == ["a", "b", "a (2)", "a (3)"]


# ---------------------------------------------------------------- side by side

def test_summary_is_the_recommendation_in_numbers(inputs):
    s = load_scenario_file(DEFAULT_SCENARIO)
    item = _item("default", s, inputs)
    row = compare.summarize(item)
    primary = item.plan.option(item.plan.recommendation.primary)
    assert row.primary == primary
    assert row.hours == primary.cost.hours and row.cost_usd == primary.cost.usd
    assert row.gpu_hours == primary.cost.gpu_hours
    assert row.n_options == len(item.plan.options)
    assert row.n_fit == sum(o.fits for o in item.plan.options)
    assert row.within_deadline is (primary.cost.hours <= s.constraints.deadline_hours)
    assert row.within_budget is (primary.cost.usd <= s.constraints.budget_usd)


def test_summary_when_nothing_fits(inputs):
    s = load_scenario_file(SHIPPED_SCENARIOS_DIR / "llama7b-full-finetune.yaml")
    s = _narrow(s, ["t4-16gb"], counts=(1,), precisions=("fp16",))
    row = compare.summarize(_item("tiny", s, inputs))
    assert row.n_fit == 0 and row.primary is None and row.hours is None and row.within_budget is None


# ---------------------------------------------------------------- the frontier

def test_each_scenario_has_its_own_frontier_of_non_dominated_options(inputs):
    """One frontier per scenario (issue 19): an option is on it when no option of the SAME scenario beats it."""
    base = load_scenario_file(DEFAULT_SCENARIO)
    a = _item("A", _narrow(base, ["h100-sxm-80gb", "a100-sxm-80gb", "l4-24gb"], precisions=("bf16", "fp32")), inputs)
    b = _item("B", _narrow(base, ["rtx4090-24gb", "l40s-48gb"], name="B"), inputs)
    points = compare.cost_time_points([a, b])
    pool = [(it.label, o) for it in (a, b) for o in costed(it.plan.options)]
    assert len(points) == len(pool)
    brute = {(label, o.id) for label, o in pool
             if not any(compare.dominated(o, other) for lab, other in pool if other is not o and lab == label)}
    assert {(p.label, p.option.id) for p in points if p.on_frontier} == brute
    front = compare.frontier(points)
    assert {p.label for p in front} == {"A", "B"}  # a cheaper scenario does not hide the other's frontier
    for label in ("A", "B"):
        mine = [p for p in front if p.label == label]
        assert [p.option.cost.hours for p in mine] == sorted(p.option.cost.hours for p in mine)
        # along a frontier, faster always costs more (exact ties aside)
        for x, y in zip(mine, mine[1:], strict=False):
            assert (x.option.cost.hours, x.option.cost.usd) == (y.option.cost.hours, y.option.cost.usd) or (
                x.option.cost.usd > y.option.cost.usd)
    assert [p.label for p in front] == sorted(p.label for p in front)  # scenario by scenario
    assert sum(p.recommended for p in points) == 2


def test_scenarios_of_different_models_each_draw_a_frontier_line(inputs):
    resnet = _item("ResNet", _narrow(load_scenario_file(DEFAULT_SCENARIO), ["h100-sxm-80gb", "l4-24gb"]), inputs)
    gpt = _item("GPT", _narrow(load_scenario_file(SHIPPED_SCENARIOS_DIR / "gpt2-124m-10b-tokens.yaml"),
                               ["h100-sxm-80gb", "l4-24gb"], name="GPT"), inputs)
    points = compare.cost_time_points([resnet, gpt])
    assert {p.label for p in points if p.on_frontier} == {"ResNet", "GPT"}
    spec = compare.cost_time_chart(points, "en").to_dict()
    lines = [layer for layer in spec["layer"] if (layer.get("mark") or {}).get("type") == "line"]
    assert lines and lines[0]["encoding"]["detail"]["field"] == "scenario"


def test_chart_tooltips_carry_units_and_the_readers_number_format(inputs):
    """Tooltips show '1.234,5 h' and 'US$1.234,56' in es-AR, never a raw 1234.5678 (issue 19)."""
    item = _item("A", _narrow(load_scenario_file(DEFAULT_SCENARIO), ["h100-sxm-80gb", "l4-24gb"]), inputs)
    points = compare.cost_time_points([item])
    spec = compare.cost_time_chart(points, "es-AR").to_dict()
    tips = [tip["field"] for layer in spec["layer"] for tip in layer.get("encoding", {}).get("tooltip", [])]
    assert "hours_text" in tips and "usd_text" in tips and "hours" not in tips and "usd" not in tips
    for v in _values(spec):
        assert v["hours_text"].endswith(" h") and "US$" in v["usd_text"]
    slow = max(_values(spec), key=lambda v: v["hours"])
    assert "," in slow["hours_text"] or slow["hours"] >= 100
    rows = compare.scaling_rows([item], "l4-24gb", "bf16")
    scaling = compare.scaling_chart(rows, "es-AR").to_dict()
    data = _values(scaling)
    assert data and all(d["efficiency_text"].endswith("%") and "US$" in d["usd_text"] for d in data)


def test_cost_time_chart_draws_every_point_and_the_frontier(inputs):
    item = _item("A", _narrow(load_scenario_file(DEFAULT_SCENARIO), ["h100-sxm-80gb", "l4-24gb"]), inputs)
    points = compare.cost_time_points([item])
    spec = compare.cost_time_chart(points, "es-AR").to_dict()
    values = _values(spec)
    assert len(values) == len(points)
    assert sum(v["frontier"] == "frontera de Pareto" for v in values) == len(compare.frontier(points))
    assert spec["config"]["locale"]["number"]["decimal"] == ","


def _values(spec):
    """The first inline data values in a Vega-Lite spec (top level or in a layer)."""
    if isinstance(spec, dict):
        if isinstance(spec.get("values"), list):
            return spec["values"]
        items = spec.values()
    elif isinstance(spec, list):
        items = spec
    else:
        return None
    for item in items:
        found = _values(item)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------- scaling

def test_scaling_rows_speedup_and_efficiency(inputs):
    s = _narrow(load_scenario_file(DEFAULT_SCENARIO), ["h100-sxm-80gb"], counts=(1, 2, 4, 8))
    item = _item("A", s, inputs)
    rows = compare.scaling_rows([item], "h100-sxm-80gb", "bf16")
    assert [r.n_gpus for r in rows] == [1, 2, 4, 8]
    one = rows[0]
    assert one.speedup == 1 and one.efficiency == 1
    for r in rows[1:]:
        assert r.speedup == pytest.approx(one.hours / r.hours)
        assert r.efficiency == pytest.approx(r.speedup / r.n_gpus)
        assert r.cost_ratio == pytest.approx(r.cost_usd / one.cost_usd)
        assert 0 < r.efficiency <= 1.0001
    [v] = compare.verdicts(rows)
    assert (v.n_small, v.n_large, v.speedup) == (1, 8, rows[-1].speedup)


def test_scaling_choices_and_default(inputs):
    s = _narrow(load_scenario_file(DEFAULT_SCENARIO), ["h100-sxm-80gb", "l4-24gb"], precisions=("bf16", "fp32"))
    item = _item("A", s, inputs)
    gpus, precisions = compare.scaling_choices([item])
    assert {g for g, _ in gpus} == {"h100-sxm-80gb", "l4-24gb"}
    assert set(precisions) == {"bf16", "fp32"}
    primary = item.plan.option(item.plan.recommendation.primary)
    assert compare.default_scaling_choice([item]) == (primary.gpu_id, primary.precision)
    spec = compare.scaling_chart(compare.scaling_rows([item], "l4-24gb", "bf16")).to_dict()
    assert len(spec["hconcat"]) == 3


def test_a_scenario_keeps_its_colour_in_both_charts(inputs):
    base = load_scenario_file(DEFAULT_SCENARIO)
    a = _item("A", _narrow(base, ["l4-24gb"]), inputs)
    b = _item("B", _narrow(base, ["h100-sxm-80gb"]), inputs)
    order = ["B", "A"]

    def scale(spec):
        found = []

        def walk(x):
            if isinstance(x, dict):
                if x.get("field") == "scenario" and "scale" in x:
                    found.append(x["scale"])
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(spec)
        return found[0]

    cost = scale(compare.cost_time_chart(compare.cost_time_points([a, b]), "en", order).to_dict())
    scaling = scale(compare.scaling_chart(compare.scaling_rows([a], "l4-24gb", "bf16"), "en", order).to_dict())
    assert cost == scaling == {"domain": order, "range": list(compare.SCENARIO_COLOURS[:2])}
