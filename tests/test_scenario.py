"""Scenario schema: every shipped scenario loads and round-trips; each bad input names its field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.inputs.errors import InputError
from planner.inputs.scenario import (
    dump_scenario_yaml,
    load_scenario_file,
    load_scenario_text,
    parse_scenario,
    scenario_to_dict,
)

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
KNOWN = {p.stem for p in (ROOT / "gpu_profiles").glob("*.yaml")}

BASE = {
    "schema": "trainplan.scenario/1",
    "name": "t",
    "model": {"name": "resnet50"},
    "training": {"global_batch": 256},
    "workload": {"dataset_samples": 1000, "epochs": 2},
    "hardware": {"gpu_counts": [1, 8]},
}


def test_the_required_scenarios_ship():
    names = {p.stem for p in SCENARIOS}
    assert {"resnet50-imagenet", "gpt2-124m-10b-tokens", "bert-base-finetune", "llama7b-full-finetune",
            "llama7b-qlora-24gb"} <= names


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_shipped_scenario_loads_and_round_trips(path):
    s = load_scenario_file(path, known_gpu_ids=KNOWN or None)
    again = load_scenario_text(dump_scenario_yaml(s), "dumped")
    assert again == s
    assert parse_scenario(scenario_to_dict(s)) == s


def test_defaults_are_filled():
    s = parse_scenario(BASE)
    assert s.training.micro_batch is None  # auto
    assert s.training.precisions == ("fp32", "tf32", "fp16", "bf16")
    assert s.pricing.tier == "on_demand" and s.pricing.currency == "USD"
    assert s.hardware.gpus is None  # all
    assert s.workload.early_stop_fraction == 1.0


def _with(path: str, value, base=BASE):
    d = copy.deepcopy(base)
    keys = path.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    if value is _DELETE:
        cur.pop(keys[-1], None)
    else:
        cur[keys[-1]] = value
    return d


_DELETE = object()

BAD_CASES = [
    ("unknown top key", _with("colour", "blue"), "colour", "no such key"),
    ("unknown nested key", _with("training.lr", 0.1), "training.lr", "no such key"),
    ("batch zero", _with("training.global_batch", 0), "training.global_batch", "between 1 and"),
    ("batch negative", _with("training.global_batch", -4), "training.global_batch", "between 1 and"),
    ("batch as text", _with("training.global_batch", "many"), "training.global_batch", "integer"),
    ("precision unknown", _with("training.precisions", ["fp64"]), "training.precisions[0]", "fp32"),
    ("optimizer unknown", _with("training.optimizer", "lion"), "training.optimizer", "adamw"),
    # every choice listed, the first and the last of planner.vocab.SOFTWARE_STACKS among them
    ("stack unknown", _with("training.stack", "jax"), "training.stack",
     "one of pytorch_eager, torch_compile, hf_trainer_sdpa, hf_trainer_fa2, lightning, llm_recipe, fused_kernels, "
     "deepspeed, megatron, hand_fused, vendor_container"),
    ("no workload amount", _with("workload.epochs", _DELETE), "workload.epochs", "exactly one of"),
    ("two workload amounts", _with("workload.tokens", 1e9), "workload.epochs", "exactly one of"),
    ("micro not dividing", _with("training.micro_batch", 48), "training.micro_batch", "divisor of the per-GPU batch"),
    ("global not splitting", _with("hardware.gpu_counts", [3]), "training.global_batch", "multiple of every GPU count"),
    ("negative price input", _with("pricing.exchange_rate", -1), "pricing.exchange_rate", "between 1e-6 and"),
    ("a rate with USD", _with("pricing.exchange_rate", 0.5), "pricing.exchange_rate", "1 with currency USD"),
    ("negative tax", _with("pricing.tax_rate", -0.1), "pricing.tax_rate", "between 0 and"),
    ("bad tier", _with("pricing.tier", "cheap"), "pricing.tier", "on_demand"),
    ("bad currency", _with("pricing.currency", "pesos"), "pricing.currency", "ISO 4217"),
    ("bad date", _with("pricing.exchange_rate_as_of", "last week"), "pricing.exchange_rate_as_of", "YYYY-MM-DD"),
    ("wrong schema", _with("schema", "trainplan.scenario/9"), "schema", "trainplan.scenario/1"),
    ("model missing", _with("model", _DELETE), "model", "required"),
    ("model empty", _with("model", {"mfu": 0.3}), "model.name", "model name"),
    ("heads not dividing", _with("model.transformer", {"layers": 2, "hidden": 100, "heads": 3, "seq_len": 8,
                                                      "vocab": 10}), "model.transformer.heads", "divisor"),
    ("deepspeed zero1", _with("training.state_layout", "deepspeed"), "training.sharding", "zero2 or zero3"),
    ("gpu count zero", _with("hardware.gpu_counts", [0]), "hardware.gpu_counts[0]", "integer between 1 and"),
    ("frozen all", _with("training.frozen_fraction", 1.0), "training.frozen_fraction", "below 1.0"),
    ("deadline negative", _with("constraints.deadline_hours", -5), "constraints.deadline_hours",
     "between 0.1 and 1e7"),
    ("one reference point", _with("workload", {"dataset_samples": 10, "reference_points": [{"global_batch": 8,
                                                                                            "steps": 100}]}),
     "workload.reference_points", "two or more"),
    ("point with both", _with("workload", {"reference_points": [{"global_batch": 8, "steps": 100, "epochs": 2},
                                                                {"global_batch": 16, "steps": 60}]}),
     "workload.reference_points[0].steps", "exactly one of"),
    ("epochs without dataset", _with("workload", {"epochs": 3}), "workload.dataset_samples", "dataset size"),
]


@pytest.mark.parametrize("case,data,field,expected", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_names_the_field(case, data, field, expected):
    with pytest.raises(InputError) as err:
        parse_scenario(data, "my.yaml")
    msg = str(err.value)
    assert msg.startswith("my.yaml: ")
    assert err.value.field == field, msg
    assert expected in msg, msg


def test_unknown_gpu_id_is_rejected_with_the_known_ones():
    data = _with("hardware.gpus", ["h100-sxm-80gb", "h900"])
    with pytest.raises(InputError) as err:
        parse_scenario(data, "s.yaml", known_gpu_ids={"h100-sxm-80gb", "a100-sxm-80gb"})
    assert err.value.field == "hardware.gpus[1]"
    assert "h900" in str(err.value) and "a100-sxm-80gb" in str(err.value)


def test_yaml_syntax_error_names_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("model:\n  name: [resnet50\n")
    with pytest.raises(InputError) as err:
        load_scenario_file(p)
    assert "broken.yaml" in str(err.value) and "line" in str(err.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="existing scenario file"):
        load_scenario_file(tmp_path / "nope.yaml")


def test_oversized_upload_is_rejected():
    with pytest.raises(InputError, match="at most 1 MiB"):
        load_scenario_text("name: x\n" + "# pad\n" * 200_000)


def test_exponent_without_dot_is_a_number():
    # YAML 1.1 reads 1e10 as a string; users write it, so the loader accepts it.
    s = load_scenario_text(yaml.safe_dump(_with("workload", {"tokens": "1e10"})) .replace("'1e10'", "1e10"))
    assert s.workload.tokens == 1e10


def _scalars():
    return st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=True),
                     st.text(max_size=8))


def _values():
    return st.recursive(_scalars(), lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=6)


FIELDS = ["name", "training.global_batch", "training.micro_batch", "training.precisions", "workload.epochs",
          "workload.tokens", "hardware.gpu_counts", "hardware.gpus", "pricing.tier", "pricing.spot",
          "model.transformer", "model.params", "constraints", "training.adapter", "workload.reference_points"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(FIELDS), _values()), max_size=4))
def test_generated_scenarios_never_crash_the_loader(mutations):
    data = copy.deepcopy(BASE)
    for path, value in mutations:
        data = _with(path, value, data)
    try:
        s = parse_scenario(data, "gen.yaml")
    except InputError as exc:
        assert str(exc).startswith("gen.yaml")
    else:
        assert parse_scenario(scenario_to_dict(s)) == s


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), _values(), max_size=5))
def test_arbitrary_mappings_give_a_clean_error(data):
    with pytest.raises(InputError):
        parse_scenario(data, "x.yaml")


def test_a_scenario_may_say_its_models_family_and_only_a_known_one():
    from planner.engine import steptime
    from planner.engine.models import resolve_model
    from planner.vocab import MODEL_FAMILIES

    assert set(MODEL_FAMILIES) == set(steptime.DEFAULT_MFU)  # one list of families, each with its default MFU
    text = ("schema: trainplan.scenario/1\nname: b\nmodel: {name: my_bert%s, params: 109484547, transformer: "
            "{layers: 12, hidden: 768, heads: 12, seq_len: 128, vocab: 30522, loss: sequence}}\n"
            "workload: {dataset_samples: 1000, epochs: 1}\ntraining: {global_batch: 32}\n")
    assert resolve_model(load_scenario_text(text % "").model).family == "decoder"  # a shape, nothing else known
    assert resolve_model(load_scenario_text(text % ", family: encoder").model).family == "encoder"
    with pytest.raises(InputError, match="family"):
        load_scenario_text(text % ", family: transformer")
