"""Timing loop with a fake clock and a fake device memory model: statistics, phases, OOM handling, records."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from bench import harness
from bench.precision import plan_for, read_fp32_flags, set_fp32_mode, uses_new_fp32_api
from bench.telemetry import WindowReading
from bench.testing import FakeMemory
from bench.zoo import Workload
from planner.inputs.resultfile import SCHEMA, parse_result
from planner.vocab import Reason

MiB = 2**20


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class FakeOOM(RuntimeError):
    pass


class FakeDevice(harness.CpuDevice):
    """A 'GPU' whose peak memory follows a FakeMemory model of the batch size the workload last built."""

    kind = "cuda"
    sync_method = "fake"
    has_memory_stats = True

    def __init__(self, clock: FakeClock, memory: FakeMemory):
        super().__init__(clock)
        self.memory = memory
        self.batch = 0
        self.emptied = 0

    def allocated(self) -> int:
        return int(self.memory.base)

    def max_allocated(self) -> int:
        return int(self.memory.peak(self.batch))

    def max_reserved(self) -> int:
        return int(self.memory.peak(self.batch)) + 2 * MiB

    def capacity_bytes(self) -> int:
        return int(self.memory.capacity)

    def empty_cache(self) -> None:
        self.emptied += 1

    def is_oom(self, exc: BaseException) -> bool:
        return isinstance(exc, FakeOOM)


def fake_workload(clock: FakeClock, device: FakeDevice | None = None, step_s=lambda b: 0.001 * b,
                  memory: FakeMemory | None = None) -> Workload:
    """A tiny real model; its loss advances the fake clock by step_s(b) and raises FakeOOM past capacity."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3)

    def make_batch(batch_size: int, dev):
        if device is not None:
            device.batch = batch_size
        return torch.randn(batch_size, 4), torch.randint(0, 3, (batch_size,))

    def loss_fn(m, batch):
        x, y = batch
        if memory is not None and memory.peak(x.shape[0]) > memory.capacity:
            raise FakeOOM("CUDA out of memory (fake)")
        clock.advance(step_s(x.shape[0]))
        return nn.functional.cross_entropy(m(x), y)

    return Workload(model, make_batch, loss_fn)


def sgd(params):
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def test_fake_clock_gives_exact_step_statistics_and_phases():
    clock = FakeClock()
    dev = harness.CpuDevice(clock)
    w = fake_workload(clock, step_s=lambda b: 0.002 * b)
    raw = harness.measure(w, plan_for("fp32", "cpu"), 8, sgd, harness.HarnessConfig(warmup=2, steps=7,
                                                                                      phase_steps=3), dev)
    assert raw.step_times_s == pytest.approx([0.016] * 7)
    assert raw.window_s == pytest.approx(0.016 * 7)
    # The clock only moves inside the loss (forward): backward, optimizer and data take 0 fake seconds.
    assert raw.phases_s == pytest.approx({"data": 0.0, "forward": 0.016, "backward": 0.0, "optimizer": 0.0})
    assert raw.loss_finite is True
    assert raw.weights_bytes == (4 * 3 + 3) * 4
    assert raw.grads_bytes == (4 * 3 + 3) * 4
    assert raw.optimizer_bytes == (4 * 3 + 3) * 4  # one momentum buffer per parameter
    assert raw.peak_allocated_bytes is None  # CPU: no allocator statistics


def test_varying_step_times_give_median_and_percentiles():
    clock = FakeClock()
    costs = iter([0.01] * 3 + [0.01, 0.02, 0.03, 0.04, 0.05] + [0.0] * 100)  # 3 warmup, 5 timed, rest phases
    w = fake_workload(clock, step_s=lambda b: next(costs))
    raw = harness.measure(w, plan_for("fp32", "cpu"), 2, sgd, harness.HarnessConfig(warmup=3, steps=5),
                          harness.CpuDevice(clock))
    assert raw.step_times_s == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05])


def test_oom_becomes_a_status_and_memory_is_released_outside_the_except():
    clock = FakeClock()
    mem = FakeMemory(100 * MiB, 10 * MiB, 400 * MiB)  # batch 30 fits, 31 does not
    dev = FakeDevice(clock, mem)
    w = fake_workload(clock, dev, memory=mem)
    status, reason, raw = harness.run_config(w, plan_for("fp32", "cpu"), 64, sgd,
                                             harness.HarnessConfig(warmup=1, steps=2), dev)
    assert (status, raw) == ("oom", None)
    assert reason.key == "step_failed" and "out of memory" in reason.params["error"]
    assert all(p.grad is None for p in w.model.parameters())
    assert dev.emptied >= 2  # measure's own + release()
    # The next configuration still runs (an OOM never ends a sweep).
    status, _, raw = harness.run_config(w, plan_for("fp32", "cpu"), 8, sgd,
                                        harness.HarnessConfig(warmup=1, steps=2), dev)
    assert status == "ok" and raw.peak_allocated_bytes == mem.peak(8)


def test_other_errors_are_recorded_as_error():
    clock = FakeClock()

    def bad_loss(m, batch):
        raise ValueError("shapes do not match")

    w = Workload(nn.Linear(4, 3), lambda b, d: (torch.zeros(b, 4),), bad_loss)
    status, reason, _ = harness.run_config(w, plan_for("fp32", "cpu"), 4, sgd, harness.HarnessConfig(1, 1),
                                           harness.CpuDevice(clock))
    assert status == "error" and reason == Reason("step_failed", error="ValueError: shapes do not match")


def test_skipped_precision_is_not_run():
    plan = plan_for("fp16", "cpu")
    why = Reason("cpu_fp16_not_float16", torch="2.0")
    skipped = type(plan)(**{**plan.__dict__, "skip_reason": why})
    status, reason, raw = harness.run_config(None, skipped, 4, sgd, harness.HarnessConfig(), None)
    assert (status, reason, raw) == ("skipped", why, None)


def _file(rows):
    return {"schema": SCHEMA, "created_utc": "2026-11-29T19:40:00Z", "partial": False,
            "environment": {"device": "cuda", "trainplan_version": "0.1.0", "cudnn": 91002},
            "model": {"name": "tiny"}, "measurements": rows}


def test_records_from_a_fake_gpu_are_valid_and_null_only_with_reasons():
    clock = FakeClock()
    mem = FakeMemory(100 * MiB, 10 * MiB, 4000 * MiB)
    dev = FakeDevice(clock, mem)
    w = fake_workload(clock, dev, memory=mem)
    _, _, raw = harness.run_config(w, plan_for("bf16", "cpu"), 16, sgd, harness.HarnessConfig(2, 4), dev)
    raw.telemetry = WindowReading(gpu_util_pct=97.0, power_w=650.0, energy_j=26.0, device_used_bytes=5e9)
    ctx = harness.RecordContext(flops_per_sample=1e9, peak_tflops=989.4, peak_key="bf16",
                                mfu_unmeasured_reason=None, device_kind="cuda")
    row = harness.to_record("bf16", 16, "ok", None, raw, ctx, steps=4, has_memory_stats=True)
    m = parse_result(_file([row]), "mem").measurements[0]
    assert m.step_time_s.median == pytest.approx(0.016)
    assert m.samples_per_s == pytest.approx(1000.0)
    assert m.achieved_tflops == pytest.approx(1e9 * 16 / 0.016 / 1e12)
    assert m.mfu == pytest.approx(m.achieved_tflops / 989.4) and m.mfu_peak_key == "bf16"
    assert m.energy_j_per_step == pytest.approx(6.5)
    # the stack this harness measures, for the planner and the corpus (issue 32): eager PyTorch, no torch.compile
    assert (m.provenance.kind, m.provenance.stack) == ("measured", "pytorch_eager")
    assert m.peak_allocated_bytes == mem.peak(16)
    assert set(m.memory_breakdown_bytes) == {"weights", "grads", "optimizer", "activations", "transients"}
    assert m.grad_scaler_skips is None and "grad_scaler_skips" in m.unmeasured
    nulls = {k for k, v in row.items() if v is None and k not in ("reason", "mfu_peak_key")}
    assert nulls <= set(row["unmeasured"])


def test_cpu_record_nulls_have_reasons_never_zero():
    clock = FakeClock()
    w = fake_workload(clock)
    _, _, raw = harness.run_config(w, plan_for("fp32", "cpu"), 4, sgd, harness.HarnessConfig(1, 3),
                                   harness.CpuDevice(clock))
    raw.telemetry = WindowReading(unmeasured={k: Reason("no_gpu_nvml") for k in ("gpu_util_pct", "power_w",
                                                                                  "energy_j_per_step",
                                                                                  "device_used_bytes")})
    ctx = harness.RecordContext(None, None, None, Reason("no_profile_cpu"), "cpu")
    row = harness.to_record("fp32", 4, "ok", None, raw, ctx, steps=3, has_memory_stats=False)
    parse_result(_file([row]), "cpu")
    for key in ("peak_allocated_bytes", "static_bytes", "mfu", "power_w", "energy_j_per_step", "achieved_tflops"):
        assert row[key] is None and row["unmeasured"][key]
    # each null field's reason as a key with its parameters, the text derived from the same key
    assert {k: [p["key"] for p in v] for k, v in row["unmeasured_keys"].items()} == {
        "peak_allocated_bytes": ["cpu_memory"], "peak_reserved_bytes": ["cpu_memory"], "static_bytes": ["cpu_memory"],
        "first_step_peak_bytes": ["cpu_memory"], "memory_breakdown_bytes.activations": ["cpu_memory"],
        "memory_breakdown_bytes.transients": ["cpu_memory"], "achieved_tflops": ["no_flops"],
        "mfu": ["no_profile_cpu"], "gpu_util_pct": ["no_gpu_nvml"], "power_w": ["no_gpu_nvml"],
        "device_used_bytes": ["no_gpu_nvml"], "energy_j_per_step": ["no_gpu_nvml"],
        "grad_scaler_skips": ["no_grad_scaler"]}
    assert {k: str(Reason(v[0]["key"], **v[0]["params"])) for k, v in row["unmeasured_keys"].items()} \
        == row["unmeasured"]
    assert row["memory_breakdown_bytes"]["activations"] is None
    assert row["memory_breakdown_bytes"]["weights"] > 0


@pytest.mark.parametrize("costs, noisy", [
    ([0.9, 0.94, 1.0, 1.06, 1.1], True),  # IQR/median 0.12
    ([0.9, 0.975, 1.0, 1.025, 1.1], False),  # 0.05
])
def test_raw_step_times_and_the_noise_flag_reach_the_record(costs, noisy):
    clock = FakeClock()
    times = iter([0.01] * 2 + [c / 100 for c in costs] + [0.0] * 100)  # 2 warm-up, 5 timed, rest phases
    w = fake_workload(clock, step_s=lambda b: next(times))
    _, _, raw = harness.run_config(w, plan_for("fp32", "cpu"), 2, sgd, harness.HarnessConfig(2, 5, 1),
                                   harness.CpuDevice(clock))
    ctx = harness.RecordContext(None, None, None, Reason("no_profile_cpu"), "cpu")
    row = harness.to_record("fp32", 2, "ok", None, raw, ctx, steps=5, has_memory_stats=False)
    assert row["step_time_s"]["raw"] == pytest.approx([c / 100 for c in costs]) and row["noisy"] is noisy
    m = parse_result(_file([row]), "noise").measurements[0]  # the reader recomputes the flag and agrees
    assert m.noisy is noisy and m.step_time_s.n == 5 and m.iqr_pct == pytest.approx(12.0 if noisy else 5.0)


def test_grad_scaler_skips_from_scale_before_and_after():
    raw = harness.RawMeasurement([0.01], 0.01, {}, None, None, None, None, 0, 0, 0, None, True, 65536.0, 16384.0)
    ctx = harness.RecordContext(None, None, None, Reason("no_profile_cpu"), "cpu")
    row = harness.to_record("fp16", 2, "ok", None, raw, ctx, 1, False)
    assert row["grad_scaler_skips"] == 2.0


def test_fp16_step_on_cpu_uses_a_grad_scaler_and_stays_finite():
    plan = plan_for("fp16", "cpu")
    assert not plan.skip_reason, plan.skip_reason  # the pinned torch has CPU fp16 autocast
    clock = FakeClock()
    raw = harness.measure(fake_workload(clock), plan, 4, sgd, harness.HarnessConfig(2, 3),
                          harness.CpuDevice(clock))
    assert raw.scale_start is not None and raw.loss_finite


def test_fp32_means_ieee_for_matmul_and_cudnn_conv():
    """The trap (docs/methods.md#measuring): set_float32_matmul_precision('highest') leaves cuDNN convs on TF32."""
    flags = set_fp32_mode("ieee")
    if uses_new_fp32_api(torch):
        assert flags["cuda.matmul"] == "ieee" and flags["cudnn.conv"] == "ieee" and flags["cudnn.rnn"] == "ieee"
        assert set_fp32_mode("tf32")["cudnn.conv"] == "tf32"
    else:
        assert flags["cudnn.allow_tf32"] is False
    set_fp32_mode("ieee")
    assert read_fp32_flags()["api"] in ("fp32_precision", "allow_tf32")


def test_precision_plans():
    assert plan_for("fp32", "cuda").fp32_mode == "ieee"
    assert plan_for("tf32", "cuda").fp32_mode == "tf32"
    assert plan_for("tf32", "cpu").fp32_mode == "ieee" and plan_for("tf32", "cpu").note == Reason("tf32_on_cpu")
    assert plan_for("bf16", "cpu").autocast_dtype is torch.bfloat16 and not plan_for("bf16", "cpu").use_scaler
    assert plan_for("fp16", "cuda").use_scaler
    with pytest.raises(ValueError):
        plan_for("fp8", "cuda")
