"""Step-time formulas (docs/methods.md#step-time), each checked against a hand calculation written out in the test."""

from __future__ import annotations

import pytest

from planner.engine import steptime as st
from planner.engine.estimates import Source, TimePoint
from tests.notes_support import detail_en, english, texts, texts_of_triple  # noqa: F401

# Published figures used below (reference/gpu_reference.md, dense): A100 SXM 80GB bf16 312 TFLOPS, 2039 GB/s;
# H100 SXM bf16 989.4 TFLOPS, 3350 GB/s.
A100_PEAK, A100_BW = 312.0, 2039.0
H100_PEAK, H100_BW = 989.4, 3350.0
A100_TO_H100 = {"peak_a_tflops": A100_PEAK, "peak_b_tflops": H100_PEAK, "bw_a_gb_s": A100_BW, "bw_b_gb_s": H100_BW}
RN50_FLOPS_PER_SAMPLE = 2.46e10  # docs/methods.md#step-time: 4.1 G MACs forward -> ≈ 2.46e10 per training sample


def points(*pairs, label="run.json (2026-01-02)"):
    return [TimePoint(batch_size=b, step_time_s=t, label=label) for b, t in pairs]


# ---------------------------------------------------------------- FLOPs and compute factor

def test_flops_per_step_is_per_sample_times_batch():
    # 2.46e10 × 256 = 6.2976e12
    assert st.flops_per_step(RN50_FLOPS_PER_SAMPLE, 256) == pytest.approx(6.2976e12)


@pytest.mark.parametrize(
    ("checkpointing", "f_t", "expected"),
    [
        (False, 1.0, 1.0),  # (1 + 2) / 3
        (True, 1.0, 4 / 3),  # (1 + 1 + 2) / 3: one recomputed forward
        (False, 0.0, 2 / 3),  # everything frozen: backward = 1 forward (data grads only) -> (1 + 1) / 3
        (False, 0.5, 2.5 / 3),  # (1 + 1.5) / 3
        (True, 0.25, 3.25 / 3),  # (1 + 1 + 1.25) / 3
    ],
)
def test_compute_factor(checkpointing, f_t, expected):
    assert st.compute_factor(checkpointing, f_t) == pytest.approx(expected)


def test_compute_factor_rejects_fraction_outside_0_1():
    with pytest.raises(ValueError):
        st.compute_factor(False, 1.5)


# ---------------------------------------------------------------- line fit

def test_fit_recovers_an_exact_line():
    # t = 10 ms + 1 ms × b
    t0, c = st.fit_time_line([(32, 0.042), (64, 0.074), (128, 0.138)])
    assert t0 == pytest.approx(0.010)
    assert c == pytest.approx(0.001)


def test_fit_clamps_a_negative_intercept_to_the_origin_fit():
    # Least squares through (10, 0.5), (20, 1.5): c = 0.1, t0 = -0.5 < 0 -> through the origin:
    # c = Σ b·t / Σ b² = (10·0.5 + 20·1.5) / (100 + 400) = 35 / 500 = 0.07
    assert st.fit_time_line([(10, 0.5), (20, 1.5)]) == pytest.approx((0.0, 0.07))


def test_fit_one_batch_is_proportional_and_negative_slope_is_flat():
    assert st.fit_time_line([(64, 0.128)]) == pytest.approx((0.0, 0.002))  # 0.128 / 64
    assert st.fit_time_line([(10, 2.0), (20, 1.0)]) == pytest.approx((1.5, 0.0))  # mean t, no slope


# ---------------------------------------------------------------- measured / interpolated / extrapolated

def test_exact_batch_is_measured_with_its_label():
    t, source, band = st.measured_micro_step(points((32, 0.05), (64, 0.09)), 64)
    assert t == 0.09
    assert source.kind == "measured" and "run.json" in detail_en(source)
    assert band == pytest.approx((0.09 / 1.03, 0.09 * 1.03))


def test_no_points_gives_none():
    assert st.measured_micro_step([], 32) is None


LINE = ((64, 0.004 + 0.0005 * 64), (128, 0.004 + 0.0005 * 128))  # t = 4 ms + 0.5 ms × b: 36 ms, 68 ms


def test_interpolation_at_exactly_1_25x_the_largest_batch():
    # 1.25 × 128 = 160: still interpolated. t = 0.004 + 0.0005 × 160 = 0.084; two points fit exactly -> ±5%
    t, source, band = st.measured_micro_step(points(*LINE, label="a.json (2026-01-01)"), 160)
    assert source.kind == "interpolated"
    assert t == pytest.approx(0.084)
    assert band == pytest.approx((0.084 / 1.05, 0.084 * 1.05))
    assert "64, 128" in detail_en(source) and "a.json" in detail_en(source)


def test_extrapolation_just_past_1_25x_says_how_far():
    # 161 > 160: extrapolated. t = 0.004 + 0.0005 × 161 = 0.0845; half-width 0.15 × 161/160 = 0.1509375
    t, source, band = st.measured_micro_step(points(*LINE), 161)
    assert source.kind == "extrapolated"
    assert t == pytest.approx(0.0845)
    assert "1.26× the largest measured (128)" in detail_en(source)
    assert band == pytest.approx((0.0845 / 1.1509375, 0.0845 * 1.1509375))


def test_extrapolation_band_grows_with_distance():
    # b = 512: 512 / 160 = 3.2 -> half-width 0.15 × 3.2 = 0.48
    t, source, band = st.measured_micro_step(points(*LINE), 512)
    assert t == pytest.approx(0.004 + 0.0005 * 512)
    assert band[1] / t == pytest.approx(1.48)
    assert "4.00×" in detail_en(source)


def test_below_the_smallest_batch_over_1_25_is_extrapolated():
    # 64 / 1.25 = 51.2: batch 52 interpolates, batch 51 extrapolates
    assert st.measured_micro_step(points(*LINE), 52)[1].kind == "interpolated"
    assert st.measured_micro_step(points(*LINE), 51)[1].kind == "extrapolated"


def test_interpolation_band_comes_from_fit_residuals_when_above_5_percent():
    # Fit over (10, 1.0), (20, 2.2), (30, 3.0): mean b 20, mean t 2.0667, Sxx = 200,
    # Sxy = (-10)(1.0 - 2.0667) + (10)(3.0 - 2.0667) = 20 -> c = 0.1, t0 = 2.0667 - 2.0 = 0.0667.
    # Residuals: (2.2 - 2.0667)/2.0667 = 0.0645 is the largest (> 5%).
    pts = points((10, 1.0), (20, 2.2), (30, 3.0))
    t, source, band = st.measured_micro_step(pts, 25)
    t_expected = 0.2 / 3 + 0.1 * 25
    half = (2.2 - (0.2 / 3 + 2.0)) / (0.2 / 3 + 2.0)
    assert t == pytest.approx(t_expected)
    assert source.kind == "interpolated"
    assert band == pytest.approx((t_expected / (1 + half), t_expected * (1 + half)))


def test_one_measured_batch_scales_proportionally_with_a_wide_band():
    # 0.032 s at batch 32 -> batch 128: 0.032 × 128/32 = 0.128; with up to 25% of the step at 32 fixed:
    # 0.032 × (0.25 + 0.75 × 4) = 0.104; band [0.104, 0.128] with a ±15% margin
    t, source, band = st.measured_micro_step(points((32, 0.032)), 128)
    assert t == pytest.approx(0.128)
    assert source.kind == "extrapolated" and "prior: no fixed per-step part" in detail_en(source)
    assert band == pytest.approx((0.104 / 1.15, 0.128 * 1.15))
    # Down to batch 2: 0.032 × 2/32 = 0.002; all of the prior's fixed share: 0.032 × (0.25 + 0.75/16) = 0.0095
    t, _, band = st.measured_micro_step(points((32, 0.032)), 2)
    assert t == pytest.approx(0.002)
    assert band == pytest.approx((0.002 / 1.15, 0.032 * (0.25 + 0.75 / 16) * 1.15))


# ---------------------------------------------------------------- transfer A100 -> H100

def test_transfer_low_mfu_cnn_scales_mostly_with_bandwidth():
    # ResNet-50 at b = 256 (AMP) on A100: t_A = 0.104 s (≈ 2470 img/s, DeepLearningExamples), t0 = 4 ms.
    f = RN50_FLOPS_PER_SAMPLE * 256  # 6.2976e12
    t_prime = 0.104 - 0.004  # 0.100
    compute_a = f / (0.75 * 312e12)  # 0.0269128 < t' -> c_A
    memory_a = t_prime - compute_a  # 0.0730872
    t_b_expected = 0.004 + f / (0.75 * 989.4e12) + memory_a * 2039 / 3350  # 0.004 + 0.0084867 + 0.0444849
    t_b, band = st.transfer_micro_step(0.104, t0_s=0.004, flops_per_step=f, **A100_TO_H100)
    assert t_b == pytest.approx(t_b_expected)
    assert t_b == pytest.approx(0.05697, rel=1e-3)
    # band: t0 + t'·[P_A/P_B = 0.31534, BW_A/BW_B = 0.60866] = [0.035534, 0.064866]
    assert band == pytest.approx((0.004 + 0.1 * 312 / 989.4, 0.004 + 0.1 * 2039 / 3350))
    assert band[0] <= t_b <= band[1]
    speedup = 0.104 / t_b  # 1.83×: near the bandwidth ratio 1.64, far from the peak ratio 3.17
    assert abs(speedup - 3350 / 2039) < abs(speedup - 989.4 / 312)


def test_transfer_matmul_bound_model_scales_mostly_with_peak():
    # A decoder at ≈ 70% MFU on A100: t_A = 1.0 s, t0 = 0.01 s, F = 0.7 × 312e12 × 0.99 = 2.16216e14
    f = 0.7 * 312e12 * 0.99
    compute_a = f / (0.75 * 312e12)  # 0.924 s
    memory_a = 0.99 - compute_a  # 0.066 s
    t_b_expected = 0.01 + f / (0.75 * 989.4e12) + memory_a * 2039 / 3350  # 0.01 + 0.29138 + 0.04017
    t_b, band = st.transfer_micro_step(1.0, t0_s=0.01, flops_per_step=f, **A100_TO_H100)
    assert t_b == pytest.approx(t_b_expected)
    assert t_b == pytest.approx(0.34155, rel=1e-3)
    speedup = 1.0 / t_b  # 2.93×: near the peak ratio 3.17
    assert abs(speedup - 989.4 / 312) < abs(speedup - 3350 / 2039)
    assert band[0] <= t_b <= band[1]


def test_transfer_band_is_widened_to_contain_t_b():
    # A at 90% of peak (above η): F/(η·P_A) = 0.9e14 / 0.75e14 = 1.2 > t' = 1 -> c_A = t', no memory part;
    # t_B = F/(η·P_B) = 0.9e14 / (0.75 × 200e12) = 0.6. Pure ratios: 1 × [100/200, 1000/3000] = [0.333, 0.5].
    t_b, band = st.transfer_micro_step(1.0, t0_s=0.0, flops_per_step=0.9e14, peak_a_tflops=100.0,
                                       peak_b_tflops=200.0, bw_a_gb_s=1000.0, bw_b_gb_s=3000.0)
    assert t_b == pytest.approx(0.6)
    assert band == pytest.approx((1 / 3, 0.6))


def test_transfer_rejects_non_positive_peaks():
    with pytest.raises(ValueError):
        st.transfer_micro_step(1.0, t0_s=0.0, flops_per_step=1e12, peak_a_tflops=0.0, peak_b_tflops=100.0,
                               bw_a_gb_s=1.0, bw_b_gb_s=1.0)


# ---------------------------------------------------------------- analytic and default MFU

def test_analytic_micro_step():
    # F / (P × MFU) = 6.2976e12 / (312e12 × 0.2) = 0.100923 s
    assert st.analytic_micro_step(6.2976e12, 312.0, 0.2) == pytest.approx(6.2976e12 / 62.4e12)


def test_default_mfu_cnn_matches_deeplearningexamples_resnet50():
    # NVIDIA DeepLearningExamples PyTorch RN50 v1.5 README, 1× A100 80GB AMP: 2470 img/s.
    # 2470 × 2.46e10 / 312e12 = 0.1948; tolerance 0.02 (the default is rounded).
    assert st.default_mfu("cnn", "bf16") == pytest.approx(2470 * 2.46e10 / 312e12, abs=0.02)
    # Same README, 1× V100 16GB FP32: 367 img/s -> 367 × 2.46e10 / 15.7e12 = 0.575 of the CUDA-core peak.
    assert st.default_mfu("cnn", "fp32") == pytest.approx(367 * 2.46e10 / 15.7e12, abs=0.05)


def test_default_mfu_decoder_matches_nanogpt_and_table_shape():
    # nanoGPT GPT-2 124M, 4 days on 8×A100 (README; karpathy/nanoGPT#182): ≈ 0.29 of bf16 peak; tolerance 0.03.
    assert st.default_mfu("decoder", "bf16") == pytest.approx(0.29, abs=0.03)
    assert st.default_mfu("decoder", "fp32") > st.default_mfu("decoder", "bf16")  # CUDA-core peak is far lower
    assert st.default_mfu("unknown-family", "fp16") == st.default_mfu("custom", "fp16")
    for family, row in st.DEFAULT_MFU.items():
        assert all(0 < m <= 1 for m in row), family
    with pytest.raises(ValueError):
        st.default_mfu("cnn", "fp8")


# ---------------------------------------------------------------- optimizer and input

def test_optimizer_bytes_match_estimation_md():
    assert st.optimizer_bytes_per_param("adamw", "foreach") == 80  # docs/methods.md#step-time
    assert st.optimizer_bytes_per_param("adamw", "fused") == 28
    # 80 = mul_(p) 8 + lerp_(m, g) 12 + mul_(v) 8 + addcmul_(v, g, g) 12 + sqrt 8 + div_ 8 + add_ 8 + addcdiv_ 16
    assert 8 + 12 + 8 + 12 + 8 + 8 + 8 + 16 == 80


def test_optimizer_step_time_on_a100():
    # 124e6 params × 80 B = 9.92e9 B; / (0.8 × 2039e9 B/s = 1.6312e12) = 6.0814 ms
    assert st.optimizer_step_s(124_000_000, "adamw", "foreach", 2039.0) == pytest.approx(9.92e9 / 1.6312e12)
    # fused: 124e6 × 28 = 3.472e9 B -> 2.1285 ms; ZeRO over 8 shards: / 8
    assert st.optimizer_step_s(124_000_000, "adamw", "fused", 2039.0) == pytest.approx(3.472e9 / 1.6312e12)
    assert st.optimizer_step_s(124_000_000, "adamw", "fused", 2039.0, n_shards=8) == pytest.approx(
        3.472e9 / 1.6312e12 / 8)
    with pytest.raises(ValueError):
        st.optimizer_step_s(1, "lion", "foreach", 1000.0)


def test_input_time():
    assert st.input_time_s(256, 0.004, 8) == pytest.approx(0.128)  # 256 × 4 ms / 8 workers
    assert st.input_time_s(256, 0.004, 0) == pytest.approx(1.024)  # 0 workers: the main process alone
    assert st.input_time_s(256, None, 8) is None


# ---------------------------------------------------------------- assembling one step

SRC = Source("analytic")


def test_assemble_single_micro_step_adds_optimizer_and_comm():
    # 100 ms fwd+bwd + 10 ms optimizer + 5 ms exposed comm = 115 ms; 256 samples / 0.115 s = 2226.1 /s
    est = st.assemble_step(0.100, (0.09, 0.11), SRC, grad_accum=1, optimizer_s=0.010, samples_per_step=256,
                           exposed_comm_s=0.005)
    assert est.step_time_s == pytest.approx(0.115)
    assert est.samples_per_s == pytest.approx(256 / 0.115)
    assert est.band_s == pytest.approx((0.105, 0.125))
    assert est.compute_step_time_s == pytest.approx(0.110)
    assert est.exposed_comm_s == 0.005 and est.source == SRC


def test_assemble_accumulation_counts_a_measured_optimizer_once():
    # measured 100 ms at accumulation 1 includes a 10 ms optimizer: k = 4 -> 4 × (100 - 10) + 10 = 370 ms
    est = st.assemble_step(0.100, (0.095, 0.105), SRC, grad_accum=4, optimizer_s=0.010, samples_per_step=1024,
                           optimizer_included=True)
    assert est.step_time_s == pytest.approx(0.370)
    assert est.micro_step_time_s == pytest.approx(0.090)
    # band: 4 × (95 - 10) + 10 = 350 ms; 4 × (105 - 10) + 10 = 390 ms
    assert est.band_s == pytest.approx((0.350, 0.390))
    assert any("counted once" in n for n in texts(est.notes))


def test_assemble_accumulation_with_separate_optimizer():
    # fwd+bwd 100 ms (band 90-110), k = 4, optimizer 10 ms: 410 ms (370-450)
    est = st.assemble_step(0.100, (0.09, 0.11), SRC, grad_accum=4, optimizer_s=0.010, samples_per_step=1024,
                           notes=["given"])
    assert est.step_time_s == pytest.approx(0.410)
    assert est.band_s == pytest.approx((0.370, 0.450))
    assert est.notes == ("given",)


def test_assemble_input_bound_note_quotes_both_numbers():
    # 12 ms compute, loading 32 × 0.01025 s / 8 = 41 ms per micro-step -> step = max(12, 41) = 41 ms
    input_s = st.input_time_s(32, 0.01025, 8)
    est = st.assemble_step(0.012, (0.011, 0.013), SRC, grad_accum=1, optimizer_s=0.0, samples_per_step=32,
                           input_s=input_s)
    assert est.step_time_s == pytest.approx(0.041)
    assert est.input_time_s == pytest.approx(0.041)
    assert any(n.startswith("input-bound: loading 41 ms vs compute 12 ms per step") for n in texts(est.notes))
    # Input-bound at both ends of the compute band: the range is the loading figure's assumed +10% (issue 15: no
    # range has zero width; it used to be (0.041, 0.041)), never below the loading itself (issue 32: no low end
    # under the input floor; it was ±10%, so an input-bound option's low end fell under the floor others clamp to).
    assert est.band_s == pytest.approx((0.041, 0.041 * 1.1))
    assert est.band_meaning == "assumed"


def test_assemble_main_process_loading_adds():
    # no workers: 12 ms compute + 41 ms loading = 53 ms
    est = st.assemble_step(0.012, (0.012, 0.012), SRC, grad_accum=1, optimizer_s=0.0, samples_per_step=32,
                           input_s=0.041, input_overlaps=False)
    assert est.step_time_s == pytest.approx(0.053)
    assert any("main process" in n for n in texts(est.notes))


def test_assemble_not_input_bound_has_no_note():
    est = st.assemble_step(0.050, (0.05, 0.05), SRC, grad_accum=2, optimizer_s=0.0, samples_per_step=64, input_s=0.010)
    assert est.step_time_s == pytest.approx(0.100)  # 2 × 50 ms; loading 2 × 10 ms overlaps
    assert not texts(est.notes)


def test_a_duration_is_said_in_ms_below_a_second_and_in_s_above():
    """A duration travels as raw seconds; present/ says it (the catalog's `duration` format) in each language."""
    from planner.present.notes import number_in

    assert number_in(0.041, "duration", "en") == "41 ms"
    assert number_in(0.00123, "duration", "en") == "1.23 ms"
    assert number_in(2.5, "duration", "en") == "2.5 s"
    assert number_in(0.00123, "duration", "es-AR") == "1,23 ms"
    assert number_in(1234.5, "duration", "es-AR") == "1,23e+03 s"


# ---------------------------------------------------------------- launch floor, micro-batch monotonicity (issue 15)

def test_launch_time_is_kernels_times_the_cited_per_op_cost():
    # 46 traced bf16 aten ops (small_cnn forward + backward, results/traced/) × 5 µs = 0.23 ms
    assert st.launch_s(46) == pytest.approx(46 * 5e-6)
    assert st.LAUNCH_S_PER_OP == 5e-6
    with pytest.raises(ValueError):
        st.launch_s(-1)


def test_transformer_op_count_per_layer_reproduces_the_traces_it_was_read_from():
    # fixed + per layer × layers: the mean of the GPT-2 and BERT pairs, so each trace is within its half-difference
    for layers, traced in ((12, 393), (24, 765), (12, 518), (24, 998)):  # fp32 GPT-2, GPT-2 medium, BERT b/l
        assert st.transformer_aten_ops(layers, "fp32") == pytest.approx(traced, rel=0.2)
    assert st.transformer_aten_ops(12, "bf16") > st.transformer_aten_ops(12, "fp32")  # autocast's casts


def _monotone_in_batch(times_by_batch: dict[int, float]) -> None:
    """Step time never falls as the micro-batch grows, and time per sample never rises."""
    batches = sorted(times_by_batch)
    for a, b in zip(batches, batches[1:], strict=False):
        ta, tb = times_by_batch[a], times_by_batch[b]
        assert tb >= ta * (1 - 1e-12), (a, ta, b, tb)
        assert tb / b <= ta / a * (1 + 1e-12), (a, ta, b, tb)


BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def test_interpolated_and_extrapolated_times_are_monotone_in_the_micro_batch():
    # noisy measured points (not on one line): every batch that is not itself measured reads the fit
    series = st.time_series(points((32, 0.030), (64, 0.049), (128, 0.101), (256, 0.190)))
    measured = {32, 64, 128, 256}
    _monotone_in_batch({b: st.measured_micro_step(series, b)[0] for b in BATCHES if b not in measured})
    one = st.time_series(points((64, 0.05)))  # one batch: proportional
    _monotone_in_batch({b: st.measured_micro_step(one, b)[0] for b in BATCHES})


def test_transferred_times_are_monotone_in_the_micro_batch():
    series = st.time_series(points((32, 0.030), (64, 0.049), (128, 0.101), (256, 0.190)))
    times = {}
    for b in BATCHES:
        t_a = st.measured_micro_step(series, b)[0]
        times[b] = st.transfer_micro_step(t_a, t0_s=min(series.line[0], t_a),
                                          flops_per_step=RN50_FLOPS_PER_SAMPLE * b, **A100_TO_H100)[0]
    _monotone_in_batch(times)


# Plan-level: the shipped inputs (published corpus + the zoo's traces), one GPU, global batch = micro-batch.

@pytest.fixture(scope="module")
def corpus():
    from pathlib import Path

    from planner.inputs.folders import load_inputs
    root = Path(__file__).resolve().parent.parent
    return load_inputs([root / "results" / "published", root / "results" / "traced"], include_user_data=False)


def _step(corpus, model: str, gpu: str, batch: int, *, precision: str = "bf16", optimizer: str = "adamw",
          results=None):
    import dataclasses

    from planner.engine.step_ladder import step_estimate
    from planner.inputs.scenario import parse_scenario
    scenario = parse_scenario({
        "schema": "trainplan.scenario/1", "name": "monotone", "model": {"name": model},
        "training": {"global_batch": batch, "micro_batch": batch, "precisions": [precision], "optimizer": optimizer},
        "workload": {"dataset_samples": 1000, "epochs": 1}, "hardware": {"gpus": [gpu], "gpu_counts": [1]}}, "t")
    inputs = corpus if results is None else dataclasses.replace(corpus, results=results)
    return step_estimate(scenario, inputs, gpu_id=gpu, precision=precision, micro_batch=batch)


def test_a_tiny_model_has_a_per_step_floor_of_its_kernel_launches(corpus):
    # small_cnn (CIFAR-sized, 0.5 M parameters) at 32 per GPU on an H100: the roofline alone says microseconds; the
    # host cannot launch its traced kernels faster than ops × 5 µs. bf16 takes the best of bf16/tf32/fp32, so the
    # floor is the smallest traced count (fp32: 27 forward+backward ops, results/traced/small-cnn-*.json).
    step = _step(corpus, "small_cnn", "h100-sxm-80gb", 32, optimizer="sgd_momentum")
    assert step.source.kind == "analytic"
    assert step.micro_step_time_s >= 27 * st.LAUNCH_S_PER_OP
    assert "traced aten ops" in detail_en(step.source)
    # 200 epochs of CIFAR-10 (50,000 images) at 32: tens of seconds at least, not the 2.5 s the roofline alone gave
    assert 200 * 50_000 / 32 * step.step_time_s > 40


def test_resnet50_at_32_per_gpu_is_bound_by_its_launches_without_measurements(corpus):
    traced_only = tuple(r for r in corpus.results if r.is_traced)
    step = _step(corpus, "resnet50", "h100-sxm-80gb", 32, optimizer="sgd_momentum", results=traced_only)
    assert step.source.kind == "analytic"
    assert step.micro_step_time_s >= 408 * st.LAUNCH_S_PER_OP  # fp32's traced count, the smallest (≈ 2 ms)


@pytest.mark.parametrize(("model", "gpu", "optimizer", "kind"), [
    ("small_cnn", "h100-sxm-80gb", "sgd_momentum", "analytic"),  # launch floor, then the roofline
    ("gpt2", "a100-sxm-80gb", "adamw", "analytic"),  # traced op count, activation traffic
    ("resnet50", "l4-24gb", "sgd_momentum", "transferred"),  # several published GPUs combined
    ("bert_large_squad", "l4-24gb", "adamw", "transferred"),  # ops per layer from the typed shape
])
def test_plan_step_time_is_monotone_in_the_micro_batch(corpus, model, gpu, optimizer, kind):
    steps = {b: _step(corpus, model, gpu, b, optimizer=optimizer) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)}
    assert {s.source.kind for s in steps.values()} == {kind}
    _monotone_in_batch({b: s.step_time_s for b, s in steps.items()})


def test_a_transfer_combines_every_published_gpu_weighted_by_distance(corpus):
    from planner.engine.step_transfer import combined_seconds, transfer_weight

    step = _step(corpus, "resnet50", "l4-24gb", 256, optimizer="sgd_momentum")
    detail = detail_en(step.source)
    assert step.source.kind == "transferred" and "weighted geometric mean of" in detail
    assert "NVIDIA A100" in detail and "NVIDIA H100" in detail and "weight" in detail
    # the nearer GPU weighs more; a source within the target's architecture group twice as much
    near = transfer_weight(peak_ratio=1.2, bandwidth_ratio=1.1, same_group=False)
    far = transfer_weight(peak_ratio=8.0, bandwidth_ratio=10.0, same_group=False)
    assert near > far and transfer_weight(peak_ratio=1.2, bandwidth_ratio=1.1, same_group=True) == 2 * near
    assert combined_seconds([1.0, 4.0], [1.0, 1.0]) == pytest.approx(2.0)  # geometric, not arithmetic
    assert combined_seconds([1.0, 4.0], [3.0, 1.0]) == pytest.approx(4.0 ** 0.25)
