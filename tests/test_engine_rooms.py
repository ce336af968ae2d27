"""One room per engine decision (issue 31 c): plan.py assembles, cached parts are keyed by their own arguments, and
the Plan carries typed fields, not a dict read by string key."""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
from pathlib import Path

from planner.engine import memo
from planner.engine.estimates import Plan, ResolvedModel
from planner.engine.option_memory import option_memory
from planner.engine.plan import build_plan
from planner.engine.step_ladder import step_for
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "planner" / "engine"
DAY = dt.date(2026, 12, 1)


def test_plan_py_only_assembles():
    """The option loop and the recommendation; the step-time ladder, the context, the memory search and the advice
    live in their own modules (the issue's bound: about 400 lines; it was 889)."""
    lines = (ENGINE / "plan.py").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400, len(lines)
    tree = ast.parse("\n".join(lines))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert not defined & {"_micro_step", "_transferred", "_calibrated", "_context", "_assumptions",
                          "_largest_fitting"}, defined


def test_no_hand_written_memo_keys():
    """A cached part is a function decorated with memo.cached, keyed by exactly its arguments: no module builds
    a key tuple by hand for memo.memoized (a new input a part reads cannot be forgotten in its key)."""
    callers = []
    for path in sorted((ROOT / "planner").rglob("*.py")):
        if path == ENGINE / "memo.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "memoized":
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not callers, callers


def test_the_cache_key_is_the_argument_list():
    """Two calls with equal arguments share one entry; a changed argument is another entry (the cache can fail)."""
    inputs = load_inputs(include_user_data=False)
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml", list(inputs.profiles))
    memo.clear()
    kwargs = dict(workspace_gib=None, gpu_id="a100-sxm-80gb", n_gpus=1, precision="bf16")
    first = option_memory(inputs, s.model, s.training, **kwargs)
    size = memo.size(inputs)
    assert option_memory(inputs, s.model, s.training, **kwargs) is first
    assert memo.size(inputs) == size
    other = option_memory(inputs, s.model, s.training, **{**kwargs, "precision": "fp32"})
    assert other is not first and memo.size(inputs) > size
    step = dict(time_factor=1.0, gpu_id="a100-sxm-80gb", n_gpus=1, precision="bf16", micro_batch=first.micro_batch,
                grad_accum=first.grad_accum)
    one = step_for(inputs, s.model, s.training, s.hardware, **step)
    workers = dataclasses.replace(s.hardware, cpu_workers_per_gpu=1)
    assert step_for(inputs, s.model, s.training, s.hardware, **step) is one
    assert step_for(inputs, s.model, s.training, workers, **step) is not one


def test_the_plan_carries_typed_fields():
    """What the report and the recorded runs read of a plan is a field with a type, not Plan.extra['model']."""
    assert "extra" not in {f.name for f in dataclasses.fields(Plan)}
    inputs = load_inputs(include_user_data=False)
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml", list(inputs.profiles))
    plan = build_plan(s, inputs, today=DAY)
    assert isinstance(plan.model, ResolvedModel) and plan.model.name == "resnet50"
    assert plan.trainable_params == plan.model.params  # full training: every parameter trains
    assert plan.convergence is not None and plan.convergence.steps > 0
