"""The benchmark result file (schema trainplan.bench/1): validated reader, atomic writer, folder scan.

Importable with the standard library alone (bench runs on GPU machines without the app's packages): the loader
imports yaml only when a YAML file is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from planner.inputs import loader
from planner.inputs.atomic import atomic_write
from planner.inputs.check import Reader, parse_date
from planner.inputs.errors import InputError, skipped
from planner.vocab import PRECISIONS

SCHEMA = "trainplan.bench/1"
SOURCES = ("measured", "traced")
STATUSES = ("ok", "oom", "error", "skipped")
PHASES = ("data", "forward", "backward", "optimizer")
BREAKDOWN_PARTS = ("weights", "grads", "optimizer", "activations", "transients")
STAT_KEYS = ("median", "p10", "p90", "mean", "std", "n")
# Numeric measurement fields: each is a number or null (null = unmeasured, with a reason in `unmeasured`).
NUMERIC_FIELDS = (
    "samples_per_s", "peak_allocated_bytes", "peak_reserved_bytes", "static_bytes", "first_step_peak_bytes",
    "device_used_bytes", "achieved_tflops", "mfu", "gpu_util_pct", "power_w", "energy_j_per_step",
    "grad_scaler_skips",
)
MAX_FILE_BYTES = loader.RESULT.max_bytes
# Every number in a result file is at most this (1 EB of memory, 30 billion years of step time): a larger one
# is a corrupted file, and it would print as a 300-digit figure downstream.
MAX_NUMBER = 1e18
MAX_BATCH = 10**9


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class StepTimeStats:
    median: float
    p10: float
    p90: float
    mean: float
    std: float
    n: int


@dataclass(frozen=True)
class Measurement:
    source: str
    precision: str
    batch_size: int
    status: str
    reason: str | None = None
    step_time_s: StepTimeStats | None = None
    phases_s: Mapping = field(default_factory=dict)
    samples_per_s: float | None = None
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    static_bytes: float | None = None
    first_step_peak_bytes: float | None = None
    device_used_bytes: float | None = None
    memory_breakdown_bytes: Mapping = field(default_factory=dict)
    achieved_tflops: float | None = None
    mfu: float | None = None
    mfu_peak_key: str | None = None
    gpu_util_pct: float | None = None
    power_w: float | None = None
    energy_j_per_step: float | None = None
    loss_finite: bool | None = None
    grad_scaler_skips: float | None = None
    unmeasured: Mapping = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class ResultFile:
    path: str
    created_utc: str
    partial: bool
    environment: Mapping
    model: Mapping
    settings: Mapping
    measurements: tuple[Measurement, ...]
    max_batch: tuple[Mapping, ...] = ()
    dataloader: tuple[Mapping, ...] = ()
    ddp: Mapping | None = None
    raw: Mapping = field(default_factory=dict, repr=False, compare=False)

    @property
    def model_name(self) -> str:
        return str(self.model.get("name"))

    @property
    def device(self) -> str:
        return str(self.environment.get("device"))

    @property
    def gpu_profile_id(self) -> str | None:
        return self.environment.get("gpu_profile_id")

    @property
    def is_traced(self) -> bool:
        return any(m.source == "traced" for m in self.measurements)

    @property
    def label(self) -> str:
        """Short provenance text for a user: file name and date."""
        return f"{Path(self.path).name} ({self.created_utc[:10]})"


# ---------------------------------------------------------------- validation

def read_result_file(path: str | Path) -> ResultFile:
    """Read one result file; raises InputError naming the file and the bad field."""
    return parse_result(loader.load_file(path, loader.RESULT), str(path))


def parse_result_text(text: str, source: str) -> ResultFile:
    return parse_result(loader.load_text(text, source, loader.RESULT), source)


def parse_result(data: object, source: str) -> ResultFile:
    if not isinstance(data, Mapping):
        raise InputError(source, None, type(data).__name__, "a JSON object")
    if data.get("schema") != SCHEMA:
        raise InputError(source, "schema", data.get("schema"), SCHEMA)
    created = data.get("created_utc")
    if not isinstance(created, str) or not re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", created) \
            or len(created) > 40:
        raise InputError(source, "created_utc", created, "an ISO 8601 UTC timestamp such as 2026-11-29T19:40:00Z")
    parse_date(created[:10], source, "created_utc")
    partial = data.get("partial", False)
    if not isinstance(partial, bool):
        raise InputError(source, "partial", partial, "true or false")
    env = _mapping(data, "environment", source)
    if env.get("device") not in ("cuda", "cpu"):
        raise InputError(source, "environment.device", env.get("device"), "cuda or cpu")
    model = _mapping(data, "model", source)
    if not isinstance(model.get("name"), str) or not model.get("name"):
        raise InputError(source, "model.name", model.get("name"), "the model's name")
    model_reader = Reader(model, source, "model")
    for key in ("params", "trainable_params", "flops_per_sample"):
        _optional_number(model_reader, key)
    settings = _mapping(data, "settings", source, required=False)
    raw_meas = data.get("measurements", [])
    if not isinstance(raw_meas, list):
        raise InputError(source, "measurements", raw_meas, "a list")
    measurements = tuple(_measurement(m, source, f"measurements[{i}]") for i, m in enumerate(raw_meas))
    max_batch = _list_of_mappings(data, "max_batch", source)
    for i, mb in enumerate(max_batch):
        r = Reader(mb, source, f"max_batch[{i}]")
        r.choice("precision", PRECISIONS)
        r.integer("max_batch", None, minimum=0, maximum=MAX_BATCH)
    dataloader = _list_of_mappings(data, "dataloader", source)
    for i, row in enumerate(dataloader):
        _optional_number(Reader(row, source, f"dataloader[{i}]"), "samples_per_s")
    ddp = data.get("ddp")
    if ddp is not None:
        r = Reader(ddp, source, "ddp")
        for key in ("step_time_1_s", "step_time_n_s", "efficiency", "exposed_comm_s"):
            _optional_number(r, key)
        ddp = _frozen(ddp)
    return ResultFile(
        path=source, created_utc=created, partial=partial, environment=_frozen(env), model=_frozen(model),
        settings=_frozen(settings), measurements=measurements, max_batch=tuple(_frozen(m) for m in max_batch),
        dataloader=tuple(_frozen(d) for d in dataloader), ddp=ddp, raw=_frozen(data),
    )


def _mapping(data: Mapping, key: str, source: str, required: bool = True) -> Mapping:
    value = data.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(source, key, value, "a JSON object")
    return value


def _list_of_mappings(data: Mapping, key: str, source: str) -> list[Mapping]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise InputError(source, key, value, "a list of JSON objects")
    return value


def _optional_number(r: Reader, key: str) -> float | None:
    """A measured figure: a number in [0, MAX_NUMBER], or null (null = unmeasured, with a reason)."""
    return r.number(key, None, minimum=0, maximum=MAX_NUMBER)


def _measurement(m: object, source: str, path: str) -> Measurement:
    if not isinstance(m, Mapping):
        raise InputError(source, path, m, "a JSON object")
    r = Reader(m, source, path)
    src = r.choice("source", SOURCES, "measured")
    precision = r.choice("precision", PRECISIONS)
    batch = r.integer("batch_size", minimum=1, maximum=MAX_BATCH)
    status = r.choice("status", STATUSES)
    reason = m.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise InputError(source, f"{path}.reason", reason, "a string or null")
    stats = None
    st = r.sub("step_time_s")
    if st is not None:
        values = {key: st.number(key, minimum=0, maximum=MAX_NUMBER) for key in STAT_KEYS}
        values["n"] = int(values["n"])
        if values["median"] <= 0:
            raise st.fail("median", values["median"], "a positive time in seconds")
        stats = StepTimeStats(**values)
    if status == "ok" and src == "measured" and stats is None:
        raise InputError(source, f"{path}.step_time_s", None, "step-time statistics for an ok measurement")
    numbers = {k: _optional_number(r, k) for k in NUMERIC_FIELDS}
    phases = _number_map(r, "phases_s", PHASES)
    breakdown = _number_map(r, "memory_breakdown_bytes", BREAKDOWN_PARTS)
    unmeasured = m.get("unmeasured") or {}
    if not isinstance(unmeasured, Mapping) or not all(isinstance(v, str) for v in unmeasured.values()):
        raise InputError(source, f"{path}.unmeasured", unmeasured, "an object {field: reason}")
    loss_finite = m.get("loss_finite")
    if loss_finite is not None and not isinstance(loss_finite, bool):
        raise InputError(source, f"{path}.loss_finite", loss_finite, "true, false or null")
    return Measurement(
        source=src, precision=precision, batch_size=batch, status=status, reason=reason, step_time_s=stats,
        phases_s=_frozen(phases), memory_breakdown_bytes=_frozen(breakdown), mfu_peak_key=m.get("mfu_peak_key"),
        loss_finite=loss_finite, unmeasured=_frozen(unmeasured), **numbers,
    )


def _number_map(r: Reader, key: str, keys: tuple[str, ...]) -> dict:
    value = r.data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise r.fail(key, value, "an object of numbers: " + ", ".join(keys))
    sub = Reader(value, r.source, r.field(key))
    return {k: _optional_number(sub, k) for k in value}


# ---------------------------------------------------------------- scanning

def scan_results(*dirs: str | Path) -> tuple[list[ResultFile], list[str]]:
    """Every valid result file under the folders, and one problem line per bad file (never hides the others).

    Whatever goes wrong with one file (a bad field, unreadable, not UTF-8, too deep, out of memory) it is listed
    and skipped; hidden files and folders (temporaries of the atomic writer, editors) are left out.
    """
    good: list[ResultFile] = []
    problems: list[str] = []
    for root in dirs:
        root = Path(root)
        try:
            if not root.is_dir():
                continue
            paths = sorted(root.rglob("*.json"))
        except OSError as exc:
            problems.append(skipped(root, exc))
            continue
        for path in paths:
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            try:
                good.append(read_result_file(path))
            except InputError as exc:
                problems.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - one bad file must never abort the scan
                problems.append(skipped(path, exc))
    return good, problems


# ---------------------------------------------------------------- writing

def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def timestamp_for_filename(created_utc: str) -> str:
    """2026-11-29T19:40:00.123Z -> 20261129T194000Z (sortable, portable)."""
    digits = re.sub(r"[^0-9T]", "", created_utc.split(".")[0].replace("Z", ""))
    return digits + "Z"


def result_path(root: str | Path, device_dir: str, model: str, created_utc: str) -> Path:
    return Path(root) / slug(device_dir) / f"{slug(model)}-{timestamp_for_filename(created_utc)}.json"


def _json_bytes(data: Mapping) -> bytes:
    # allow_nan=False: NaN and Infinity are not JSON; a reader elsewhere would reject the file.
    return json.dumps(data, indent=1, sort_keys=False, allow_nan=False).encode("utf-8")


def write_result_atomic(data: Mapping, path: str | Path) -> Path:
    """Write JSON atomically and never overwrite: a taken name gets a -2, -3 ... suffix. Mode 0644 minus umask."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(target, _json_bytes(data), if_exists="suffix")


def replace_result_atomic(data: Mapping, path: str | Path) -> Path:
    """Rewrite the same run's file in place (atomic): used to grow a partial file as a sweep proceeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(target, _json_bytes(data), if_exists="replace")
