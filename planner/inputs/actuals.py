"""Recorded runs (trainplan.actual/1, one YAML per run in $TRAINPLAN_HOME/actuals/) and their measured points."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from planner.inputs import loader
from planner.inputs.atomic import atomic_write
from planner.inputs.check import Reader
from planner.inputs.errors import InputError, skipped
from planner.inputs.filenames import slug
from planner.inputs.reasons import reason_fields, unmeasured_fields, warning_fields
from planner.inputs.resultfile import (
    MAX_BATCH,
    MAX_COUNT,
    MAX_NUMBER,
    NUMERIC_FIELDS,
    result_path,
    write_result_atomic,
)
from planner.inputs.resultfile import SCHEMA as RESULT_SCHEMA
from planner.inputs.userdata import home, user_results_dir
from planner.vocab import PRECISIONS, VERSION, Reason

SCHEMA = "trainplan.actual/1"
ACTUAL_FILE = loader.FileKind("recorded run (YAML)", "yaml", 1 * loader.MIB)
MAX_NOTE_CHARS = 5_000
# Where the actual step time came from: typed in, or a result file (imported into $TRAINPLAN_HOME/results).
STEP_TIME_FROM = ("typed", "result_file")
# Why a recorded run did not become a measured point (the app translates these codes).
NOT_A_POINT = ("no_step_time", "from_result_file", "multi_gpu", "grad_accum")
RECORDED_PREFIX = "recorded-"  # the measured point's file name: every plan's "measured: <file>" says so
FIGURES = ("step_time_s", "hours", "cost_usd")
_PREDICTED_NUMBERS = ("step_time_s", "hours", "cost_usd")
_PREDICTED_RANGES = {"step_time_s": "step_time_range_s", "hours": "hours_range", "cost_usd": "cost_usd_range"}
_TOP_KEYS = ("schema", "date", "note", "scenario_name", "scenario", "option", "model", "actual", "predicted",
             "measured_point")


def actuals_dir() -> Path:
    return home() / "actuals"


@dataclass(frozen=True)
class RunOption:
    """The option that ran: a plan option's id and what it stands for."""

    option_id: str
    gpu_id: str
    n_gpus: int
    precision: str
    micro_batch: int
    global_batch: int
    grad_accum: int = 1


@dataclass(frozen=True)
class RunModel:
    """The model as the plan resolved it: what a measured point must name for a plan to use it."""

    name: str
    params: int
    seq_len: int | None = None
    flops_per_sample: float | None = None  # as the plan resolved it (the recorded run timed exactly this work)


@dataclass(frozen=True)
class ActualFigures:
    """What really happened; each figure optional, at least one given."""

    step_time_s: float | None = None
    hours: float | None = None
    cost_usd: float | None = None
    step_time_from: str = "typed"
    result_file: str | None = None  # with step_time_from result_file: the imported file

    def get(self, figure: str) -> float | None:
        return {"step_time_s": self.step_time_s, "hours": self.hours, "cost_usd": self.cost_usd}[figure]


@dataclass(frozen=True)
class Predicted:
    """The plan's prediction for the option when the run was recorded, in the plan JSON's field names."""

    plan_schema: str
    trainplan_version: str
    planned_on: dt.date
    step_time_s: float | None = None
    step_time_range_s: tuple[float, float] | None = None
    step_time_source: str | None = None
    range_meaning: str | None = None
    hours: float | None = None
    hours_range: tuple[float, float] | None = None
    cost_usd: float | None = None
    cost_usd_range: tuple[float, float] | None = None

    def get(self, figure: str) -> float | None:
        return {"step_time_s": self.step_time_s, "hours": self.hours, "cost_usd": self.cost_usd}[figure]

    def range_of(self, figure: str) -> tuple[float, float] | None:
        return {"step_time_s": self.step_time_range_s, "hours": self.hours_range,
                "cost_usd": self.cost_usd_range}[figure]


@dataclass(frozen=True)
class RecordedRun:
    date: dt.date
    scenario_name: str
    scenario: Mapping[str, Any]  # the scenario dict (planner.inputs.scenario.scenario_to_dict) the plan was made of
    option: RunOption
    model: RunModel
    actual: ActualFigures
    predicted: Predicted
    note: str = ""
    measured_point: str | None = None  # the result file this run's step time became
    not_a_point: str | None = None  # else why not (NOT_A_POINT), None before saving
    path: str = field(default="", compare=False)


# ---------------------------------------------------------------- building

def predicted_from_plan_json(option: Mapping[str, Any], plan_schema: str, trainplan_version: str,
                             planned_on: dt.date) -> Predicted:
    """The prediction, from one option of the plan JSON (planner.present.planjson.option_to_dict)."""
    def pair(key: str) -> tuple[float, float] | None:
        p = option.get(key)
        return (float(p[0]), float(p[1])) if p and p[0] is not None and p[1] is not None else None

    def num(key: str) -> float | None:
        x = option.get(key)
        return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None

    return Predicted(plan_schema=plan_schema, trainplan_version=trainplan_version, planned_on=planned_on,
                     step_time_s=num("step_time_s"), step_time_range_s=pair("step_time_range_s"),
                     step_time_source=option.get("step_time_source"), range_meaning=option.get("range_meaning"),
                     hours=num("hours"), hours_range=pair("hours_range"), cost_usd=num("cost_usd"),
                     cost_usd_range=pair("cost_usd_range"))


def check_figures(actual: ActualFigures, source: str = "recorded run") -> None:
    """At least one figure, each a positive finite number; InputError names the field."""
    given = {k: actual.get(k) for k in FIGURES}
    if all(v is None for v in given.values()):
        raise InputError(source, "actual", None, "at least one of step_time_s, hours, cost_usd")
    for key, value in given.items():
        if value is not None and (not math.isfinite(value) or not 0 < value <= MAX_NUMBER):
            raise InputError(source, f"actual.{key}", value, "a positive number")


def why_not_a_point(run: RecordedRun) -> str | None:
    """None when the run's step time is a one-GPU step at its micro-batch (a point plans can use); else the code.

    A multi-GPU step holds communication, an accumulated step several micro-steps: neither is the one-GPU time
    at one batch that a result file's measurement is.
    """
    if run.actual.step_time_s is None:
        return "no_step_time"
    if run.actual.step_time_from == "result_file":
        return "from_result_file"  # that file is a measurement already
    if run.option.n_gpus != 1:
        return "multi_gpu"
    if run.option.grad_accum != 1:
        return "grad_accum"
    return None


def recorded_result(run: RecordedRun, created_utc: str, actual_file: str = "") -> dict[str, Any]:
    """The result file (trainplan.bench/2) of a recorded step time: one measured row, every unmeasured field null
    with its reason."""
    t = run.actual.step_time_s
    if t is None:
        raise ValueError("a recorded run without a step time has no measurement")
    why = Reason("recorded_by_hand", date=run.date.isoformat())
    section = run.scenario.get("training")
    training: Mapping[str, Any] = section if isinstance(section, Mapping) else {}
    numbers: dict[str, Any] = {k: None for k in NUMERIC_FIELDS}
    numbers["samples_per_s"] = run.option.micro_batch / t
    row = {
        "source": "measured", "precision": run.option.precision, "batch_size": run.option.micro_batch,
        "status": "ok", **reason_fields(None),
        "step_time_s": {"median": t, "p10": t, "p90": t, "mean": t, "std": 0.0, "n": 1, "raw": [t],
                        "iqr_over_median": 0.0},
        "noisy": False, **numbers,
        **unmeasured_fields({k: why for k, v in numbers.items() if v is None} | {"phases_s": why,
                                                                                "memory_breakdown_bytes": why}),
        "provenance": {"kind": "measured", "retrieved": run.date.isoformat()},
        "gpu_count": 1, "global_batch": run.option.global_batch, "micro_batch": run.option.micro_batch,
        "batch_unit": "samples",
    }
    model: dict[str, Any] = {"name": run.model.name, "params": run.model.params}
    if run.model.seq_len:
        model["seq_len"] = run.model.seq_len
    if run.model.flops_per_sample:
        model["flops_per_sample"] = run.model.flops_per_sample
    return {
        "schema": RESULT_SCHEMA, "created_utc": created_utc, "partial": False, "missing": [],
        **warning_fields([Reason("recorded_run_file", date=run.date.isoformat(), file=actual_file) if actual_file
                          else Reason("recorded_run", date=run.date.isoformat())]),
        "environment": {
            "device": "cuda", "gpu_profile_id": run.option.gpu_id, "gpu_count": 1, "trainplan_version": VERSION,
            "cudnn": None, **unmeasured_fields({"cudnn": why}), "recorded_run": True,
        },
        "model": model,
        "settings": {
            "optimizer": training.get("optimizer"), "optimizer_impl": training.get("optimizer_impl"),
            "activation_checkpointing": bool(training.get("activation_checkpointing", False)),
            "frozen_fraction": training.get("frozen_fraction", 0.0), "adapter": training.get("adapter"),
            "sharding": training.get("sharding", "none"), "grad_accum": run.option.grad_accum,
            "recorded_run": actual_file or True,
        },
        "measurements": [row],
    }


# ---------------------------------------------------------------- writing

def run_to_dict(run: RecordedRun) -> dict[str, Any]:
    o, a, p = run.option, run.actual, run.predicted

    def pair(x: tuple[float, float] | None) -> list[float] | None:
        return [x[0], x[1]] if x else None

    return {
        "schema": SCHEMA, "date": run.date.isoformat(), "note": run.note, "scenario_name": run.scenario_name,
        "option": {"id": o.option_id, "gpu_id": o.gpu_id, "n_gpus": o.n_gpus, "precision": o.precision,
                   "micro_batch": o.micro_batch, "grad_accum": o.grad_accum, "global_batch": o.global_batch},
        "model": {"name": run.model.name, "params": run.model.params, "seq_len": run.model.seq_len,
                  **({"flops_per_sample": run.model.flops_per_sample} if run.model.flops_per_sample else {})},
        "actual": {"step_time_s": a.step_time_s, "hours": a.hours, "cost_usd": a.cost_usd,
                   "step_time_from": a.step_time_from, "result_file": a.result_file},
        "predicted": {"plan_schema": p.plan_schema, "trainplan_version": p.trainplan_version,
                      "planned_on": p.planned_on.isoformat(), "step_time_s": p.step_time_s,
                      "step_time_range_s": pair(p.step_time_range_s), "step_time_source": p.step_time_source,
                      "range_meaning": p.range_meaning, "hours": p.hours, "hours_range": pair(p.hours_range),
                      "cost_usd": p.cost_usd, "cost_usd_range": pair(p.cost_usd_range)},
        "measured_point": {"file": run.measured_point, "why_not": run.not_a_point},
        "scenario": _plain(run.scenario),
    }


def _plain(x: Any) -> Any:
    """Mappings and tuples as YAML's plain dicts and lists (MappingProxyType and tuples do not safe_dump)."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def save_run(run: RecordedRun, folder: str | Path | None = None, results_root: str | Path | None = None,
             now: dt.datetime | None = None) -> RecordedRun:
    """Write the run (atomic, never overwriting: a taken name gets -2, -3 ...) and, when its step time is a
    one-GPU point, its result file first; returns the run as saved (paths filled in).

    InputError (before anything is written) when the figures are not valid.
    """
    check_figures(run.actual)
    folder = Path(folder) if folder is not None else actuals_dir()
    now = now or dt.datetime.now(dt.UTC)
    target = folder / f"{run.date.isoformat()}-{slug(run.option.option_id)}.yaml"
    why = why_not_a_point(run)
    point = None
    if why is None:
        created = f"{run.date.isoformat()}T{now.strftime('%H:%M:%S')}Z"
        root = Path(results_root) if results_root is not None else user_results_dir()
        path = result_path(root, run.option.gpu_id, RECORDED_PREFIX + run.model.name, created)
        point = str(write_result_atomic(recorded_result(run, created, target.name), path))
    saved = replace(run, measured_point=point, not_a_point=why)
    folder.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(run_to_dict(saved), sort_keys=False, allow_unicode=True)
    written = atomic_write(target, text, if_exists="suffix")
    return replace(saved, path=str(written))


# ---------------------------------------------------------------- reading

def read_actual(path: str | Path) -> RecordedRun:
    return parse_actual(loader.load_file(path, ACTUAL_FILE), str(path))


def parse_actual(data: object, source: str) -> RecordedRun:
    """One recorded run; InputError names the file and the bad field."""
    r = Reader(data, source)
    r.reject_unknown(_TOP_KEYS)
    if r.raw("schema", None) != SCHEMA:
        raise r.fail("schema", r.data.get("schema"), SCHEMA)
    scenario = r.raw("scenario")
    if not isinstance(scenario, Mapping):
        raise r.fail("scenario", scenario, "the scenario the plan was made of (a mapping)")
    o = _section(r, "option")
    option = RunOption(
        option_id=o.string("id"), gpu_id=o.string("gpu_id"), n_gpus=o.integer("n_gpus", minimum=1, maximum=MAX_COUNT),
        precision=o.choice("precision", PRECISIONS), micro_batch=o.integer("micro_batch", minimum=1, maximum=MAX_BATCH),
        global_batch=o.integer("global_batch", minimum=1, maximum=MAX_BATCH),
        grad_accum=o.integer("grad_accum", 1, minimum=1, maximum=MAX_BATCH))
    m = _section(r, "model")
    model = RunModel(m.string("name"), m.integer("params", minimum=1, maximum=10**15),
                     m.integer("seq_len", None, minimum=1, maximum=MAX_COUNT),
                     m.number("flops_per_sample", None, minimum=1.0, maximum=1e30))
    a = _section(r, "actual")
    actual = ActualFigures(
        step_time_s=_positive(a, "step_time_s"), hours=_positive(a, "hours"), cost_usd=_positive(a, "cost_usd"),
        step_time_from=a.choice("step_time_from", STEP_TIME_FROM, "typed"),
        result_file=a.string("result_file", None))
    check_figures(actual, source)
    p = _section(r, "predicted")
    predicted = Predicted(
        plan_schema=p.string("plan_schema"), trainplan_version=p.string("trainplan_version"),
        planned_on=p.date("planned_on"), step_time_s=_positive(p, "step_time_s"),
        step_time_range_s=_range(p, "step_time_range_s"), step_time_source=p.string("step_time_source", None),
        range_meaning=p.string("range_meaning", None), hours=_positive(p, "hours"),
        hours_range=_range(p, "hours_range"), cost_usd=_number(p, "cost_usd"),
        cost_usd_range=_range(p, "cost_usd_range"))
    point = r.sub("measured_point")
    return RecordedRun(
        date=r.date("date"), scenario_name=r.string("scenario_name"), scenario=MappingProxyType(dict(scenario)),
        option=option, model=model, actual=actual, predicted=predicted,
        note=_note(r),
        measured_point=point.string("file", None) if point else None,
        not_a_point=point.choice("why_not", NOT_A_POINT, None) if point else None, path=source)


def _note(r: Reader) -> str:
    note = r.raw("note", "")
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
        raise r.fail("note", note, f"text of at most {MAX_NOTE_CHARS:,} characters")
    return note


def _section(r: Reader, key: str) -> Reader:
    sub = r.sub(key)
    if sub is None:
        raise r.fail(key, None, "a mapping (this section is required)")
    return sub


def _positive(r: Reader, key: str) -> float | None:
    return r.number(key, None, minimum=0, maximum=MAX_NUMBER, exclusive_min=True)


def _number(r: Reader, key: str) -> float | None:
    return r.number(key, None, minimum=0, maximum=MAX_NUMBER)


def _range(r: Reader, key: str) -> tuple[float, float] | None:
    value = r.raw(key, None)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2 or any(
            isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) or x < 0 for x in value) \
            or value[0] > value[1]:
        raise r.fail(key, value, "[low, high]: two non-negative numbers, low <= high")
    return float(value[0]), float(value[1])


def scan_actuals(folder: str | Path | None = None) -> tuple[list[RecordedRun], list[str]]:
    """Every recorded run in the folder (oldest first), and one problem line per bad file (never hides the rest)."""
    root = Path(folder) if folder is not None else actuals_dir()
    runs: list[RecordedRun] = []
    problems: list[str] = []
    try:
        if not root.is_dir():
            return runs, problems
        paths = sorted(p for p in root.glob("*.yaml") if not p.name.startswith("."))
    except OSError as exc:
        return runs, [skipped(root, exc)]
    for path in paths:
        try:
            runs.append(read_actual(path))
        except InputError as exc:
            problems.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - one bad file must never hide the others
            problems.append(skipped(path, exc))
    runs.sort(key=lambda run: (run.date, run.path))
    return runs, problems
