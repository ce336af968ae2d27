"""What fits, as an answer (issue 33): per GPU, the largest micro-batch, the longest sequence with and without
checkpointing, the fewest GPUs for a full fine-tune, and which single change would make micro-batch 1 fit; shown on
the Plan page, in the reports and by the CLI. Each answer is checked at its edge: it fits, one step more does not."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from planner.engine import memory
from planner.engine.context import model_facts
from planner.engine.option import OptionPlan
from planner.engine.plan import build_plan
from planner.engine.what_fits import GPU_COUNTS, SEQ_STEP, what_fits, what_fits_all
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import Adapter, load_scenario_file
from planner.present.fit_answers import what_fits_headers, what_fits_rows
from planner.present.report import render_report

ROOT = Path(__file__).resolve().parent.parent
LORA = ROOT / "scenarios" / "presets" / "llama2-7b-lora-24gb.yaml"
QLORA = ROOT / "scenarios" / "llama7b-qlora-24gb.yaml"
FULL = ROOT / "scenarios" / "presets" / "llama3-8b-full-finetune-zero3-8gpu.yaml"


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


def _fits(inputs, scenario, training, *, gpu_id, precision, micro, n_gpus=1, seq=None, with_line=True):
    facts = model_facts(inputs, scenario.model, scenario.training, "<test>")
    model = facts.model
    if seq is not None:
        model = dataclasses.replace(model, seq_len=seq, transformer=dataclasses.replace(model.transformer, seq_len=seq))
    line = facts.activation_line(precision, gpu_id) if with_line else None
    est = memory.estimate_memory(model, training, OptionPlan(gpu=inputs.profiles[gpu_id], n_gpus=n_gpus,
                                                             precision=precision, micro_batch=micro, grad_accum=1),
                                 line=line)
    return est.total <= est.usable


@pytest.mark.parametrize("path", [LORA, QLORA], ids=["lora-preset", "qlora-scenario"])
def test_the_7b_presets_on_a_24gb_card_at_their_edges(inputs, path):
    s = load_scenario_file(path)
    a = what_fits(inputs, s.model, s.training, gpu_id="rtx4090-24gb", precision="bf16")
    t = dataclasses.replace(s.training, sharding="none")
    assert a.largest_micro_batch and a.fits_at_micro_1 and a.would_fit_with == ()
    assert _fits(inputs, s, t, gpu_id="rtx4090-24gb", precision="bf16", micro=a.largest_micro_batch)
    assert not _fits(inputs, s, t, gpu_id="rtx4090-24gb", precision="bf16", micro=a.largest_micro_batch + 1)
    assert a.longest_seq and a.longest_seq_checkpointed > a.longest_seq  # checkpointing keeps less per token
    for ckpt, longest in ((False, a.longest_seq), (True, a.longest_seq_checkpointed)):
        tc = dataclasses.replace(t, activation_checkpointing=ckpt)
        assert _fits(inputs, s, tc, gpu_id="rtx4090-24gb", precision="bf16", micro=1, seq=longest, with_line=False)
        assert not _fits(inputs, s, tc, gpu_id="rtx4090-24gb", precision="bf16", micro=1, seq=longest + SEQ_STEP,
                         with_line=False)
    # A full fine-tune of 7B does not fit one 24 GB card; the answer is the first count that does.
    n = a.fewest_gpus_full
    assert n is not None and n > 1
    full = dataclasses.replace(s.training, adapter=None, activation_checkpointing=True, sharding="zero3")
    assert _fits(inputs, s, full, gpu_id="rtx4090-24gb", precision="bf16", micro=1, n_gpus=n, with_line=False)
    before = GPU_COUNTS[GPU_COUNTS.index(n) - 1]
    assert not _fits(inputs, s, full if before > 1 else dataclasses.replace(full, sharding="none"),
                     gpu_id="rtx4090-24gb", precision="bf16", micro=1, n_gpus=before, with_line=False)


def test_qlora_holds_a_longer_sequence_than_lora_on_the_same_card(inputs):
    lora, qlora = load_scenario_file(LORA), load_scenario_file(QLORA)
    a = what_fits(inputs, lora.model, lora.training, gpu_id="rtx4090-24gb", precision="bf16")
    b = what_fits(inputs, qlora.model, qlora.training, gpu_id="rtx4090-24gb", precision="bf16")
    assert b.longest_seq_checkpointed > a.longest_seq_checkpointed


def test_what_would_make_a_full_fine_tune_fit_is_each_true_on_its_own(inputs):
    s = load_scenario_file(FULL)
    (a,) = what_fits_all(inputs, s.model, s.training, ["rtx4090-24gb"], counts=s.hardware.gpu_counts)
    assert a.n_gpus == max(s.hardware.gpu_counts) and not a.fits_at_micro_1
    assert set(a.would_fit_with) == {"offload", "optimizer_8bit", "qlora"}
    n, t = a.n_gpus, s.training
    assert _fits(inputs, s, dataclasses.replace(t, optimizer="adam8bit"), gpu_id="rtx4090-24gb",
                 precision="bf16", micro=1, n_gpus=n)
    qlora = dataclasses.replace(t, adapter=Adapter(kind="qlora", rank=16, targets="all_linear", base_dtype="nf4"))
    assert _fits(inputs, s, qlora, gpu_id="rtx4090-24gb", precision="bf16", micro=1, n_gpus=n, with_line=False)


def test_a_model_without_a_sequence_says_so(inputs):
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    (a,) = what_fits_all(inputs, s.model, s.training, ["t4-16gb"])
    assert a.seq_searched is None and a.longest_seq is None and a.largest_micro_batch > 32
    headers = what_fits_headers("en", (a,))  # no column of dashes for a model without a sequence
    assert not any("sequence" in h for h in headers) and len(what_fits_rows((a,), "en")[0]) == len(headers)


def test_the_answers_follow_the_recommended_precision(inputs):
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    assert s.training.precisions[0] == "fp32"
    (a,) = what_fits_all(inputs, s.model, s.training, ["rtx4090-24gb"], prefer="fp16")
    (t4,) = what_fits_all(inputs, s.model, s.training, ["t4-16gb"], prefer="bf16")  # a T4 has no bf16
    assert a.precision == "fp16" and t4.precision == "fp32"


@pytest.mark.parametrize(("lang", "words"), [("en", "What fits on each GPU"), ("es", "Qué cabe en cada GPU")])
def test_the_report_shows_the_answers(inputs, lang, words):
    s = load_scenario_file(LORA)
    plan = build_plan(s, inputs)
    answers = what_fits_all(inputs, s.model, s.training, plan.profiles_used, counts=s.hardware.gpu_counts)
    text = render_report(plan, s, "markdown", locale=lang, what_fits=answers)
    assert words in text and "RTX 4090" in text
    html = render_report(plan, s, "html", locale=lang, what_fits=answers)
    assert words in html and 'class="what-fits"' in html


def test_the_cli_prints_the_answers_when_asked():
    out = subprocess.run([sys.executable, "-m", "planner", "--no-user-data", "--what-fits", str(LORA)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    i = lines.index("What fits on each GPU:")
    assert "Largest micro-batch" in lines[i + 1] and any("RTX 4090" in line for line in lines[i + 2:])
