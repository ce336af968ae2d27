"""Data-parallel formulas (docs/methods.md#multi-gpu), each checked against a hand calculation written out in the test."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from planner.engine import scaling as sc
from planner.engine.estimates import Source
from planner.engine.option import OptionPlan
from planner.inputs.scenario import Hardware, TrainingSetup
from tests.notes_support import detail_en


@dataclass(frozen=True)
class FakeLink:
    kind: str
    bidirectional_gb_per_s: float

    @property
    def per_direction_gb_per_s(self) -> float:
        return self.bidirectional_gb_per_s / 2


@dataclass(frozen=True)
class FakeGpu:
    id: str
    name: str = "fake"
    memory_bandwidth_gb_per_s: float = 1000.0
    interconnect: FakeLink | None = None
    pcie_gen: int | None = None
    tdp_w: float = 300.0
    vendor: str = "nvidia"

    def peak_tflops_for(self, precision):
        return 100.0

    def supports(self, precision):
        return True


# Interconnect figures from reference/gpu_reference.md (bidirectional totals).
H100 = FakeGpu("h100-sxm-80gb", interconnect=FakeLink("nvlink4", 900.0), pcie_gen=5)
A100 = FakeGpu("a100-sxm-80gb", interconnect=FakeLink("nvlink3", 600.0), pcie_gen=4)
L40S = FakeGpu("l40s-48gb", pcie_gen=4)
A100_PCIE = FakeGpu("a100-pcie-80gb", interconnect=FakeLink("nvlink_bridge", 600.0), pcie_gen=4)


# ---------------------------------------------------------------- ring all-reduce

def test_ring_allreduce_hand_calculation():
    # S = 1 GB, n = 8, busbw 370 GB/s, α = 5 µs: 2·7/8 × 1e9 / 370e9 = 4.72973 ms; 2·7·5 µs = 70 µs
    assert sc.ring_allreduce_s(1e9, 8, 370.0, 5e-6) == pytest.approx(1.75 / 370 + 70e-6)
    assert sc.ring_allreduce_s(1e9, 1, 370.0) == 0.0


def test_ring_allreduce_inverts_nccl_tests_busbw():
    # nccl-tests PERFORMANCE.md: algbw = S / t, busbw = algbw × 2(n-1)/n. Without latency we get busbw back.
    for n in (2, 4, 8, 64):
        t = sc.ring_allreduce_s(256e6, n, 200.0, alpha_s=0.0)
        assert 256e6 / t * 2 * (n - 1) / n / 1e9 == pytest.approx(200.0)


def test_all_gather_is_half_an_all_reduce_without_latency():
    # all-gather/reduce-scatter: (n-1)/n × S / busbw; all-reduce = reduce-scatter + all-gather
    ag = sc.ring_all_gather_s(1e9, 8, 100.0, alpha_s=0.0)
    assert ag == pytest.approx(7 / 8 * 1e9 / 100e9)
    assert 2 * ag == pytest.approx(sc.ring_allreduce_s(1e9, 8, 100.0, alpha_s=0.0))


# ---------------------------------------------------------------- bus bandwidth

def _busbw(*args: object) -> tuple[float, str]:
    """effective_busbw_gb_s with its parts said in English."""
    busbw, parts = sc.effective_busbw_gb_s(*args)  # type: ignore[arg-type]
    return busbw, detail_en(Source("analytic", parts=parts))


def test_nvlink4_busbw_is_about_370():
    # docs/methods.md#multi-gpu: NVLink4 900 GB/s = 450 per direction, NCCL reaches ≈ 370. 450 × 0.82 = 369; tolerance 2%.
    busbw, text = _busbw(H100, 8, 8, 400.0)
    assert busbw == pytest.approx(370, rel=0.02)
    assert "450" in text and "nvlink4" in text


def test_a100_nvswitch_busbw_in_published_range():
    # docs/methods.md#multi-gpu: A100 NVSwitch ≈ 200–230 of 300. 300 × 0.72 = 216.
    busbw, _ = sc.effective_busbw_gb_s(A100, 8, 8, 200.0)
    assert 200 <= busbw <= 230


def test_pcie_gen4_busbw_in_published_range():
    # docs/methods.md#multi-gpu: PCIe Gen4 x16 ≈ 20–25 of 32. 32 × 0.7 = 22.4.
    busbw, text = _busbw(L40S, 4, 8, 100.0)
    assert busbw == pytest.approx(22.4)
    assert 20 <= busbw <= 25 and "Gen4" in text


def test_pcie_link_figure_from_the_profile_counts_lanes():
    # an x8 Gen4 card: 32 GB/s bidirectional = 16 per direction × 0.7 = 11.2
    x8 = FakeGpu("x8", interconnect=FakeLink("pcie4_x8", 32.0), pcie_gen=4)
    assert sc.effective_busbw_gb_s(x8, 2, 8, 100.0)[0] == pytest.approx(11.2)


def test_unknown_pcie_gen_assumes_gen3_and_says_so():
    busbw, text = _busbw(FakeGpu("x"), 2, 8, 100.0)
    assert busbw == pytest.approx(16 * 0.7)
    assert "unknown" in text


def test_nvlink_bridge_only_helps_pairs():
    pair, _ = sc.effective_busbw_gb_s(A100_PCIE, 2, 8, 100.0)
    four, text = _busbw(A100_PCIE, 4, 8, 100.0)
    assert pair == pytest.approx(300 * sc.NVLINK_EFFICIENCY)
    assert four == pytest.approx(22.4) and "pairs" in text


def test_inter_node_busbw_uses_the_aggregate_nic_bandwidth():
    # DGX-A100: 8 × 200 Gb/s = 200 GB/s per node; docs/methods.md#multi-gpu says it measures ≈ 192.
    # 0.93 × 200 = 186 < intra 216 -> 186; within 5% of 192.
    busbw, text = _busbw(A100, 16, 8, 200.0)
    assert busbw == pytest.approx(0.93 * 200)
    assert busbw == pytest.approx(192, rel=0.05)
    assert "2 nodes" in text
    # 8 × 400 Gb/s = 400 GB/s per node: 0.93 × 400 = 372 > intra 369 -> NVLink sets it
    busbw, text = _busbw(H100, 32, 8, 400.0)
    assert busbw == pytest.approx(450 * 0.82)
    assert "sets busbw" in text


def test_single_gpu_text_and_finite_figure():
    busbw, text = _busbw(H100, 1, 8, 400.0)
    assert "single GPU" in text and math.isfinite(busbw)


def test_one_gpu_per_node_is_nic_limited():
    # 4 nodes × 1 GPU, 50 GB/s per node: 0.93 × 50 = 46.5
    assert sc.effective_busbw_gb_s(H100, 4, 1, 50.0)[0] == pytest.approx(46.5)


# ---------------------------------------------------------------- bytes

@pytest.mark.parametrize(
    ("precision", "layout", "compression", "bytes_per_param"),
    [
        ("bf16", "torch_amp", None, 4),  # fp32 grads under AMP
        ("fp32", "torch_amp", None, 4),
        ("bf16", "torch_amp", "bf16", 2),  # bf16 compression hook halves it
        ("bf16", "zero_paper", None, 2),
        ("fp32", "zero_paper", None, 4),
        ("bf16", "pure_bf16", None, 2),
        ("fp16", "megatron", None, 2),  # Megatron "fp16 params + fp16 grads"
        ("bf16", "megatron", None, 4),  # Megatron "bf16 params + fp32 grads" (18 B row)
    ],
)
def test_grad_sync_bytes(precision, layout, compression, bytes_per_param):
    assert sc.grad_sync_bytes(1_000_000, precision, layout, compression) == bytes_per_param * 1_000_000


def test_grad_sync_bytes_rejects_unknown_layout():
    with pytest.raises(ValueError):
        sc.grad_sync_bytes(1, "bf16", "mystery")


# ---------------------------------------------------------------- DDP exposure

MIB25 = 25 * 2**20  # 26,214,400 B


def test_ddp_exposed_when_backward_is_short():
    # S = 100 MiB = 4 buckets; n = 8; busbw 100; α = 5 µs.
    # per bucket: 1.75 × 26,214,400 / 100e9 = 0.458752 ms + 14 × 5 µs = 0.528752 ms; total 2.115008 ms
    # backward 1 ms: exposed = max(0.528752, 2.115008 - 1) = 1.115008 ms
    exposed, total = sc.ddp_exposed_comm_s(4 * MIB25, 8, 100.0, backward_s=0.001)
    assert total == pytest.approx(4 * (1.75 * MIB25 / 100e9 + 70e-6))
    assert exposed == pytest.approx(total - 0.001)


def test_ddp_exposed_is_last_bucket_when_backward_hides_the_rest():
    # backward 10 ms > 2.115 ms: only the last bucket (0.528752 ms) is exposed; accumulation changes nothing
    exposed, _ = sc.ddp_exposed_comm_s(4 * MIB25, 8, 100.0, backward_s=0.010)
    assert exposed == pytest.approx(1.75 * MIB25 / 100e9 + 70e-6)
    four = sc.ddp_exposed_comm_s(4 * MIB25, 8, 100.0, backward_s=0.010, grad_accum=4)
    assert four == sc.ddp_exposed_comm_s(4 * MIB25, 8, 100.0, backward_s=0.010)


def test_ddp_partial_last_bucket_and_single_rank():
    # 30 MiB = one 25 MiB bucket + one 5 MiB bucket, each paying 70 µs of latency
    _, total = sc.ddp_exposed_comm_s(30 * 2**20, 8, 100.0, backward_s=1.0)
    assert total == pytest.approx(1.75 * 30 * 2**20 / 100e9 + 2 * 70e-6)
    assert sc.ddp_exposed_comm_s(30 * 2**20, 1, 100.0, backward_s=1.0) == (0.0, 0.0)


def test_fsdp_comm_hand_calculation():
    # Ψ = T = 1e9, 2 B params and grads, n = 8, busbw 100: all-gather 2e9 B: 7/8 × 2e9 / 100e9 = 17.5 ms
    # + 7 × 5 µs = 35 µs -> 17.535 ms; twice (fwd, bwd) + one reduce-scatter of the same size = 52.605 ms
    assert sc.fsdp_comm_s(10**9, 10**9, param_bytes=2.0, grad_bytes=2.0, n=8, busbw=100.0) == pytest.approx(
        3 * 0.017535)
    # With accumulation k the gathers repeat every micro-step, the reduce-scatter once: 2k + 1 collectives.
    assert sc.fsdp_comm_s(10**9, 10**9, param_bytes=2.0, grad_bytes=2.0, n=8, busbw=100.0,
                          grad_accum=4) == pytest.approx(9 * 0.017535)


# ---------------------------------------------------------------- measured ddp selection

def ddp(**overrides):
    section = {"backend": "nccl", "nnodes": 1, "nproc_per_node": 8, "gpu_profile_id": "h100-sxm-80gb",
               "step_time_1_s": 0.100, "step_time_n_s": 0.104, "efficiency": 0.96, "exposed_comm_s": 0.004,
               "busbw": [{"bytes": 26214400, "gb_per_s": 300.0}]}
    section.update(overrides)
    return section


def test_select_measured_ddp_only_on_matching_gpu_backend_and_layout():
    sections = [
        ("gloo.json", ddp(backend="gloo")),  # same GPU and layout, but gloo: never
        ("a100.json", ddp(gpu_profile_id="a100-sxm-80gb")),
        ("2x4.json", ddp(nnodes=2, nproc_per_node=4)),  # same count, other layout
        ("good.json", ddp()),
    ]
    assert sc.select_measured_ddp(sections, "h100-sxm-80gb", 8, 8)[0] == "good.json"
    assert sc.select_measured_ddp(sections[:3], "h100-sxm-80gb", 8, 8) is None
    assert sc.select_measured_ddp([("cpu.json", ddp(backend="gloo", gpu_profile_id=None))], "h100-sxm-80gb", 8, 8) \
        is None
    # 16 GPUs on 8-GPU nodes = 2 nodes × 8
    assert sc.select_measured_ddp([("16.json", ddp(nnodes=2))], "h100-sxm-80gb", 16, 8)[0] == "16.json"
    assert sc.select_measured_ddp([("16.json", ddp(nnodes=2))], "h100-sxm-80gb", 16, 16) is None


# ---------------------------------------------------------------- estimate_scaling

TRAINING = TrainingSetup(global_batch=256)  # adamw, torch_amp, no sharding
HW = Hardware(gpus_per_node=8, inter_node_gb_per_s=400.0)
RN50 = 25_557_032


def scale(n_gpus, training=TRAINING, *, params=RN50, micro_step_s=0.1, grad_accum=1, **kw):
    """estimate_scaling on n H100s in bf16, with T = Ψ = `params` (RN50 by default) and 100 ms micro-steps."""
    return sc.estimate_scaling(OptionPlan(H100, n_gpus, "bf16", grad_accum=grad_accum), training, HW,
                               trainable_params=params, params=params, micro_step_s=micro_step_s, **kw)


def test_estimate_scaling_single_gpu():
    est = scale(1)
    assert est.efficiency == 1.0 and est.exposed_comm_s == 0.0 and est.source.kind == "analytic"


def test_estimate_scaling_ddp_formula():
    # S = 4 × 25,557,032 = 102,228,128 B -> 4 buckets (3 × 26,214,400 + 23,584,928); busbw 450 × 0.82 = 369.
    # backward = 2/3 × 100 ms = 66.7 ms hides all but the last bucket:
    # exposed = 1.75 × 23,584,928 / 369e9 + 70 µs = 0.18185 ms; efficiency 0.1 / (0.1 + 0.00018185)
    est = scale(8)
    last = 4 * RN50 - 3 * MIB25
    exposed = 1.75 * last / 369e9 + 70e-6
    assert est.exposed_comm_s == pytest.approx(exposed)
    assert est.allreduce_s == pytest.approx(1.75 * 4 * RN50 / 369e9 + 4 * 70e-6)
    assert est.efficiency == pytest.approx(0.1 / (0.1 + exposed))
    assert est.formula_step_time_s == pytest.approx(0.1 + exposed)
    assert est.source.kind == "analytic" and "369 GB/s" in detail_en(est.source)


def test_estimate_scaling_uses_a_matching_measurement_and_keeps_the_formula():
    est = scale(8, measured_ddp=ddp(), measured_label="resnet50-ddp.json (2026-01-02)")
    assert est.source.kind == "measured" and "resnet50-ddp.json" in detail_en(est.source)
    assert est.exposed_comm_s == pytest.approx(0.004)
    assert est.efficiency == pytest.approx(0.1 / 0.104)  # t_1 / (t_1 + measured exposed)
    assert est.formula_step_time_s == pytest.approx(0.1 + 1.75 * (4 * RN50 - 3 * MIB25) / 369e9 + 70e-6)


def test_estimate_scaling_ignores_gloo_and_other_layouts():
    for section in (ddp(backend="gloo"), ddp(nnodes=2, nproc_per_node=4), ddp(gpu_profile_id="a100-sxm-80gb")):
        est = scale(8, measured_ddp=section)
        assert est.source.kind == "analytic"


def test_estimate_scaling_measured_exposed_from_step_times_when_not_given():
    section = ddp(exposed_comm_s=None, step_time_1_s=0.2, step_time_n_s=0.206)
    est = scale(8, measured_ddp=section)
    assert est.exposed_comm_s == pytest.approx(0.006)


def test_estimate_scaling_accumulation_and_optimizer_in_t1():
    # k = 4 micro-steps of 0.1 s + 10 ms optimizer: t_1 = 0.41 s; exposed as for k = 1
    one = scale(8)
    four = scale(8, grad_accum=4, optimizer_s=0.01)
    assert four.exposed_comm_s == pytest.approx(one.exposed_comm_s)
    assert four.formula_step_time_s == pytest.approx(0.41 + one.exposed_comm_s)


def test_estimate_scaling_zero3_volume():
    # ZeRO-3, torch_amp (fp32 params 4 B), Ψ = T = 1e9, n = 8 on one node (busbw 369), micro 1 s, k = 1:
    # all-gather 4e9 B: 7/8 × 4e9 / 369e9 + 35 µs; twice + reduce-scatter of 4e9 B grads = 3 × that.
    # compute 1 s hides all but the unoverlapped 10%.
    training = TrainingSetup(global_batch=256, sharding="zero3")
    est = scale(8, training, params=10**9, micro_step_s=1.0)
    comm = 3 * (7 / 8 * 4e9 / 369e9 + 35e-6)
    assert est.allreduce_s == pytest.approx(comm)
    assert est.exposed_comm_s == pytest.approx(0.1 * comm)


def test_estimate_scaling_zero2_moves_the_ddp_volume_and_exposes_the_parameter_all_gather():
    # ZeRO-2, torch_amp, T = Ψ = 1e8, n = 8, busbw 369: grads 4e8 B -> 16 buckets (15 × 26,214,400 + 6,784,000).
    # reduce-scatter per bucket (n-1)/n × S / busbw + 7 × 5 µs; all-gather of updated fp32 params 4e8 B once.
    # Total bandwidth term = 1.75 × 4e8 / 369e9, the same as DDP's all-reduce (docs/methods.md#multi-gpu).
    training = TrainingSetup(global_batch=256, sharding="zero2")
    est = scale(8, training, params=10**8, micro_step_s=1.0)
    assert est.allreduce_s == pytest.approx(1.75 * 4e8 / 369e9 + 17 * 35e-6)
    ddp_total = sc.ddp_exposed_comm_s(4e8, 8, 369.0, backward_s=1.0)[1]
    assert ddp_total == pytest.approx(1.75 * 4e8 / 369e9 + 16 * 70e-6)
    # backward (2/3 s) hides the reduce-scatter but its last bucket; the all-gather is exposed in full
    last_rs = 7 / 8 * (4e8 - 15 * MIB25) / 369e9 + 35e-6
    all_gather = 7 / 8 * 4e8 / 369e9 + 35e-6
    assert est.exposed_comm_s == pytest.approx(last_rs + all_gather)
    assert math.isfinite(est.efficiency) and 0 < est.efficiency < 1


# ---------------------------------------------------------------- tf32 is fp32 on the wire (issue 31)

LAYOUT_SHARDINGS = [(layout, sharding) for layout in ("torch_amp", "pure_bf16", "zero_paper")
                    for sharding in ("none", "zero1", "zero2", "zero3")] + [
    ("deepspeed", "zero2"), ("deepspeed", "zero3"), ("megatron", "none"), ("megatron", "zero1")]
LLAMA3_8B = 8_030_261_248


@pytest.mark.parametrize("layout, sharding", LAYOUT_SHARDINGS)
@pytest.mark.parametrize("n_gpus", [1, 8])
def test_tf32_moves_the_bytes_fp32_moves(layout, sharding, n_gpus):
    # tf32 keeps fp32 tensors (only a matmul's inputs are rounded): every collective, the ZeRO-3 all-gather of the
    # parameters included, moves fp32's bytes. Same compute time in, so the same communication time out.
    training = TrainingSetup(global_batch=64, state_layout=layout, sharding=sharding)
    assert sc.param_gather_bytes_per_param("tf32", layout) == sc.param_gather_bytes_per_param("fp32", layout) == 4.0
    assert sc.grad_bytes_per_param("tf32", layout) == sc.grad_bytes_per_param("fp32", layout) == 4.0
    est = {p: sc.estimate_scaling(OptionPlan(H100, n_gpus, p, grad_accum=2), training, HW,
                                  trainable_params=LLAMA3_8B, params=LLAMA3_8B, micro_step_s=1.0)
           for p in ("fp32", "tf32")}
    assert (est["tf32"].allreduce_s, est["tf32"].exposed_comm_s) == (est["fp32"].allreduce_s,
                                                                    est["fp32"].exposed_comm_s)
    assert est["tf32"].source == est["fp32"].source  # the text names the MB moved
    assert (est["fp32"].allreduce_s > 0) == (n_gpus > 1)
