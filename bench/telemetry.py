"""NVML telemetry: static GPU facts, and a background sampler for utilisation, power, memory and energy."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from planner.vocab import Reason


def load_nvml(nvml=None):
    """(module, None) with NVML initialised, or (None, reason). `nvml` injects a fake module in tests."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError as exc:
            return None, Reason("nvml_not_importable", error=str(exc))
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, Reason("nvml_unavailable", error=f"{exc.__class__.__name__}: {exc}")
    return nvml, None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _try(fn: Callable, default=None):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - NVML raises NVMLError_NotSupported etc. per query
        return default


def device_handle(nvml, uuid: str | None = None, index: int = 0):
    """The NVML handle of the torch device: by UUID when known (CUDA_VISIBLE_DEVICES reorders indices)."""
    if uuid:
        text = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        handle = _try(lambda: nvml.nvmlDeviceGetHandleByUUID(text))
        if handle is not None:
            return handle
    return nvml.nvmlDeviceGetHandleByIndex(index)


def static_info(nvml, handle) -> dict:
    """Driver, name, memory, power limit, clocks and MIG mode; a field NVML refuses is None."""
    mem = _try(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    limit_mw = _try(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
    if limit_mw is None:
        limit_mw = _try(lambda: nvml.nvmlDeviceGetPowerManagementLimit(handle))
    clocks = {
        "sm_mhz": _try(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        "mem_mhz": _try(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)),
        "max_sm_mhz": _try(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
        "max_mem_mhz": _try(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)),
    }
    mig = _try(lambda: nvml.nvmlDeviceGetMigMode(handle))
    mig_enabled = None
    if isinstance(mig, list | tuple) and mig:
        mig_enabled = bool(mig[0] == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1))
    return {
        "name": _try(lambda: _text(nvml.nvmlDeviceGetName(handle))),
        "driver": _try(lambda: _text(nvml.nvmlSystemGetDriverVersion())),
        "memory_total_bytes": getattr(mem, "total", None),
        "memory_used_bytes": getattr(mem, "used", None),
        "power_limit_w": limit_mw / 1000.0 if limit_mw is not None else None,
        "clocks": clocks,
        "mig": {"enabled": mig_enabled} if mig is not None else None,
    }


@dataclass
class WindowReading:
    """What the sampler saw over one timed window; a None field has its reason (a planner.vocab.Reason) in
    `unmeasured`; `notes` are Reasons too."""

    gpu_util_pct: float | None = None
    power_w: float | None = None
    energy_j: float | None = None
    device_used_bytes: float | None = None
    samples: int = 0
    unmeasured: dict[str, Reason] = field(default_factory=dict)
    notes: list[Reason] = field(default_factory=list)


class Sampler:
    """Samples NVML in a background thread between start() and stop(); energy from the total-energy counter.

    Energy = delta of nvmlDeviceGetTotalEnergyConsumption (mJ, Volta and newer) over the window; where the
    counter is unsupported it falls back to mean sampled power x window time, and says so.
    """

    def __init__(self, nvml, handle, interval_s: float = 0.02, clock: Callable[[], float] = time.perf_counter):
        self.nvml = nvml
        self.handle = handle
        self.interval_s = interval_s
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._util: list[float] = []
        self._power: list[float] = []
        self._used: list[float] = []
        self._errors: dict[str, str] = {}
        self._t0 = 0.0
        self._e0: float | None = None

    def _energy_mj(self) -> float | None:
        try:
            return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))
        except Exception as exc:  # noqa: BLE001
            self._errors.setdefault("energy", f"nvmlDeviceGetTotalEnergyConsumption: {exc}")
            return None

    def _sample_once(self) -> None:
        for key, target, fn in (
            ("util", self._util, lambda: self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu),
            ("power", self._power, lambda: self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0),
            ("used", self._used, lambda: self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used),
        ):
            if key in self._errors:
                continue
            try:
                target.append(float(fn()))
            except Exception as exc:  # noqa: BLE001 - unsupported query: stop asking, record why
                self._errors[key] = f"{exc.__class__.__name__}: {exc}"

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample_once()
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._util.clear()
        self._power.clear()
        self._used.clear()
        self._errors.clear()
        self._stop.clear()
        self._e0 = self._energy_mj()
        self._t0 = self.clock()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> WindowReading:
        elapsed = self.clock() - self._t0
        e1 = self._energy_mj() if self._e0 is not None else None
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample_once()  # at least one sample even for a window shorter than the interval
        r = WindowReading(samples=len(self._power) or len(self._util))
        if self._util:
            r.gpu_util_pct = sum(self._util) / len(self._util)
        else:
            r.unmeasured["gpu_util_pct"] = self._why("util", "nvml_util")
        if self._power:
            r.power_w = sum(self._power) / len(self._power)
        else:
            r.unmeasured["power_w"] = self._why("power", "nvml_power")
        if self._used:
            r.device_used_bytes = max(self._used)
        else:
            r.unmeasured["device_used_bytes"] = self._why("used", "nvml_memory")
        if self._e0 is not None and e1 is not None and e1 >= self._e0:
            r.energy_j = (e1 - self._e0) / 1000.0
        elif r.power_w is not None and elapsed > 0:
            r.energy_j = r.power_w * elapsed
            error = self._errors.get("energy")
            r.notes.append(Reason("energy_from_power", error=error) if error is not None
                           else Reason("energy_from_power_pre_volta"))
        else:
            r.unmeasured["energy_j_per_step"] = Reason("no_energy")
        return r

    def _why(self, query: str, key: str) -> Reason:
        """Why a sampled field is null: the query's error, or no samples in the window."""
        error = self._errors.get(query)
        return Reason(f"{key}_failed", error=error) if error is not None else Reason(f"{key}_no_samples")


class NullSampler:
    """Stands in where NVML is unavailable: every field None with the same reason."""

    def __init__(self, reason: Reason):
        self.reason = reason

    def start(self) -> None:
        pass

    def stop(self) -> WindowReading:
        fields = ("gpu_util_pct", "power_w", "energy_j_per_step", "device_used_bytes")
        return WindowReading(unmeasured={f: self.reason for f in fields})
