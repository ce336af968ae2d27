"""Import a teammate's result file: validate it, then copy it under $TRAINPLAN_HOME/results/<device dir>/."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner.inputs import loader
from planner.inputs.atomic import refuse_empty
from planner.inputs.errors import InputError
from planner.inputs.filenames import slug
from planner.inputs.resultfile import ResultFile, parse_result, result_path, write_result_atomic
from planner.inputs.userdata import user_results_dir

MAX_IMPORT_BYTES = loader.RESULT.max_bytes  # the cap of any result file: what plans from a folder imports too


@dataclass(frozen=True)
class Imported:
    path: Path
    result: ResultFile
    already_there: bool  # the same measurements were imported before: nothing new was written


def device_dir(result: ResultFile) -> str:
    """Where a result file belongs (DESIGN.md): traced/, cpu/, <gpu profile id>/ or unknown-<gpu name>/."""
    if result.is_traced:
        return "traced"
    if result.device == "cpu":
        return "cpu"
    if result.gpu_profile_id:
        return slug(str(result.gpu_profile_id))
    return "unknown-" + slug(str(result.environment.get("gpu_name") or "gpu"))


def check_upload(name: str, data: bytes) -> tuple[ResultFile, dict]:
    """Validate an uploaded result file; InputError names the file and the problem (size, encoding, field)."""
    raw = loader.load_bytes(data, name, loader.RESULT)
    return parse_result(raw, name), raw


def import_result(name: str, data: bytes, root: str | Path | None = None) -> Imported:
    """Validate, then write a copy under root/<device dir>/<model>-<timestamp>.json (atomic, never overwriting).

    A bad file, or one with no measurement, raises InputError before anything is written. Importing the same file twice writes nothing the
    second time (already_there=True).
    """
    result, raw = check_upload(name, data)
    root = Path(root) if root is not None else user_results_dir()
    # A file with no measurement adds nothing to any plan; importing it would only look like it did.
    refuse_empty(len(result.measurements), what="measurements (its 'measurements' list is empty)", source=name)
    target = result_path(root, device_dir(result), result.model_name, result.created_utc)
    same = _same_file(target, raw)
    if same is not None:
        return Imported(same, result, True)
    try:
        path = write_result_atomic(raw, target)
    except ValueError as exc:  # NaN or Infinity somewhere outside the validated fields: JSON cannot hold it
        raise InputError(name, None, str(exc), "finite numbers only (no NaN or Infinity)") from None
    return Imported(path, result, False)


def _same_file(target: Path, raw: dict) -> Path | None:
    """An already-imported copy (the target name or its -2, -3 ... siblings) with exactly this content."""
    if not target.parent.is_dir():
        return None
    for candidate in sorted(target.parent.glob(f"{target.stem}*.json")):
        rest = candidate.stem[len(target.stem):]
        if rest and not (rest.startswith("-") and rest[1:].isdigit()):
            continue
        try:
            if loader.load_file(candidate, loader.RESULT) == raw:
                return candidate
        except InputError:
            continue
    return None
