"""The benchmark result file (schema trainplan.bench/1): validated reader, atomic writer, folder scan.

Importable with the standard library alone (bench runs on GPU machines without the app's packages).
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from planner.inputs.errors import InputError
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
MAX_FILE_BYTES = 64 * 1024 * 1024


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
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(str(p), None, f"{size} bytes", f"a result file under {MAX_FILE_BYTES // 2**20} MiB")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(p), None, str(p), "an existing result file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(p), None, str(p), f"a readable UTF-8 file ({exc.__class__.__name__})") from None
    return parse_result_text(text, str(p))


def parse_result_text(text: str, source: str) -> ResultFile:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (the file looks truncated: was the benchmark interrupted?)" if exc.pos >= len(text) - 2 else ""
        raise InputError(source, None, f"JSON error at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                         "a complete JSON result file" + hint) from None
    return parse_result(data, source)


def parse_result(data: object, source: str) -> ResultFile:
    if not isinstance(data, Mapping):
        raise InputError(source, None, type(data).__name__, "a JSON object")
    if data.get("schema") != SCHEMA:
        raise InputError(source, "schema", data.get("schema"), SCHEMA)
    created = data.get("created_utc")
    if not isinstance(created, str) or not re.match(r"^\d{4}-\d{2}-\d{2}T", created):
        raise InputError(source, "created_utc", created, "an ISO 8601 UTC timestamp such as 2026-11-29T19:40:00Z")
    partial = data.get("partial", False)
    if not isinstance(partial, bool):
        raise InputError(source, "partial", partial, "true or false")
    env = _mapping(data, "environment", source)
    if env.get("device") not in ("cuda", "cpu"):
        raise InputError(source, "environment.device", env.get("device"), "cuda or cpu")
    model = _mapping(data, "model", source)
    if not isinstance(model.get("name"), str) or not model.get("name"):
        raise InputError(source, "model.name", model.get("name"), "the model's name")
    for key in ("params", "trainable_params", "flops_per_sample"):
        _optional_number(model.get(key), source, f"model.{key}", minimum=0)
    settings = _mapping(data, "settings", source, required=False)
    raw_meas = data.get("measurements", [])
    if not isinstance(raw_meas, list):
        raise InputError(source, "measurements", raw_meas, "a list")
    measurements = tuple(_measurement(m, source, f"measurements[{i}]") for i, m in enumerate(raw_meas))
    max_batch = _list_of_mappings(data, "max_batch", source)
    for i, mb in enumerate(max_batch):
        if mb.get("precision") not in PRECISIONS:
            raise InputError(source, f"max_batch[{i}].precision", mb.get("precision"), "one of " + ", ".join(PRECISIONS))
        value = mb.get("max_batch")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InputError(source, f"max_batch[{i}].max_batch", value, "a non-negative integer or null")
    dataloader = _list_of_mappings(data, "dataloader", source)
    for i, row in enumerate(dataloader):
        _optional_number(row.get("samples_per_s"), source, f"dataloader[{i}].samples_per_s", minimum=0)
    ddp = data.get("ddp")
    if ddp is not None:
        if not isinstance(ddp, Mapping):
            raise InputError(source, "ddp", ddp, "a mapping or null")
        for key in ("step_time_1_s", "step_time_n_s", "efficiency", "exposed_comm_s"):
            _optional_number(ddp.get(key), source, f"ddp.{key}", minimum=0)
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


def _optional_number(value: object, source: str, field_name: str, minimum: float | None = None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(source, field_name, value, "a finite number or null (null = unmeasured)")
    if minimum is not None and value < minimum:
        raise InputError(source, field_name, value, f"a number >= {minimum:g} or null")
    return float(value)


def _measurement(m: object, source: str, path: str) -> Measurement:
    if not isinstance(m, Mapping):
        raise InputError(source, path, m, "a JSON object")
    src = m.get("source", "measured")
    if src not in SOURCES:
        raise InputError(source, f"{path}.source", src, "measured or traced")
    precision = m.get("precision")
    if precision not in PRECISIONS:
        raise InputError(source, f"{path}.precision", precision, "one of " + ", ".join(PRECISIONS))
    batch = m.get("batch_size")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputError(source, f"{path}.batch_size", batch, "a positive integer")
    status = m.get("status")
    if status not in STATUSES:
        raise InputError(source, f"{path}.status", status, "one of " + ", ".join(STATUSES))
    reason = m.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise InputError(source, f"{path}.reason", reason, "a string or null")
    stats = None
    raw_stats = m.get("step_time_s")
    if raw_stats is not None:
        if not isinstance(raw_stats, Mapping):
            raise InputError(source, f"{path}.step_time_s", raw_stats, "an object {median, p10, p90, mean, std, n}")
        values = {}
        for key in STAT_KEYS:
            v = _optional_number(raw_stats.get(key), source, f"{path}.step_time_s.{key}", minimum=0)
            if v is None:
                raise InputError(source, f"{path}.step_time_s.{key}", None, "a number")
            values[key] = v
        values["n"] = int(values["n"])
        if values["median"] <= 0:
            raise InputError(source, f"{path}.step_time_s.median", values["median"], "a positive time in seconds")
        stats = StepTimeStats(**values)
    if status == "ok" and src == "measured" and stats is None:
        raise InputError(source, f"{path}.step_time_s", None, "step-time statistics for an ok measurement")
    numbers = {k: _optional_number(m.get(k), source, f"{path}.{k}", minimum=0) for k in NUMERIC_FIELDS}
    phases = _number_map(m.get("phases_s"), source, f"{path}.phases_s", PHASES)
    breakdown = _number_map(m.get("memory_breakdown_bytes"), source, f"{path}.memory_breakdown_bytes",
                            BREAKDOWN_PARTS)
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


def _number_map(value: object, source: str, path: str, keys: tuple[str, ...]) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(source, path, value, "an object of numbers: " + ", ".join(keys))
    return {k: _optional_number(v, source, f"{path}.{k}", minimum=0) for k, v in value.items()}


# ---------------------------------------------------------------- scanning

def scan_results(*dirs: str | Path) -> tuple[list[ResultFile], list[str]]:
    """Every valid result file under the folders, and one problem line per bad file (never hides the others)."""
    good: list[ResultFile] = []
    problems: list[str] = []
    for root in dirs:
        root = Path(root)
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.json")):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            try:
                good.append(read_result_file(path))
            except InputError as exc:
                problems.append(str(exc))
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


def _temp_json(data: Mapping, folder: Path) -> Path:
    """The JSON written and fsynced to a hidden temp file in `folder` (same filesystem, so a rename is atomic)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, sort_keys=False, allow_nan=False)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_result_atomic(data: Mapping, path: str | Path) -> Path:
    """Write JSON atomically (temp file + rename) and never overwrite: a taken name gets a -2, -3 ... suffix."""
    target = Path(path)
    tmp = _temp_json(data, target.parent)
    try:
        candidate, n = target, 1
        while True:
            try:
                # os.link fails if the name exists, so two writers never clobber each other.
                os.link(tmp, candidate)
                return candidate
            except FileExistsError:
                n += 1
                candidate = target.with_name(f"{target.stem}-{n}{target.suffix}")
    finally:
        tmp.unlink(missing_ok=True)


def replace_result_atomic(data: Mapping, path: str | Path) -> Path:
    """Rewrite the same run's file in place (temp + rename): used to grow a partial file as a sweep proceeds."""
    target = Path(path)
    tmp = _temp_json(data, target.parent)
    try:
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
