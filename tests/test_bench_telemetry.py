"""NVML telemetry and detection with pynvml mocked at its boundary; NVML missing; a fake CUDA torch."""

from __future__ import annotations

import os
import types

import pytest

from bench import detect
from bench.telemetry import NullSampler, Sampler, load_nvml, static_info
from planner import __version__


class NVMLError(Exception):
    pass


class FakeNVML:
    """The slice of pynvml that bench uses. Energy counter in mJ advances 1000 mJ per read."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_DEVICE_MIG_ENABLE = 0, 1, 1

    def __init__(self, name="NVIDIA H200", energy=True, power=True):
        self.name, self.energy, self.power = name, energy, power
        self.mj = 0.0
        self.inited = False

    def nvmlInit(self):
        self.inited = True

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("h", i)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return ("h", 0)

    def nvmlDeviceGetName(self, h):
        return self.name.encode()  # older pynvml returns bytes

    def nvmlSystemGetDriverVersion(self):
        return "580.65"

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(total=150_754_820_096, used=3 * 2**30, free=0)

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1980 if kind == 0 else 3201

    def nvmlDeviceGetMaxClockInfo(self, h, kind):
        return 1980 if kind == 0 else 3201

    def nvmlDeviceGetMigMode(self, h):
        return [0, 0]

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=96, memory=40)

    def nvmlDeviceGetPowerUsage(self, h):
        if not self.power:
            raise NVMLError("Not Supported")
        return 612_500

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.energy:
            raise NVMLError("Not Supported")
        self.mj += 1000.0
        return self.mj


class TickClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 1.0
        return self.t


def test_sampler_reads_util_power_memory_and_energy_delta():
    nvml = FakeNVML()
    s = Sampler(nvml, ("h", 0), interval_s=0.001)
    s.start()
    r = s.stop()
    assert r.gpu_util_pct == 96.0 and r.power_w == 612.5 and r.device_used_bytes == 3 * 2**30
    assert r.energy_j == 1.0  # one counter delta of 1000 mJ
    assert not r.unmeasured and r.samples >= 1


def test_energy_falls_back_to_power_times_time_with_a_note():
    s = Sampler(FakeNVML(energy=False), ("h", 0), interval_s=0.001, clock=TickClock())
    s.start()
    r = s.stop()
    assert r.energy_j == 612.5 * 1.0 and r.notes[0].key == "energy_from_power"


def test_no_power_and_no_energy_are_null_with_reasons():
    s = Sampler(FakeNVML(energy=False, power=False), ("h", 0), interval_s=0.001)
    s.start()
    r = s.stop()
    assert r.power_w is None and r.energy_j is None
    assert r.unmeasured["power_w"].key == "nvml_power_failed" and "Not Supported" in r.unmeasured["power_w"].params["error"]
    assert r.unmeasured["energy_j_per_step"].key == "no_energy"


def test_static_info():
    info = static_info(FakeNVML(), ("h", 0))
    assert info["name"] == "NVIDIA H200" and info["driver"] == "580.65" and info["power_limit_w"] == 700.0
    assert info["clocks"]["max_sm_mhz"] == 1980 and info["mig"] == {"enabled": False}


def test_nvml_missing_gives_a_reason_not_a_crash():
    class Missing:
        def nvmlInit(self):
            raise NVMLError("NVML Shared Library Not Found")

    mod, reason = load_nvml(Missing())
    assert mod is None and reason.key == "nvml_unavailable" and "NVML Shared Library Not Found" in reason.params["error"]
    r = NullSampler(reason).stop()
    assert r.power_w is None and r.unmeasured["energy_j_per_step"] == reason


def test_real_pynvml_without_a_gpu_reports_unavailable():
    mod, reason = load_nvml()
    assert (mod is None) == bool(reason)


def fake_torch(name="NVIDIA H200", cudnn=lambda: 91002):
    props = types.SimpleNamespace(name=name, total_memory=150_754_820_096, major=9, minor=0, uuid="abc",
                                  multi_processor_count=132)
    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 1,
                                 get_device_properties=lambda i: props)
    backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=cudnn))
    return types.SimpleNamespace(__version__="2.11.0", version=types.SimpleNamespace(cuda="12.8"), cuda=cuda,
                                 backends=backends, get_num_threads=lambda: 16)


def test_detect_matches_the_h200_profile_and_fills_the_environment():
    facts = detect.gather(nvml=FakeNVML(), torch_mod=fake_torch())
    assert facts["device"] == "cuda" and facts["driver"] == "580.65"
    assert facts["gpus"][0]["profile_id"] == "h200-sxm-141gb"
    env = detect.environment_block(facts, {"fp32": {"api": "fp32_precision"}}, False)
    assert set(env) == {"device", "hostname", "gpu_name", "gpu_profile_id", "gpu_count", "total_memory_bytes",
                        "driver", "cuda", "torch", "python", "cpu", "nvml_available", "fp32_precision",
                        "cudnn_benchmark", "allocator_config", "power_limit_w", "clocks", "mig",
                        "trainplan_version", "cpu_threads", "cudnn", "unmeasured", "unmeasured_keys"}
    assert env["gpu_profile_id"] == "h200-sxm-141gb" and env["power_limit_w"] == 700.0 and env["cuda"] == "12.8"
    assert env["cudnn"] == 91002 and env["cpu_threads"]["torch_num_threads"] == 16 and env["unmeasured"] == {}
    assert env["cpu_threads"]["os_cpu_count"] == os.cpu_count() and env["trainplan_version"] == __version__


@pytest.mark.parametrize("cudnn, key", [(lambda: None, "no_cudnn"), (lambda: 1 / 0, "cudnn_failed")])
def test_cudnn_that_cannot_be_read_is_null_with_a_reason(cudnn, key):
    env = detect.environment_block(detect.gather(nvml=FakeNVML(), torch_mod=fake_torch(cudnn=cudnn)), {}, False)
    (reason,) = env["unmeasured_keys"]["cudnn"]
    assert env["cudnn"] is None and reason["key"] == key
    assert key == "no_cudnn" or "ZeroDivisionError" in reason["params"]["error"]


def test_unknown_gpu_is_labelled_and_the_user_is_told_how_to_add_a_profile():
    facts = detect.gather(nvml=FakeNVML(name="NVIDIA Mystery X9"), torch_mod=fake_torch("NVIDIA Mystery X9"))
    gpu = facts["gpus"][0]
    assert gpu["profile_id"] is None and gpu["device_dir"] == "unknown-nvidia-mystery-x9"
    text = detect.render_text(facts)
    assert "gpu_profiles/<id>.yaml" in text and "Adding a GPU" in text


def test_cpu_only_machine():
    facts = detect.gather()
    assert facts["device"] == "cpu" or facts["cuda_available"]
    env = detect.environment_block(facts, {}, False)
    if facts["device"] == "cpu":
        assert env["gpu_name"] is None and env["gpu_count"] == 0 and env["device"] == "cpu"
        assert "CUDA" in detect.render_text(facts)
