"""Reasons in result files as data: the writer's fields, the reader of reason keys, and the previous version's reader.

Shape (trainplan.bench/2, additive; docs/schemas.md#bench-result): beside a reason's English text (`reason`,
`safe_reason`) the writer puts `<name>_keys`, a list of {key, params}; beside `unmeasured: {field: text}` it puts
`unmeasured_keys: {field: [{key, params}]}`; beside `warnings: [text]` it puts `warning_keys: [[{key, params}]]`
(one list per warning). A list because bench joins several reasons with "; "; the text is the list's sentences
(planner.vocab.BENCH_REASONS) joined so. Keys and parameters are checked against planner.vocab; a file written
before keys existed (every shipped one) is read by `legacy_parts`, which knows the sentences bench used to write.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from types import MappingProxyType

from planner.inputs.errors import InputError
from planner.vocab import BENCH_REASONS, Reason, reason_params

SEPARATOR = "; "  # between the sentences of one reason text
MAX_PARAM_CHARS = 2000


@dataclass(frozen=True)
class ReasonPart:
    """One sentence of a reason as read: a BENCH_REASONS key and its parameters, or key None for text no key stands
    for (a teammate's own words, or a sentence this version does not know), kept as written."""

    key: str | None
    params: Mapping = field(default_factory=lambda: MappingProxyType({}))
    text: str = ""


Parts = tuple[ReasonPart, ...]


# ---------------------------------------------------------------- writing (bench, the Runs page)

def reason_fields(*reasons: Reason | None, name: str = "reason") -> dict[str, object]:
    """{name: the English text or None, name_keys: [{key, params}]} (no keys field when there is no reason)."""
    parts = [r for r in reasons if r is not None]
    if not parts:
        return {name: None}
    return {name: SEPARATOR.join(map(str, parts)), f"{name}_keys": [r.as_json() for r in parts]}


def unmeasured_fields(reasons: Mapping[str, Reason]) -> dict[str, dict]:
    """{unmeasured: {field: text}, unmeasured_keys: {field: [{key, params}]}} for the fields left null."""
    return {"unmeasured": {f: str(r) for f, r in reasons.items()},
            "unmeasured_keys": {f: [r.as_json()] for f, r in reasons.items()}}


def warning_fields(warnings: Iterable[Reason]) -> dict[str, list]:
    items = list(warnings)
    return {"warnings": [str(w) for w in items], "warning_keys": [[w.as_json()] for w in items]}


# ---------------------------------------------------------------- reading

def _param_problem(key: str, params: object) -> str | None:
    if not isinstance(params, Mapping):
        return "an object of parameters"
    wanted = set(reason_params(key))
    if set(params) != wanted:
        return f"exactly the parameters of {key!r}: " + (", ".join(sorted(wanted)) or "none")
    for value in params.values():
        if isinstance(value, bool) or not isinstance(value, str | int | float) \
                or (isinstance(value, str) and len(value) > MAX_PARAM_CHARS):
            return f"parameters that are strings (at most {MAX_PARAM_CHARS} characters) or numbers"
    return None


def keyed_parts(value: object, source: str, where: str) -> Parts:
    """A `*_keys` list read and checked: InputError naming the file and field for an unknown key or a parameter
    missing, extra or of the wrong type."""
    if not isinstance(value, list) or not value or len(value) > 100:
        raise InputError(source, where, value, "a non-empty list of {key, params} (planner.vocab.BENCH_REASONS)")
    out = []
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or set(item) - {"key", "params"}:
            raise InputError(source, at, item, "an object {key, params}")
        key = item.get("key")
        if key not in BENCH_REASONS:
            raise InputError(source, f"{at}.key", key, "a reason key this version knows (planner.vocab.BENCH_REASONS)")
        params = item.get("params", {})
        problem = _param_problem(key, params)
        if problem:
            raise InputError(source, f"{at}.params", params, problem)
        out.append(ReasonPart(key, MappingProxyType(dict(params)), BENCH_REASONS[key].format(**params)))
    return tuple(out)


def read_reason(text: object, keys: object, source: str, where: str, problems: list[str]) -> Parts:
    """The parts of one reason: from its keys when the file has them (a bad key is added to `problems` and the
    text is kept as written), else from its text by the previous version's reader."""
    if text is None and keys is None:
        return ()
    shown = text if isinstance(text, str) else ""
    if keys is None:
        return legacy_parts(shown)
    try:
        return keyed_parts(keys, source, where)
    except InputError as exc:
        problems.append(str(exc))
        return (ReasonPart(None, text=shown),) if shown else ()


# ---------------------------------------------------------------- files written before reason keys

# What bench wrote into result files before reason keys (schema /1, and /2 up to issue 31): each sentence word for
# word, with {fields} where it filled in a value, and the key it means now. Frozen history: a new or reworded
# sentence goes to planner.vocab.BENCH_REASONS only (files written since carry keys). Bench's exception texts
# ("RuntimeError: ...") have no sentence here and stay as written.
LEGACY_SENTENCES: dict[str, str] = {
    "traced on CPU fake tensors: no GPU kernels run": "no_gpu_kernels",
    "traced on CPU fake tensors: no GPU kernels run, so there is no time to measure": "no_gpu_kernels_time",
    "the caching allocator's segments and fragmentation are not emulated": "allocator_not_emulated",
    "traced in steady state (optimizer state allocated before the step)": "steady_state",
    "CUDA context and NCCL buffers are outside a tensor trace": "outside_trace",
    "fake tensors carry no values": "fake_values",
    "trace failed: {error}": "trace_failed",
    "CPU: torch keeps allocator peak statistics for CUDA only": "cpu_memory",
    "no phase pass (--phase-steps 0)": "no_phase_pass",
    "no phase pass (--phase-steps 0) to measure it": "no_phase_pass_memory",
    "the model's FLOPs per sample are unknown": "no_flops",
    "no peak TFLOPS for this precision": "no_peak",
    "not measured": "not_measured",
    "no GradScaler at this precision (only fp16 uses one)": "no_grad_scaler",
    "no GPU: NVML telemetry applies to GPUs only": "no_gpu_nvml",
    "no GPU profile on CPU (MFU is relative to a GPU's dense peak)": "no_profile_cpu",
    "the GPU matches no profile, so there is no peak to compare with": "no_profile_gpu",
    "profile {profile} lists no {precision} peak (unsupported there)": "no_precision_peak",
    "not measured yet: the run was still going when this file was last written (if it has ended, it stopped before "
    "this point: killed, out of host memory, or crashed)": "in_progress",
    "interrupted (Ctrl-C or SIGTERM) before this point was measured": "interrupted",
    "no NVML energy counter and no power samples": "no_energy",
    "tf32 is a CUDA tensor-core mode; on CPU this is the fp32 (ieee) measurement": "tf32_on_cpu",
    "pin_memory only matters for copies to a CUDA device": "pin_memory_cpu",
    "bench ddp: not measured (bench run measures memory)": "ddp_no_memory",
    "bench ddp: no NVML sampling": "ddp_no_nvml",
    "bench ddp measures scaling; bench run measures per-GPU throughput": "ddp_no_throughput",
    "bench ddp does not track loss-scale skips": "ddp_no_scaler",
    "not measured: a run recorded by hand on {date} gives only its step time": "recorded_by_hand",
    "CPU: no device-memory limit to search (host memory is swapped, not exhausted)": "cpu_no_memory_limit",
    "batch sizes not chosen yet (--batch auto searches the safe maximum first)": "batch_not_chosen",
    "the run failed before this point ({error})": "run_failed",
    "no batch size fits": "no_batch_fits",
    "Recorded by hand on {date} (a finished run's step time, typed in): one figure, no spread, no memory.":
        "recorded_run",
    "Recorded by hand on {date} (a finished run's step time, typed in; {file}): one figure, no spread, no memory.":
        "recorded_run_file",
}


@cache
def _legacy_table() -> tuple[dict[str, str], tuple[tuple[re.Pattern[str], str], ...]]:
    """(sentence -> key, (pattern, key) for the sentences with {fields}): parsing allowed here, the contract's own
    reader of its previous version."""
    import string

    exact: dict[str, str] = {}
    patterns = []
    for sentence, key in LEGACY_SENTENCES.items():
        parsed = list(string.Formatter().parse(sentence))
        if all(name is None for _, name, _, _ in parsed):
            exact[sentence] = key
            continue
        rx = "".join(re.escape(literal) + (f"(?P<{name}>.+?)" if name else "") for literal, name, _, _ in parsed)
        patterns.append((re.compile(rx, re.S), key))
    return exact, tuple(patterns)


def _legacy_sentence(text: str) -> ReasonPart | None:
    exact, patterns = _legacy_table()
    if text in exact:
        return ReasonPart(exact[text], MappingProxyType({}), text)
    for rx, key in patterns:
        if m := rx.fullmatch(text):
            return ReasonPart(key, MappingProxyType(m.groupdict()), text)
    return None


@lru_cache(maxsize=4096)  # the same few sentences recur in every measurement of every file: read each once
def legacy_parts(text: str | None) -> Parts:
    """A reason written without keys: each known sentence becomes its key (the values it filled in as
    parameters); other text stays as written. Sentences joined with "; " are read one by one (the longest run of
    parts that is one known sentence first: some hold "; " themselves)."""
    if not text:
        return ()
    pieces = str(text).split(SEPARATOR)
    out: list[ReasonPart] = []
    i = 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            known = _legacy_sentence(SEPARATOR.join(pieces[i:j]))
            if known is not None:
                out.append(known)
                i = j
                break
        else:
            out.append(ReasonPart(None, MappingProxyType({}), pieces[i]))
            i += 1
    return tuple(out)
