"""The memory model against published peak-memory measurements, like with like (calibration/memory_cases.yaml, one test
per published row): allocated_peak vs torch.cuda.max_memory_allocated within 5%, reserved_peak vs
max_memory_reserved within 10%, device_total vs NVML/nvidia-smi within 10%, and the verdict of every row (a run
that ran fits, an out-of-memory row does not). Every number is read from the verified corpus
(calibration/published/sources/), every knob from the published configuration (each case's `why`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from calibration import memory_report

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# Rows the model misses today, each with why; strict: a fix turns the xfail into a failure until it is removed here.
KNOWN_MISSES = {
    "litgpt-a10g-mistral-7b-qlora-b2": "QLoRA allocated ≈15% low (2.0 GiB) on the 2024 config-hub LitGPT (bitsandbytes "
                                       "0.42.0, Mistral's grouped K/V): the stack knobs that explain the 2023 A100 "
                                       "rows (fused_rope, fused_qkv, chunked_fp32) were read in that year's code only, "
                                       "so they are not set here",
    "litgpt-a100x2-llama2-7b-lora-fsdp-b4": "LitGPT FSDP LoRA at micro-batch 4: +8.2% (23.6 vs 21.8 GiB) with the "
                                            "frozen base's unsharded gradients (fsdp_frozen_grads, no_sync); "
                                            "micro-batch 1 is +1.5%: the model's activation growth from 1 to 4 "
                                            "under checkpointing is ~2 GiB more than LitGPT's 1.1 GiB",
    "fms-a100-mistral-7b-qlora-peft-b4": "HF/PEFT QLoRA (nf4-dq, packed 4096, checkpointing, flash-attn 2, "
                                         "bitsandbytes 0.43.3) +6.7%: the published peak grows 3.80 GiB per sample "
                                         "(L58 to L60), the model 4.00; the intercept is 4.04 GiB published vs 4.53 "
                                         "modelled (kbit_upcast's +0.49 GiB of fp32 weights is not in the CSV's "
                                         "end-of-training allocation, which equals the plugin rows' to 0.01%)",
    "fms-a100-mistral-7b-qlora-peft-b8": "as fms-a100-mistral-7b-qlora-peft-b4 at batch 8: +6.0%",
    "fms-a100-mistral-7b-qlora-plugin-b8": "QLoRA without the fp32 upcast at batch 8: +5.6% (b4: +4.6%): the "
                                           "published peak grows 2.80 GiB per 4096-token sample (L78 to L80), the "
                                           "model 3.00 (1.0 of checkpointed layer inputs, 0.72 for one recomputed "
                                           "block, 1.28 for logits and loss): 0.2 GiB per sample too many (≈13 B·s·h)",
    "mesa-deit-b-amp-b128": "ViT-B/16 eager attention under AMP, PyTorch 1.7.1: -7.2% with softmax's kept fp32 "
                            "input counted (softmax_keeps_input: was -22.6% without); 1.25 GiB unexplained. Not "
                            "the attention backward's s x s gradients (8 B per score while the last block's MLP "
                            "tensors are already freed: net -0.1 GB); a candidate not modelled is DeiT's "
                            "cudnn.benchmark search for the patch-embedding convolution's weight gradient at the "
                            "first backward, whose workspace PyTorch 1.7 sizes up to the largest cached free block "
                            "(the GPU is not published)",
    # Issue 33's new rows (status only: each ran; predicted device total vs the card's capacity).
    "aai-3090x2-llama2-7b-lora-fsdp-b1-s512": "Answer.AI LoRA+FSDP, Llama-2 7B on 2 x RTX 3090 at batch 1 x 512: "
                                              "reserved 8.72 GiB vs 10.24 published (-14.9%) since fragmentation is "
                                              "charged on the bytes the allocator churns (issue 33; -2.4% when it was "
                                              "11% of everything): at 512 tokens little churns, and what the allocator "
                                              "keeps reserved around the wrapped 16-bit model is not proportional to it",
    "aai-3090x2-llama2-7b-qlora-fsdp-b1-s512": "Answer.AI QLoRA+FSDP, Llama-2 7B on 2 x RTX 3090 at batch 1 x 512: "
                                               "reserved 3.73 GiB vs 4.98 published (-25.0%); the write-up's own "
                                               "reserved_after_model_wrap is 3.72 GiB before any step (L27), so the "
                                               "model's whole training step adds almost nothing the allocator keeps; "
                                               "the same run at 2,048 tokens is -2.8%",
    "hfblog-a100-80gb-x16-llama2-70b-full-fsdp-b1": "Hugging Face's Llama-2 70B full fine-tune on 16 x A100 80GB (FSDP "
                                                     "FULL_SHARD, micro-batch 1 x 2048, checkpointing) ran; planned 87.4 "
                                                     "GiB at the optimizer step: 64.2 GiB of fp32 parameters, gradients "
                                                     "and AdamW moments (the blog loads the model at 4 bytes a parameter, "
                                                     "L38: the fp32 layout is the run's, not an assumption), 16.1 GiB of "
                                                     "foreach AdamW temporaries and 6.1 of fragmentation; pure bf16 "
                                                     "states would plan 44.2 GiB, but nothing published says the run "
                                                     "kept them so",
}


@pytest.fixture(scope="module")
def results():
    return {r.case: r for r in memory_report.run()}


CASE_IDS = [c["id"] for c in memory_report.load_cases()]


@pytest.mark.parametrize("case_id", [pytest.param(c, marks=pytest.mark.xfail(reason=KNOWN_MISSES[c], strict=True))
                                     if c in KNOWN_MISSES else c for c in CASE_IDS])
def test_published_row(results, case_id):
    r = results[case_id]
    assert r.fits == r.ran, f"{case_id}: the plan says {'fits' if r.fits else 'does not fit'}; the published run " \
                            f"{'ran' if r.ran else 'ran out of memory'} ({r.source})"
    if r.error is not None:
        limit = memory_report.TOLERANCE[r.figure]
        assert abs(r.error) <= limit, f"{case_id}: {r.figure} {r.predicted_gib:.2f} GiB vs published " \
                                      f"{r.published_gib:.2f} GiB ({r.error:+.1%}, limit ±{limit:.0%}; {r.source})"


def test_the_cases_cover_what_the_issue_names(results):
    cases = memory_report.load_cases()
    knobs = [c["scenario"] for c in cases]
    assert sum(r.published_gib is not None for r in results.values()) >= 8
    assert any(k["training"].get("adapter", {}).get("kind") == "lora" for k in knobs)
    assert any(k["training"].get("adapter", {}).get("kind") == "qlora" for k in knobs)
    assert any("adapter" not in k["training"] and k["model"]["name"].startswith("llama") for k in knobs)  # full FT
    assert any(c.get("n_gpus", 1) > 1 and c["scenario"]["training"].get("sharding") == "zero3" for c in cases)
    assert any(k["model"].get("attention") == "eager" and k["training"]["precisions"] == ["fp32"] for k in knobs)
    assert any(k["model"]["name"] == "vit_b16" for k in knobs)
    # a ViT and a CNN at AMP each with a published figure inside its tolerance (not only a verdict)
    for case, family_name in (("rasbt-vit-l16-amp-b64", "vit_l16_cls10"), ("mmcls-v100x8-resnet50-fp16-b32", "resnet50")):
        r = results[case]
        assert r.published_gib is not None and abs(r.error) <= memory_report.TOLERANCE[r.figure], case
        assert [c for c in cases if c["id"] == case][0]["scenario"]["model"]["name"] == family_name
        assert [c for c in cases if c["id"] == case][0]["scenario"]["training"]["precisions"] == ["fp16"]
    # out-of-memory rows next to a row of the same configuration that ran (a boundary): LitGPT Llama 2 7B b2/b4
    # and 13B b1/b2 on the A100 40GB; FSDP Llama 2 13B on 4 GPUs ran / on 2 OOM and Falcon 40B on 4 OOM (known
    # misses until the model counts FSDP no_sync's full-base gradient)
    oom = [r for r in results.values() if not r.ran]
    assert len(oom) >= 6
    # a wrong verdict is allowed only as a strict known miss (each with its reason above)
    wrong = {r.case for r in results.values() if r.fits != r.ran} - set(KNOWN_MISSES)
    assert not wrong, wrong


def test_fit_oom_boundaries_are_predicted_right(results):
    """Issue 16: at least 6 published fit/OOM boundaries (a configuration that ran and the next that ran out of
    memory), both sides right. The timm RTX 3090 failures are inferred from benchmark.py's retry ladder (unit
    oom_inferred): every such case says so, and it is estimated as a plan estimates it."""
    pairs = memory_report.boundaries(list(results.values()))
    assert len(pairs) >= 6 and all(ok for _, _, ok in pairs), pairs
    cases = {c["id"]: c for c in memory_report.load_cases()}
    inferred = [r for r in results.values() if r.inferred]
    assert len(inferred) >= 3
    for r in inferred:
        assert not r.ran and "INFERRED" in cases[r.case]["why"] and cases[r.case].get("estimate") == "plan"
    for case in ("timm-3090-resnet101-amp-b256", "timm-3090-resnet152-amp-b192"):  # CNNs: the traced line
        assert results[case].estimate.source.kind == "traced" and results[case].published_gib is None


def test_fsdp_oom_is_decided_by_no_sync_not_by_a_margin(results):
    # LitGPT's FSDP run on 4 x A10G: no_sync keeps the full bf16 gradients (2 B x 6.74e9 = 12.55 GiB) on every GPU
    # through the accumulation micro-steps; with them the allocated peak alone passes the 22.5 GiB card.
    r = results["litgpt-a10g-llama2-7b-fsdp4-ckpt-b4-oom"]
    assert r.estimate.phase == "backward"
    assert r.estimate.grads / 2**30 == pytest.approx(2 * 6_738_415_616 / 2**30, rel=0.01)
    assert r.estimate.allocated_peak > r.estimate.capacity


def test_the_fragmentation_constant_is_the_fit_on_the_fit_half(results):
    fitted, used = memory_report.fit_reserved_fraction(list(results.values()))
    assert used and all(results[c].half == "fit" for c in used)
    assert memory_report.RESERVED_OVER_CHURNED == fitted, \
        "planner/engine/memory.py RESERVED_OVER_CHURNED differs from calibration/memory_report.py's fit: update it"


def test_the_borderline_band_is_the_held_out_p90(results):
    """Issue 33: one notion of "tight": the band around the capacity is the memory model's held-out error (the check
    half's 90th percentile absolute error, capped at 10%), and the planner's constant is that fit."""
    assert memory_report.BORDERLINE_FRACTION == memory_report.borderline_fraction(list(results.values()))
    assert 0 < memory_report.BORDERLINE_FRACTION <= 0.10


def test_a_borderline_verdict_is_right_only_inside_its_band(results):
    borderline = [r for r in results.values() if r.estimate.verdict == "borderline"]
    assert borderline, "published runs within the band of their card's capacity (LitGPT's 13B LoRA on 40 GB)"
    for r in borderline:
        assert abs(r.estimate.total - r.estimate.capacity) <= memory_report.BORDERLINE_FRACTION * r.estimate.capacity
        if r.published_gib is None:  # a status row: the run's own total is unknown, so the band cannot be checked
            assert not memory_report.verdict_right(r), r.case
    # LitGPT's 13B LoRA on an A100 40GB: 35.50 GB allocated published, device total inside 40 ± 3.2 GiB: right.
    assert memory_report.verdict_right(results["litgpt-a100-llama2-13b-lora-b1"])
    # Answer.AI's QLoRA at batch 10 on 2 x RTX 3090: planned 22.1 GiB reserved (borderline on 24), published 20.97: the
    # run's device total sits under the band, so the borderline verdict is counted wrong.
    r = results["aai-3090x2-llama2-7b-qlora-fsdp-b10"]
    assert r.estimate.verdict == "borderline" and not memory_report.verdict_right(r)


def test_known_misses_name_real_cases():
    assert set(KNOWN_MISSES) <= set(CASE_IDS)


def test_every_case_names_exactly_one_corpus_row():
    rows, problems = memory_report.check_corpus(memory_report.CORPUS)
    assert not problems
    for case in memory_report.load_cases():
        row = memory_report.find_row(rows, case["row"], case["gpu"])
        assert row.unit == case["row"]["unit"]
        assert case["half"] in ("fit", "check") and case["why"]


def test_the_readme_table_is_the_report(results):
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- memory-table:start -->\n(.*?)<!-- memory-table:end -->", text, re.S)
    assert found, "README.md: no memory table between <!-- memory-table:start --> and <!-- memory-table:end -->"
    ordered = [results[c] for c in CASE_IDS]
    assert found.group(1).strip().splitlines() == memory_report.table_lines(ordered), \
        "README.md memory table is stale: paste `.venv/bin/python calibration/memory_report.py`"


def test_the_readme_loso_table_is_the_report(results):
    """Issue 33: leave-one-source-out next to the in-sample figures, in the README as the report prints it."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- memory-loso:start -->\n(.*?)<!-- memory-loso:end -->", text, re.S)
    assert found, "README.md: no LOSO table between <!-- memory-loso:start --> and <!-- memory-loso:end -->"
    ordered = [results[c] for c in CASE_IDS]
    assert found.group(1).rstrip("\n").splitlines() == memory_report.loso_table_lines(ordered), \
        "README.md LOSO table is stale: paste the last table of `.venv/bin/python calibration/memory_report.py`"


def test_loso_predicts_each_source_with_constants_fitted_without_it(results):
    ordered = [results[c] for c in CASE_IDS]
    folds = memory_report.loso(ordered)
    assert {f.source for f in folds} == {r.source_slug for r in ordered}
    assert sorted(r.case for f in folds for r in f.results) == sorted(CASE_IDS)
    for fold in folds:
        others = [r for r in ordered if r.source_slug != fold.source]
        implied = [x for r in others if (x := memory_report.implied_reserved_fraction(r)) is not None]
        assert fold.reserved_over_churned == round(memory_report.statistics.median(implied), 2)
        assert 0 < fold.band <= 0.10
        for r in fold.results:
            assert r.source_slug == fold.source and r.band == fold.band
            est = r.estimate
            assert est.fragmentation == pytest.approx(fold.reserved_over_churned * est.churned)
    # The LOSO figures are those of the refitted predictions, not the in-sample ones.
    held = memory_report.loso_results(folds, ordered)
    figures = memory_report.accuracy(held, memory_report.boundaries(held))
    assert figures["cases"] == len(ordered)
    assert figures["verdicts_right"] == sum(memory_report.verdict_right(r) for r in held)


def test_with_the_shipped_constants_nothing_moves(results):
    for r in results.values():
        same = memory_report.with_constants(r, reserved_over_churned=memory_report.RESERVED_OVER_CHURNED,
                                            band=memory_report.BORDERLINE_FRACTION)
        assert same.predicted_gib == pytest.approx(r.predicted_gib) and same.verdict == r.verdict
        assert same.fits == r.fits
