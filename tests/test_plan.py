"""The plan orchestrator and CLI: sources picked in order, recommendation, JSON contract, exit codes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.engine.plan import build_plan
from planner.engine.recommend import option_risks, pareto_frontier
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file, parse_scenario
from planner.present.notes import parts_text
from planner.present.planjson import option_to_dict, plan_to_dict
from planner.present.report import render_report
from planner.present.viewmodel import plan_view
from planner.vocab import GIB
from tests.notes_support import detail_en, english, texts, texts_of_triple  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "results"
TODAY = dt.date(2026, 11, 29)


@pytest.fixture(scope="module")
def inputs():
    return load_inputs([FIXTURES], include_user_data=False)


@pytest.fixture(scope="module")
def bare_inputs(tmp_path_factory):
    return load_inputs([tmp_path_factory.mktemp("empty")], include_user_data=False)


def _scenario(**over):
    base = {
        "schema": "trainplan.scenario/1", "name": "test",
        "model": {"name": "resnet50", "activation_bytes_per_sample": 1.1e8, "activation_precision": "bf16"},
        "training": {"global_batch": 256, "precisions": ["fp32", "bf16"], "optimizer": "sgd_momentum"},
        "workload": {"dataset_samples": 1281167, "epochs": 90},
        "hardware": {"gpus": ["h100-sxm-80gb", "a100-sxm-80gb", "t4-16gb"], "gpu_counts": [1, 8]},
    }
    for key, value in over.items():
        section, _, field = key.partition("__")
        if field:
            base.setdefault(section, {})[field] = value
        else:
            base[section] = value
    return parse_scenario(base, "test.yaml")


def test_measured_file_is_used_for_its_gpu_and_transferred_to_others(inputs):
    plan = build_plan(_scenario(), inputs, TODAY)
    h100 = plan.option("h100-sxm-80gb-x1-bf16")
    assert h100.step.source.kind == "measured"
    assert "resnet50-20261120T100000Z.json" in detail_en(h100.step.source)
    # fixture: t(256) = 0.004 + 0.00042*256 = 0.11152 s; no accumulation at 256 per GPU
    assert h100.micro_batch == 256 and h100.grad_accum == 1
    assert h100.step.compute_step_time_s == pytest.approx(0.11152, rel=1e-6)
    a100 = plan.option("a100-sxm-80gb-x1-bf16")
    assert a100.step.source.kind == "transferred" and "H100" in detail_en(a100.step.source)
    assert a100.step.step_time_s > h100.step.step_time_s
    assert any(str(Path(f).name).startswith("resnet50-") for f in plan.result_files_used)


def test_memory_line_from_measured_peaks_is_used(inputs):
    plan = build_plan(_scenario(), inputs, TODAY)
    h100 = plan.option("h100-sxm-80gb-x1-bf16")
    assert h100.memory.source.kind in ("measured", "interpolated")
    # fixture peaks: 0.6 GiB + 0.06 GiB * b -> activations ~ 0.06 GiB/sample * 256 = 15.4 GiB
    assert h100.memory.activations / GIB == pytest.approx(0.06 * 256, rel=0.1)


def test_nothing_measured_falls_back_to_analytic_and_says_so(bare_inputs):
    plan = build_plan(_scenario(), bare_inputs, TODAY)
    o = plan.option("h100-sxm-80gb-x1-bf16")
    assert o.step.source.kind == "analytic" and "calibrated roofline" in detail_en(o.step.source)
    assert "Hopper fitted on" in detail_en(o.step.source)
    # Without a calibration file the default-MFU formula is the fallback, and says so.
    uncalibrated = build_plan(_scenario(), dataclasses.replace(bare_inputs, calibration=None), TODAY)
    o = uncalibrated.option("h100-sxm-80gb-x1-bf16")
    assert o.step.source.kind == "analytic" and "MFU" in detail_en(o.step.source)
    assert o.memory.source.kind == "user"


def test_unsupported_precision_is_listed_with_a_note(bare_inputs):
    plan = build_plan(_scenario(), bare_inputs, TODAY)
    t4 = plan.option("t4-16gb-x1-bf16")
    assert not t4.fits and "bf16 not supported on" in texts(t4.notes)[0]


def test_impossible_config_does_not_fit_and_quotes_numbers(bare_inputs):
    s = _scenario(model={"name": "llama", "transformer": {"layers": 32, "hidden": 4096, "heads": 32,
                                                         "seq_len": 2048, "vocab": 32000, "mlp": "swiglu",
                                                         "ffn": 11008}},
                  training={"global_batch": 8, "precisions": ["bf16"], "optimizer": "adamw"},
                  hardware={"gpus": ["a100-sxm-80gb"], "gpu_counts": [1]})
    plan = build_plan(s, bare_inputs, TODAY)
    o = plan.options[0]
    assert not o.fits
    assert texts(o.notes)[0].startswith("does not fit: needs ") and "the GPU has 80" in texts(o.notes)[0]
    assert plan.recommendation.primary is None
    assert any("no option fits" in w for w in texts(plan.warnings))


def test_more_gpus_lower_hours_and_auto_micro_batch_divides(bare_inputs):
    plan = build_plan(_scenario(), bare_inputs, TODAY)
    one, eight = plan.option("h100-sxm-80gb-x1-bf16"), plan.option("h100-sxm-80gb-x8-bf16")
    assert eight.cost.hours < one.cost.hours
    assert eight.micro_batch * eight.grad_accum * 8 == 256
    assert eight.scaling is not None and 0 < eight.scaling.efficiency <= 1


def test_spot_is_cheaper_and_notes_preemptions(bare_inputs):
    # same provider (gcp a3-highgpu-1g: on-demand 10.98, spot 6.57 USD/GPU-h in the shipped profile)
    od = build_plan(_scenario(pricing={"provider": "gcp"}), bare_inputs, TODAY).option("h100-sxm-80gb-x1-bf16")
    spot = build_plan(_scenario(pricing={"tier": "spot", "provider": "gcp"}), bare_inputs,
                      TODAY).option("h100-sxm-80gb-x1-bf16")
    assert spot.cost.usd < od.cost.usd
    assert any(n.startswith("spot: expect") for n in texts(spot.notes))


@pytest.mark.parametrize("confidence", ["p90", "p50"])
def test_recommendation_is_cheapest_within_deadline_and_runner_up_on_frontier(bare_inputs, confidence):
    # Issue 18's rule: the deadline is met at the chosen confidence (p90: the range's high end), and an option with a
    # risk (memory under 10% headroom, a stale or undated published price) is primary only when no clean one meets it.
    plan = build_plan(_scenario(constraints={"deadline_hours": 48, "deadline_confidence": confidence}), bare_inputs,
                      TODAY)
    rec = plan.recommendation
    primary = plan.option(rec.primary)
    hours = (lambda o: o.cost.hours_range[1]) if confidence == "p90" else (lambda o: o.cost.hours)
    within = [o for o in plan.options if o.fits and o.cost and o.cost.price and hours(o) <= 48]
    clean = [o for o in within if not option_risks(o, TODAY)]
    assert clean and primary.cost.usd == min(o.cost.usd for o in clean) and rec.primary_risks == ()
    cheapest = min(within, key=lambda o: o.cost.usd)
    if cheapest.cost.usd < primary.cost.usd:  # set aside for its risks, and the plan says so
        assert rec.set_aside == cheapest.id and rec.set_aside_risks == option_risks(cheapest, TODAY) != ()
    assert rec.deadline_confidence == confidence
    # a clean pick's runner-up is on the frontier of the clean options
    frontier_ids = {o.id for o in pareto_frontier([o for o in plan.options if not option_risks(o, TODAY)])}
    if rec.runner_up:
        assert rec.runner_up in frontier_ids
        assert rec.runner_up not in parts_text(rec.reason, "en")  # the runner-up is a field; present/ words it


def test_pareto_frontier_is_the_non_dominated_set(bare_inputs):
    plan = build_plan(_scenario(), bare_inputs, TODAY)
    costed = [o for o in plan.options if o.fits and o.cost]
    frontier = pareto_frontier(plan.options)
    for f in frontier:
        assert not any(o.cost.hours < f.cost.hours and o.cost.usd < f.cost.usd for o in costed)
    for o in costed:
        if o not in frontier:
            assert any(f.cost.hours <= o.cost.hours and f.cost.usd <= o.cost.usd for f in frontier)


def test_currency_conversion_and_exchange_rate_assumption(bare_inputs):
    plan = build_plan(_scenario(pricing={"currency": "MXN", "exchange_rate": 18.5,
                                         "exchange_rate_as_of": "2026-11-01"}), bare_inputs, TODAY)
    o = plan.option("h100-sxm-80gb-x1-bf16")
    assert o.cost.amount_in_currency == pytest.approx(o.cost.usd * 18.5)
    assert any("18.5 MXN/USD (as of 2026-11-01)" in a for a in texts(plan.assumptions))


def test_plan_does_not_depend_on_shipped_results_being_synthetic():
    # estimation must not depend on anything synthetic in results/: every shipped file is a real run
    inputs = load_inputs(include_user_data=False)
    for r in inputs.results:
        assert r.environment.get("hostname") != "fixture"


def test_json_contract_fields(inputs):
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    d = plan_to_dict(build_plan(s, inputs, TODAY))
    assert d["schema"] == "trainplan.plan/2"
    assert set(d) >= {"schema", "trainplan_version", "scenario_name", "inputs", "options", "recommendation",
                      "assumptions", "warnings"}
    assert set(d["recommendation"]) == {"primary", "runner_up", "cheapest_within_deadline",
                                        "fastest_within_budget", "reason", "primary_risks", "deadline_confidence",
                                        "set_aside", "set_aside_risks", "fallback"}
    required = {"id", "gpu_id", "gpu_name", "n_gpus", "precision", "fits", "micro_batch", "grad_accum",
                "memory_gib", "headroom", "memory_source", "step_time_s", "micro_step_time_s",
                "step_time_source", "samples_per_s", "steps", "epochs", "convergence_source", "hours",
                "hours_range", "gpu_hours", "cost_usd", "cost_usd_range", "cost_local", "price", "scaling",
                "energy_kwh", "co2_kg", "checkpoint_gib", "notes", "topology"}
    ids = set()
    for o in d["options"]:
        assert required <= set(o), required - set(o)
        assert o["id"] == f"{o['gpu_id']}-x{o['n_gpus']}-{o['precision']}"
        ids.add(o["id"])
        if o["fits"] and o["cost_usd"] is not None:
            assert set(o["memory_gib"]) >= {"weights", "grads", "optimizer", "activations", "transients",
                                            "workspace", "context", "nccl", "total", "capacity", "usable"}
            assert o["hours_range"][0] <= o["hours"] <= o["hours_range"][1]
            assert {"provider", "instance", "tier", "usd_per_gpu_hour", "as_of", "source"} <= set(o["price"])
    for key in ("primary", "runner_up", "cheapest_within_deadline", "fastest_within_budget"):
        assert d["recommendation"][key] is None or d["recommendation"][key] in ids
    json.dumps(d, allow_nan=False)


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_scenario_plans(path, bare_inputs):
    s = load_scenario_file(path)
    plan = build_plan(s, load_inputs(include_user_data=False), TODAY)
    assert plan.options


def test_qlora_7b_fits_on_a_24gb_card():
    s = load_scenario_file(ROOT / "scenarios" / "llama7b-qlora-24gb.yaml")
    plan = build_plan(s, load_inputs(include_user_data=False), TODAY)
    assert plan.option("rtx4090-24gb-x1-bf16").fits


def test_7b_full_finetune_needs_more_than_one_gpu():
    s = load_scenario_file(ROOT / "scenarios" / "llama7b-full-finetune.yaml")
    plan = build_plan(s, load_inputs(include_user_data=False), TODAY)
    assert not plan.option("h100-sxm-80gb-x1-bf16").fits
    assert plan.option("h100-sxm-80gb-x8-bf16").fits


def test_unknown_gpu_in_plan_is_input_error(bare_inputs):
    s = dataclasses.replace(_scenario(), hardware=dataclasses.replace(_scenario().hardware, gpus=("h900",)))
    with pytest.raises(InputError, match="h900"):
        build_plan(s, bare_inputs, TODAY)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, capture_output=True, text=True)


def test_cli_table_and_json():
    out = _cli("scenarios/resnet50-imagenet.yaml", "--no-user-data")
    assert out.returncode == 0, out.stderr
    assert "Recommendation:" in out.stdout and "Runner-up" in out.stdout
    out = _cli("scenarios/resnet50-imagenet.yaml", "--format", "json", "--results", str(FIXTURES), "--no-user-data")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert any(o["step_time_source"].startswith("measured") for o in d["options"])


@pytest.mark.parametrize("args,needle", [
    (["nope.yaml"], "existing scenario file"),
    (["scenarios/resnet50-imagenet.yaml", "--results", "/no/such/dir"], "existing folder"),
])
def test_cli_bad_input_exits_2_with_one_message(args, needle):
    out = _cli(*args)
    assert out.returncode == 2
    assert needle in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_cli_bad_field_names_file_and_field(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("model: {name: resnet50}\ntraining: {global_batch: -1}\nworkload: {dataset_samples: 10, epochs: 1}\n")
    out = _cli(str(p))
    assert out.returncode == 2
    assert "s.yaml: training.global_batch: got -1" in out.stderr


def test_quote_choice_counts_instance_rounding(bare_inputs):
    # AWS p5 spot sells 8-GPU instances at 3.79/GPU-h: for one GPU that bills 8, so GCP's 1-GPU spot wins
    o = build_plan(_scenario(pricing={"tier": "spot"}), bare_inputs, TODAY).option("h100-sxm-80gb-x1-bf16")
    assert o.cost.price.gpus_per_instance == 1 and o.cost.n_gpus_billed == 1


def test_multi_gpu_options_bill_node_sized_instances(bare_inputs):
    # 8 x H100 is timed as one NVLink node, so it must be priced as one: 1-GPU marketplace rentals do not qualify
    o = build_plan(_scenario(), bare_inputs, TODAY).option("h100-sxm-80gb-x8-bf16")
    assert o.cost.price.gpus_per_instance >= 8


def test_an_option_without_a_price_still_has_hours_and_energy(bare_inputs):
    s = _scenario(hardware={"gpus": ["a100-pcie-40gb"], "gpu_counts": [1]})  # no on-demand quote shipped
    o = build_plan(s, bare_inputs, TODAY).options[0]
    assert o.fits and o.cost.price is None and o.cost.hours > 0 and o.cost.energy_kwh > 0
    assert any(n.startswith("no on_demand price") for n in texts(o.notes))
    d = plan_to_dict(build_plan(s, bare_inputs, TODAY))
    assert d["options"][0]["cost_usd"] is None and d["options"][0]["hours"] > 0
    assert d["recommendation"]["primary"] is None  # nothing priced to compare


def test_reference_points_without_a_positive_fit_are_bad_input(bare_inputs):
    # Steps rising with the batch (E_min <= 0); steps falling as fast as 1/B plan as perfect scaling
    # (tests/test_convergence.py).
    s = _scenario(workload={"dataset_samples": 1281167, "reference_points": [
        {"global_batch": 256, "epochs": 90}, {"global_batch": 8192, "epochs": 4000}]})
    with pytest.raises(InputError) as err:
        build_plan(s, bare_inputs, TODAY)
    assert err.value.field == "workload.reference_points"


def test_lora_backward_skips_weight_gradients(bare_inputs):
    shape = {"layers": 12, "hidden": 768, "heads": 12, "seq_len": 1024, "vocab": 50257}
    full = _scenario(model={"name": "gpt2", "transformer": shape},
                     training={"global_batch": 8, "precisions": ["bf16"], "optimizer": "adamw"},
                     hardware={"gpus": ["h100-sxm-80gb"], "gpu_counts": [1]})
    lora = _scenario(model={"name": "gpt2", "transformer": shape},
                     training={"global_batch": 8, "precisions": ["bf16"], "optimizer": "adamw",
                               "adapter": {"kind": "lora", "rank": 8}},
                     hardware={"gpus": ["h100-sxm-80gb"], "gpu_counts": [1]})
    # docs/methods.md#step-time: backward (1 + f_T)x forward instead of 2x -> about 2/3 of the FLOPs for f_T ~ 0. The
    # default-MFU formula is all FLOPs; the calibrated roofline's activation-traffic term does not shrink.
    mfu_only = dataclasses.replace(bare_inputs, calibration=None)
    t_full = build_plan(full, mfu_only, TODAY).options[0].step.micro_step_time_s
    t_lora = build_plan(lora, mfu_only, TODAY).options[0].step.micro_step_time_s
    assert t_lora == pytest.approx(t_full * 2 / 3, rel=0.05)
    c_full = build_plan(full, bare_inputs, TODAY).options[0].step.micro_step_time_s
    c_lora = build_plan(lora, bare_inputs, TODAY).options[0].step.micro_step_time_s
    assert c_full * 2 / 3 < c_lora < c_full


def test_dual_issue_fp32_peak_is_discounted_on_ampere_and_ada(bare_inputs):
    o = build_plan(_scenario(hardware={"gpus": ["rtx4090-24gb"], "gpu_counts": [1]}), bare_inputs,
                   TODAY).option("rtx4090-24gb-x1-fp32")
    assert "dual-issue fp32" in detail_en(o.step.source)


def test_spot_with_many_instances_warns_the_run_may_never_finish(bare_inputs):
    s = _scenario(pricing={"tier": "spot", "provider": "aws",
                           "spot": {"preemptions_per_instance_hour": 0.5, "checkpoint_interval_min": 60}},
                  hardware={"gpus": ["a10g-24gb"], "gpu_counts": [8]})
    o = build_plan(s, bare_inputs, TODAY).option("a10g-24gb-x8-bf16")
    # Billed as two 4-GPU g5.12xlarge (cheaper in total than eight g5.xlarge, which lose more to preemptions and a
    # slower network): 2 instances x 0.5/h = a preemption every 60 min <= 60 + 10 min
    assert o.cost.price.gpus_per_instance == 4 and o.topology == "separate_nodes"
    assert any("may never finish" in n for n in texts(o.notes))
    assert any(n.startswith("rented as 2 separate 4-GPU instances") for n in texts(o.notes))


def test_no_engine_function_takes_more_than_five_positional_parameters():
    # Issue 12: engine functions take the domain dataclasses; past five, arguments are keyword-only, so a run of
    # same-typed numbers (steps, step time, overheads...) cannot be passed in the wrong order.
    import ast

    too_many = []
    for path in sorted((ROOT / "planner" / "engine").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                positional = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]
                if len(positional) > 5:
                    too_many.append(f"{path.name}:{node.lineno} {node.name}({', '.join(positional)})")
    assert not too_many


def test_zero_shards_the_optimizer_step_over_the_gpus(bare_inputs):
    """ZeRO (every stage) partitions the optimizer state: each of N GPUs updates 1/N of the parameters, so a step
    carries 1/N of the one-GPU optimizer phase (it used to carry all of it: +5-12% on the shipped 7B scenario)."""
    from planner.engine import steptime

    def step(sharding: str):
        scenario = parse_scenario({
            "schema": "trainplan.scenario/1", "name": "zero", "model": {"name": "gpt2"},
            "training": {"global_batch": 64, "micro_batch": 8, "precisions": ["bf16"], "optimizer": "adamw",
                         "sharding": sharding},
            "workload": {"dataset_samples": 100000, "epochs": 1},
            "hardware": {"gpus": ["a100-sxm-80gb"], "gpu_counts": [8]},
        }, "zero.yaml")
        plan = build_plan(scenario, bare_inputs, TODAY)
        return plan, plan.option("a100-sxm-80gb-x8-bf16").step

    plan, plain = step("none")
    _, zero2 = step("zero2")
    _, zero3 = step("zero3")
    bw = bare_inputs.profiles["a100-sxm-80gb"].memory_bandwidth_gb_per_s
    one_gpu = steptime.optimizer_step_s(plan.trainable_params, "adamw", "foreach", bw)
    assert plain.compute_step_time_s - zero2.compute_step_time_s == pytest.approx(one_gpu * 7 / 8, rel=1e-9)
    assert zero3.compute_step_time_s == pytest.approx(zero2.compute_step_time_s, rel=1e-9)


def test_the_calibrated_time_grows_with_the_micro_batch(bare_inputs):
    """Issue 15: the time depends on the micro-batch (FLOPs and activation traffic both grow with it)."""
    from planner.engine.step_ladder import step_estimate

    scenario = _scenario(training={"global_batch": 256, "precisions": ["bf16"], "optimizer": "sgd_momentum"},
                         hardware={"gpus": ["a100-sxm-80gb"], "gpu_counts": [1]})
    times = [step_estimate(scenario, bare_inputs, gpu_id="a100-sxm-80gb", precision="bf16", micro_batch=b)
             for b in (8, 32, 128, 256)]
    micro = [t.micro_step_time_s for t in times]
    assert micro == sorted(micro) and micro[0] > 0
    assert all(t.source.kind == "analytic" and "calibrated roofline" in detail_en(t.source) for t in times)


def test_every_step_range_says_what_it_is_and_none_has_zero_width(bare_inputs):
    """plan/2: range_meaning is p10-p90 (held-out errors of the path) or assumed; an input-bound option (loading
    dominates both ends) gets an assumed +10% above its loading floor instead of a zero-width range."""
    scenario = _scenario(model={"name": "resnet50", "activation_bytes_per_sample": 1.1e8,
                                "activation_precision": "bf16", "input_cpu_s_per_sample": 0.02},
                         hardware={"gpus": ["h100-sxm-80gb", "t4-16gb"], "gpu_counts": [1, 8],
                                   "cpu_workers_per_gpu": 8})
    plan = build_plan(scenario, bare_inputs, TODAY)
    d = plan_to_dict(plan)
    for o in d["options"]:
        if o["step_time_range_s"] is None:
            continue
        low, high = o["step_time_range_s"]
        # a range never has zero width; an input-bound one starts at the loading floor (issue 32: no low end under it)
        assert low <= o["step_time_s"] < high, o["id"]
        assert low < high, o["id"]
        assert o["range_meaning"] in ("p10-p90", "assumed"), o["id"]
    h100 = next(o for o in d["options"] if o["id"] == "h100-sxm-80gb-x8-bf16")
    # 32 samples x 0.02 s / 8 workers = 0.08 s of loading per step, far above the compute
    assert h100["step_time_s"] == pytest.approx(0.08, rel=1e-6) and h100["range_meaning"] == "assumed"
    assert h100["step_time_range_s"] == pytest.approx([0.08, 0.08 * 1.1], rel=1e-3)
    assert any(o["range_meaning"] == "p10-p90" for o in d["options"])


def test_another_gpus_measured_memory_line_is_labelled_transferred(inputs):
    """Issue 15: a figure measured on another GPU is never plain 'measured' on this one."""
    plan = build_plan(_scenario(), inputs, TODAY)
    assert plan.option("h100-sxm-80gb-x1-bf16").memory.source.kind in ("measured", "interpolated")
    a100 = plan.option("a100-sxm-80gb-x1-bf16").memory.source
    assert a100.kind == "transferred" and detail_en(a100).startswith("from h100-sxm-80gb (measured: ")


def test_a_broken_calibration_file_becomes_a_problem_and_plans_use_the_default_mfus(monkeypatch, tmp_path):
    import json as _json

    from planner.inputs import calibration as cal_mod
    from planner.inputs import folders
    from planner.inputs.errors import InputError

    good = _json.loads(cal_mod.CALIBRATION_PATH.read_text(encoding="utf-8"))
    bad = tmp_path / "step_calibration.json"
    bad.write_text(_json.dumps({**good, "compute_efficiency": {"Hopper": 7}}), "utf-8")
    with pytest.raises(InputError, match="compute_efficiency.Hopper"):
        cal_mod.load_calibration(bad)
    monkeypatch.setattr(folders, "load_calibration", lambda: cal_mod.load_calibration(bad))
    inputs = folders.load_inputs([tmp_path], include_user_data=False)
    assert inputs.calibration is None and any("step_calibration.json" in p for p in inputs.problems)
    o = build_plan(_scenario(), inputs, TODAY).option("h100-sxm-80gb-x1-bf16")
    assert o.step.source.kind == "analytic" and "MFU" in detail_en(o.step.source)


def test_qlora_pays_for_dequantising_its_base_weights(bare_inputs):
    """Issue 15: LoRA and QLoRA differ. LitGPT publishes both for Llama 2 7B on an A100-SXM4-40GB at micro-batch 1
    (resource-tables.md L53-L54: 2.36 vs 3.68 min per 1,000 iterations, +79.2 ms per iteration)."""
    from planner.engine import steptime
    from planner.engine.step_ladder import step_estimate

    def micro(base_dtype: str, kind: str):
        s = _scenario(model={"name": "llama2_7b"},
                      training={"global_batch": 1, "micro_batch": 1, "precisions": ["bf16"], "optimizer": "adamw",
                                "adapter": {"kind": kind, "rank": 8, "targets": "attention", "base_dtype": base_dtype}},
                      hardware={"gpus": ["a100-sxm-40gb"], "gpu_counts": [1]})
        return step_estimate(s, bare_inputs, gpu_id="a100-sxm-40gb", precision="bf16", micro_batch=1)

    lora, qlora = micro("bf16", "lora"), micro("nf4", "qlora")
    quantized = 6_738_415_616 - 2 * 32000 * 4096  # all but the embedding and the untied head
    extra = qlora.micro_step_time_s - lora.micro_step_time_s
    assert extra == pytest.approx(steptime.dequant_s(quantized, 1555), rel=1e-9)
    assert extra == pytest.approx((3.68 - 2.36) * 60 / 1000, rel=0.01)  # the published pair it is taken from
    assert "to dequantise the nf4 base weights" in detail_en(qlora.source)
    assert "dequantise" not in detail_en(lora.source)


def test_a_model_without_any_activation_figure_plans_with_fit_unknown(bare_inputs):
    """Issue 16: a model given only as parameters and FLOPs is planned (states, time, cost) with fits null and a note
    naming how to get its activations, not refused; the recommendation says its fit is unknown."""
    s = _scenario(model={"params": 300_000_000, "flops_per_sample": 1.8e12},
                  hardware={"gpus": ["a100-sxm-80gb", "t4-16gb"], "gpu_counts": [1]},
                  training={"global_batch": 32, "precisions": ["bf16", "fp16"], "optimizer": "adamw"})
    plan = build_plan(s, bare_inputs, TODAY)
    unknown = [o for o in plan.options if o.fits is None]
    assert unknown and all(o.step is not None and o.memory is not None for o in unknown)
    o = unknown[0]
    assert not o.memory.activations_known and o.memory.activations == 0
    assert o.micro_batch == 1 and "micro_batch_fit_unknown" in [n.key for n in o.notes]  # the smallest, said
    assert any("python -m bench trace" in t for t in texts(o.notes))
    assert plan.recommendation.primary in {u.id for u in unknown}
    reason = parts_text(plan.recommendation.reason, "en")
    assert "memory fit is unknown" in reason and "known to fit" not in reason
    assert any("no option is known to fit" in w for w in texts(plan.warnings))
    assert option_to_dict(o)["fits"] is None


def test_a_model_too_big_even_without_activations_does_not_fit(bare_inputs):
    # 30B parameters at 16 B each under torch AMP + AdamW = 480 GB: no activation figure needed to say no.
    s = _scenario(model={"params": 30_000_000_000, "flops_per_sample": 1.8e14},
                  hardware={"gpus": ["a100-sxm-80gb"], "gpu_counts": [1]},
                  training={"global_batch": 32, "precisions": ["bf16"], "optimizer": "adamw"})
    o = build_plan(s, bare_inputs, TODAY).options[0]
    assert o.fits is False and texts(o.notes)[0].startswith("does not fit")


def test_the_zoo_vit_plans(bare_inputs):
    """Issue 16: `model: {name: vit_b16}` (an image transformer: no token vocabulary) used to crash the planner."""
    s = _scenario(model={"name": "vit_b16"}, hardware={"gpus": ["a100-sxm-80gb"], "gpu_counts": [1]},
                  training={"global_batch": 256, "precisions": ["bf16"], "optimizer": "adamw"})
    o = build_plan(s, bare_inputs, TODAY).options[0]
    assert o.fits and o.memory.activations > 0 and o.memory.source.kind == "analytic"
    assert "no token vocabulary" in detail_en(o.memory.source)


def test_the_micro_batch_leaves_headroom_when_a_smaller_one_can(inputs):
    # QLoRA 7B on an RTX 4090 (issue 33's band: 8% either side of the capacity is borderline): micro-batch 8 is 1%
    # over (borderline, not fitting as given); 4 leaves more than the band, so the plan takes 4 (the divisors of the
    # global batch 16) and the option is not "tight" (which would count against it).
    s = load_scenario_file(ROOT / "scenarios" / "llama7b-qlora-24gb.yaml")
    o = build_plan(s, inputs, TODAY).option("rtx4090-24gb-x1-bf16")
    assert o.micro_batch == 4 and o.memory.verdict == "fits" and "tight_memory" not in option_risks(o, TODAY)
    # Micro-batch 7 with a 1 GiB workspace typed (and no context then): 6% headroom, inside the band.
    tight = build_plan(dataclasses.replace(s, training=dataclasses.replace(s.training, micro_batch=7),
                                           hardware=dataclasses.replace(s.hardware, workspace_gib=1.0)), inputs,
                       TODAY).option("rtx4090-24gb-x1-bf16")
    assert tight.fits and tight.memory.verdict == "borderline" and "tight_memory" in option_risks(tight, TODAY)
    # Micro-batch 8 fixed does not fit as given: planned with the largest micro-batch that does, not refused.
    over = build_plan(dataclasses.replace(s, training=dataclasses.replace(s.training, micro_batch=8)), inputs,
                      TODAY).option("rtx4090-24gb-x1-bf16")
    assert over.fits is False and over.memory.verdict == "borderline"
    assert over.planned_with is not None and over.planned_with.changed == ("micro_batch",)
    assert over.micro_batch == 4 and over.cost is not None


@pytest.mark.parametrize("lang,words", [("en", "multiply the tuned LR by 4"), ("es", "multiplica la LR ajustada por 4")])
def test_lr_advice_reaches_the_json_and_the_report_when_the_batch_moves(inputs, lang, words):
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    moved = dataclasses.replace(s, training=dataclasses.replace(s.training, global_batch=1024, lr_reference_batch=256))
    plan = build_plan(moved, inputs, TODAY)
    assert any("multiply the tuned LR by 4" in a for a in plan_to_dict(plan)["advice"])
    assert words in render_report(plan, moved, "markdown", locale=lang)
    assert plan_to_dict(build_plan(s, inputs, TODAY))["advice"] == []  # the batch it was tuned at: nothing to say


def _gpt2(inputs, **constraints):
    s = load_scenario_file(ROOT / "scenarios" / "gpt2-124m-10b-tokens.yaml")
    s = dataclasses.replace(s, constraints=dataclasses.replace(s.constraints, **constraints))
    return s, build_plan(s, inputs, TODAY)


def test_the_risk_rule_counts_the_budget_among_the_constraints(inputs):
    # With a $50 budget no clean option is both on time (p90) and affordable: the cheapest that is, risky or not,
    # is the pick, with its risks named; nothing is "set aside" that would break the budget.
    s, plan = _gpt2(inputs, budget_usd=50.0)
    r, p = plan.recommendation, plan.option(plan.recommendation.primary)
    assert p.cost.usd <= 50 and p.cost.hours_range[1] <= s.constraints.deadline_hours and r.fallback == ""
    clean = [o for o in plan.options if o.cost and o.cost.price and not option_risks(o, TODAY)
             and o.cost.usd <= 50 and o.cost.hours_range[1] <= s.constraints.deadline_hours]
    assert (r.primary_risks != ()) == (not clean)
    if r.set_aside:
        aside = plan.option(r.set_aside)
        assert aside.cost.usd <= 50 and aside.cost.hours_range[1] <= s.constraints.deadline_hours


@pytest.mark.parametrize("deadline,fallback", [(2.2, "p50"), (0.5, "fastest")])
def test_when_no_option_is_on_time_at_p90_the_pick_says_why(inputs, deadline, fallback):
    s, plan = _gpt2(inputs, deadline_hours=deadline)
    r, p = plan.recommendation, plan.option(plan.recommendation.primary)
    priced = [o for o in plan.options if o.cost and o.cost.price]
    assert not any(o.cost.hours_range[1] <= deadline for o in priced)
    assert r.fallback == fallback and r.set_aside is None
    if fallback == "p50":  # the cheapest on time at its likely hours, not a 13x-late cheap one
        assert p.cost.hours <= deadline
    else:  # the fastest, among the clean options when there are any (the risk rule)
        clean = [o for o in priced if not option_risks(o, TODAY)] or priced
        assert p.cost.hours_range[1] == min(o.cost.hours_range[1] for o in clean)
    words = " ".join(plan_view(plan, s, "en").decision)
    assert ("likely hours (p50)" if fallback == "p50" else "this is the fastest") in words


def test_a_clean_pick_is_not_beaten_on_time_and_cost_by_its_runner_up(inputs):
    _, plan = _gpt2(inputs)
    r = plan.recommendation
    p, runner = plan.option(r.primary), plan.option(r.runner_up)
    assert r.primary_risks == () and r.set_aside is not None  # the undated 8 x H100 is cheaper and set aside
    assert runner is not None and option_risks(runner, TODAY) == ()
    assert not (runner.cost.hours < p.cost.hours and runner.cost.usd < p.cost.usd)


def test_the_set_aside_advice_fits_the_risk(inputs):
    # An RTX 4090 at micro-batch 7 with 1 GiB of workspace is borderline (6% headroom) with a current price: the
    # advice is about memory.
    s = load_scenario_file(ROOT / "scenarios" / "llama7b-qlora-24gb.yaml")
    s = dataclasses.replace(s, training=dataclasses.replace(s.training, micro_batch=7),
                            hardware=dataclasses.replace(s.hardware, workspace_gib=1.0,
                                                         gpus=("rtx4090-24gb", "l40s-48gb", "a100-sxm-80gb")))
    plan = build_plan(s, inputs, TODAY)
    r = plan.recommendation
    assert r.set_aside == "rtx4090-24gb-x1-bf16" and r.set_aside_risks == ("tight_memory",)
    words = " ".join(plan_view(plan, s, "en").decision)
    assert "smaller micro-batch" in words and "save it as your price" not in words


def test_a_budget_nothing_meets_without_a_deadline_still_plans(inputs):
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    s = dataclasses.replace(s, constraints=dataclasses.replace(s.constraints, deadline_hours=None, budget_usd=0.01))
    plan = build_plan(s, inputs, TODAY)
    r = plan.recommendation
    assert r.primary and r.fallback == "" and "over the 0 USD budget" in parts_text(r.reason, "en")
    assert any("Supera el presupuesto" in line for line in plan_view(plan, s, "es").decision)
