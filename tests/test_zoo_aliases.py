"""Old zoo ids (planner.inputs.zoo_catalog.ALIASES): `llama` now means `llama_60m`, and keeps working in bench, the
catalog lookup and the shipped scenarios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import zoo
from planner.inputs import zoo_catalog
from planner.inputs.zoo_catalog import ALIASES, canonical_id, load_catalog, lookup

ROOT = Path(__file__).resolve().parents[1]


def test_the_alias_table():
    assert ALIASES == {"llama": "llama_60m"}
    assert zoo.ALIASES is ALIASES  # one table: bench uses the planner's
    for old, new in ALIASES.items():
        assert old not in zoo.list_models() and new in zoo.list_models()
        assert old not in load_catalog()


def test_canonical_id_says_what_the_old_id_means():
    assert canonical_id("llama") == (
        "llama_60m",
        "model 'llama' is now called 'llama_60m' (the 60M-parameter toy LLaMA-style decoder); 'llama' still works",
    )
    assert canonical_id("llama_60m") == ("llama_60m", None)
    assert canonical_id("llama2_7b") == ("llama2_7b", None)
    assert canonical_id("no_such_model") == ("no_such_model", None)  # existence is the caller's question


def test_every_alias_has_a_one_sentence_message():
    for old in ALIASES:
        _, message = canonical_id(old)
        assert message and message.count(";") == 1 and "\n" not in message and old in message


def test_the_60m_in_the_message_is_true():
    assert 59_500_000 < zoo.describe("llama_60m").params < 60_500_000


def test_bench_build_and_describe_take_the_alias():
    entry = zoo.describe("llama")
    assert entry == zoo.describe("llama_60m") and entry.id == "llama_60m"
    assert zoo.describe("llama", preset="7b") == zoo.describe("llama_60m", preset="7b")
    workload = zoo.build("llama", seq_len=8, device="meta")
    assert sum(p.numel() for p in workload.model.parameters()) == entry.params
    assert zoo.resolve_id("llama") == "llama_60m" and zoo.resolve_id("gpt2") == "gpt2"


def test_unknown_model_still_lists_the_valid_ids_and_the_old_names():
    with pytest.raises(zoo.UnknownModelError) as info:
        zoo.describe("llama2")
    message = str(info.value)
    assert "'llama2'" in message and "llama_60m" in message and "qwen2_5_7b" in message
    assert "llama (now llama_60m)" in message
    with pytest.raises(zoo.UnknownModelError):
        zoo.resolve_id("LLAMA")  # ids are exact


def test_catalog_lookup_takes_ids_and_aliases():
    catalog = load_catalog()
    assert lookup(catalog, "llama") is catalog["llama_60m"]
    assert lookup(catalog, "llama2_7b") is catalog["llama2_7b"]
    assert lookup(catalog, "gpt3") is None
    assert lookup(catalog, "") is None and lookup(catalog, None) is None


def test_lookup_is_torch_free():
    code = ("import sys; from planner.inputs.zoo_catalog import load_catalog, lookup; "
            "print(lookup(load_catalog(), 'llama')['id']); assert 'torch' not in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "llama_60m"


def test_the_catalog_module_names_only_real_ids():
    entries = json.loads(zoo_catalog.CATALOG_PATH.read_text(encoding="utf-8"))
    assert [e["id"] for e in entries] == zoo.list_models()


@pytest.mark.slow
def test_bench_cli_list_and_trace_take_the_old_id():
    """`--model llama` (saved commands and links) still runs: the trace CLI builds it on the meta device."""
    proc = subprocess.run([sys.executable, "-m", "bench", "trace", "--model", "llama", "--seq-len", "16",
                           "--precision", "fp32", "--batch", "1", "--out", "-"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert doc["model"]["params"] == zoo.describe("llama_60m").params


@pytest.mark.parametrize("scenario", ["llama7b-full-finetune", "llama7b-qlora-24gb"])
def test_shipped_7b_scenarios_name_llama2_7b_and_match_its_shape(scenario):
    from planner.inputs.loader import SCENARIO, load_file

    model = load_file(ROOT / "scenarios" / f"{scenario}.yaml", SCENARIO)["model"]
    entry = load_catalog()[model["name"]]
    assert model["name"] == "llama2_7b"
    assert model["params"] == entry["params"] and model["largest_layer_params"] == entry["largest_layer_params"]
    # the architecture is the preset's; seq_len is the scenario's training context (2048), not a model property
    # (kv_heads, tie, dropout and norm are not typed there: the planner takes them from this entry, the same shape)
    arch = {k: v for k, v in entry["transformer"].items()
            if k not in ("seq_len", "kv_heads", "tie_embeddings", "dropout", "norm")}
    assert {k: v for k, v in model["transformer"].items() if k != "seq_len"} == arch
    assert entry["transformer"]["kv_heads"] == entry["transformer"]["heads"]  # plain multi-head, as the shape says
    assert entry["transformer"]["tie_embeddings"] is False  # SwiGLU's untied default, as the planner assumes


def test_a_scenario_naming_the_old_id_plans_the_new_one_and_says_so():
    import datetime as dt

    from planner.engine.plan import build_plan
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import parse_scenario
    from planner.present.notes import english

    scenario = parse_scenario({
        "schema": "trainplan.scenario/1", "name": "old id", "model": {"name": "llama"},
        "training": {"global_batch": 32, "precisions": ["bf16"]}, "workload": {"dataset_samples": 10000, "epochs": 1},
        "hardware": {"gpus": ["a100-sxm-80gb"], "gpu_counts": [1]},
    }, "old.yaml")
    plan = build_plan(scenario, load_inputs([], include_user_data=False), dt.date(2026, 12, 1))
    texts = [english(n) for n in plan.assumptions]
    assert any("model 'llama' is now called 'llama_60m' in the zoo" in t for t in texts), texts
    assert any(t.startswith("model llama_60m: ") and "60039680" in t.replace(",", "") for t in texts), texts


def test_a_zoo_llm_at_another_sequence_length_keeps_its_exact_parameter_count():
    """A reviewer found llama3_8b at seq 2048 planned as 8.84B parameters (the 4h² formula, untied head)."""
    from planner.engine.models import resolve_model
    from planner.inputs.scenario import parse_scenario

    def model(name: str, shape: dict):
        return resolve_model(parse_scenario({
            "schema": "trainplan.scenario/1", "name": "seq", "model": {"name": name, "transformer": shape},
            "training": {"global_batch": 8, "precisions": ["bf16"]}, "workload": {"dataset_samples": 100, "epochs": 1},
            "hardware": {"gpus": ["a100-sxm-80gb"], "gpu_counts": [1]}}, "seq.yaml").model)

    shape = {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048, "vocab": 128256, "mlp": "swiglu",
             "ffn": 14336}
    m = model("llama3_8b", shape)
    assert m.params == 8_030_261_248 and m.seq_len == 2048
    other = model("llama3_8b", {**shape, "layers": 16})  # another size: the scenario's own shape decides
    assert other.params != 8_030_261_248
