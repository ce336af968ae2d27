"""User GPU profiles (validate, save, prefill from `bench detect`) and price overrides, checked like shipped ones."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from planner.inputs.atomic import atomic_write
from planner.inputs.errors import InputError
from planner.inputs.filenames import slug
from planner.inputs.profiles import (
    SCHEMA,
    GpuProfile,
    PriceQuote,
    load_profile,
    parse_price,
    parse_profile,
    profile_to_dict,
)
from planner.inputs.userdata import user_profiles_dir
from planner.vocab import GIB, PEAK_KEYS

# ---------------------------------------------------------------- price overrides

def override_quote(gpu_id: str, known_ids: Iterable[str], *, provider: str, instance: str, usd_per_gpu_hour: float,
                   tier: str, gpus_per_instance: int = 1, billing_increment_s: int = 3600,
                   region: str | None = None, as_of: dt.date | None = None, source: str = "") -> PriceQuote:
    """A user price checked by the same rules as a shipped profile's quotes (InputError names the field)."""
    where = f"price override for {gpu_id}"
    if gpu_id not in set(known_ids):
        raise InputError(where, "gpu", gpu_id, "a known GPU profile id")
    data = {"provider": (provider or "").strip(), "instance": (instance or "").strip(),
            "usd_per_gpu_hour": usd_per_gpu_hour, "tier": tier, "gpus_per_instance": gpus_per_instance,
            "billing_increment_s": billing_increment_s, "region": (region or "").strip() or None,
            "as_of": as_of, "source": (source or "").strip() or "typed in by the user", "origin": "user"}
    return parse_price(data, where, "quote")


# ---------------------------------------------------------------- adding a profile

# Form field -> how it becomes a profile key; blank optional fields are left out of the file.
FORM_DEFAULTS: dict[str, Any] = {
    "id": "", "name": "", "vendor": "nvidia", "architecture": "", "compute_capability": "", "nvml_names": "",
    "memory_gib": None, "memory_gib_source": "datasheet", "memory_bandwidth_gb_per_s": None,
    "fp32": None, "tf32": None, "fp16": None, "bf16": None, "fp8": None,
    "tdp_w": None, "interconnect_kind": "", "interconnect_gb_per_s": None, "pcie_gen": None, "sources": "",
    "notes": "",
}


def _lines(text: str | None) -> list[str]:
    return [x.strip() for x in re.split(r"[\n;]", text or "") if x.strip()]


def profile_data(form: Mapping[str, Any]) -> dict:
    """The trainplan.gpu/1 mapping for the form's values (what the YAML file will hold)."""
    f = {**FORM_DEFAULTS, **form}
    data: dict[str, Any] = {"schema": SCHEMA, "id": (f["id"] or "").strip(), "name": (f["name"] or "").strip(),
                            "vendor": f["vendor"]}
    if (f["architecture"] or "").strip():
        data["architecture"] = f["architecture"].strip()
    if (f["compute_capability"] or "").strip():
        data["compute_capability"] = f["compute_capability"].strip()
    names = [x.strip() for x in re.split(r"[\n,]", f["nvml_names"] or "") if x.strip()]
    if names:
        data["nvml_names"] = names
    data["memory_gib"] = f["memory_gib"]
    data["memory_gib_source"] = f["memory_gib_source"]
    data["memory_bandwidth_gb_per_s"] = f["memory_bandwidth_gb_per_s"]
    data["peak_tflops"] = {p: f[p] for p in PEAK_KEYS if f[p] is not None}
    data["tdp_w"] = f["tdp_w"]
    if (f["interconnect_kind"] or "").strip() or f["interconnect_gb_per_s"] is not None:
        data["interconnect"] = {"kind": (f["interconnect_kind"] or "").strip(),
                                "bidirectional_gb_per_s": f["interconnect_gb_per_s"]}
    if f["pcie_gen"] is not None:
        data["pcie_gen"] = int(f["pcie_gen"])
    data["prices"] = []
    data["sources"] = _lines(f["sources"])
    if (f["notes"] or "").strip():
        data["notes"] = f["notes"].strip()
    return data


def validate_new_profile(data: Mapping[str, Any], known_ids: Iterable[str],
                         folder: str | Path | None = None) -> GpuProfile:
    """Check a new profile exactly as a shipped file is checked, plus: a new id and at least one source."""
    root = Path(folder) if folder is not None else user_profiles_dir()
    pid = data.get("id")
    source = str(root / f"{pid}.yaml") if isinstance(pid, str) and pid and "/" not in pid else "new GPU profile"
    if not isinstance(pid, str) or not pid.strip():
        raise InputError(source, "id", pid, "an id such as rtx5090-32gb (lower-case letters, digits, '.', '_', '-')")
    profile = parse_profile(dict(data), source)
    if profile.id in set(known_ids) or (root / f"{profile.id}.yaml").exists():
        raise InputError(source, "id", profile.id, "an id not already used by a shipped or added GPU profile")
    if not profile.sources:
        raise InputError(source, "sources", [], "at least one source for the figures (a datasheet URL, or "
                         "'python -m bench detect on <host>' for the name and memory)")
    return profile


def save_profile(profile: GpuProfile, folder: str | Path | None = None) -> Path:
    """Write the profile as <folder>/<id>.yaml (atomic; an existing file is never replaced) and read it back."""
    root = Path(folder) if folder is not None else user_profiles_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{profile.id}.yaml"
    text = yaml.safe_dump(_yaml_ready(profile_to_dict(profile)), sort_keys=False, allow_unicode=True)
    try:
        atomic_write(target, text, if_exists="fail")  # a profile is never silently replaced
    except FileExistsError:
        raise InputError(str(target), "id", profile.id, "an id not already used by an added GPU profile") from None
    load_profile(target)  # what was written must load like any other profile
    return target


def _yaml_ready(d: Mapping) -> dict:
    """Dates as ISO strings and no empty optional keys, so the file reads like the shipped ones."""
    out = {}
    for k, v in d.items():
        if v is None or (k in ("estimated_peaks", "notes") and not v):
            continue
        if isinstance(v, dt.date):
            v = v.isoformat()
        elif k == "prices":
            v = [{qk: (qv.isoformat() if isinstance(qv, dt.date) else qv) for qk, qv in q.items()} for q in v]
        out[k] = v
    return out


# ---------------------------------------------------------------- prefill from `python -m bench detect --json`

def detected_gpus(facts: Mapping[str, Any]) -> list[dict]:
    """The GPUs in detect's JSON: torch's list (with its NVML facts), else NVML's own list (a CPU-only torch)."""
    out = []
    for g in facts.get("gpus") or []:
        nvml = g.get("nvml") or {}
        out.append({"index": g.get("index", 0), "name": nvml.get("name") or g.get("name"),
                    "memory_bytes": nvml.get("memory_total_bytes") or g.get("total_memory_bytes"),
                    "memory_from": "nvml" if nvml.get("memory_total_bytes") else "torch",
                    "capability": g.get("capability"), "power_limit_w": nvml.get("power_limit_w"),
                    "profile_id": g.get("profile_id")})
    if not out:
        for g in facts.get("nvml_gpus") or []:
            out.append({"index": g.get("index", 0), "name": g.get("name"), "memory_bytes": g.get("memory_total_bytes"),
                        "memory_from": "nvml", "capability": None, "power_limit_w": g.get("power_limit_w"),
                        "profile_id": g.get("profile_id")})
    return [g for g in out if g["name"]]


# Memory sizes GPUs are sold with (GB on the box, in fact GiB of chips); the driver reports a little less.
_LABEL_SIZES = (4, 6, 8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 128, 141, 180, 192, 256, 288)


def memory_label(memory_gib: float) -> int:
    """The size on the box for a driver-reported capacity: 79.6 -> 80, 31.4 -> 32, 22.5 -> 24."""
    return next((s for s in _LABEL_SIZES if memory_gib * 0.98 <= s <= memory_gib * 1.15), math.ceil(memory_gib))


def suggest_id(name: str, memory_gib: float | None) -> str:
    """'NVIDIA GeForce RTX 5090' with 31.4 GiB -> 'rtx-5090-32gb' (the shipped ids' style)."""
    stem = re.sub(r"^((nvidia|amd|geforce|radeon|tesla|quadro)\s+)+", "", name.strip(), flags=re.I)
    base = slug(stem)
    if memory_gib and not re.search(r"(^|-)\d+gb($|-)", base):
        base += f"-{memory_label(memory_gib)}gb"
    return base


def prefill_from_detect(facts: Mapping[str, Any], index: int = 0, today: dt.date | None = None) -> dict | None:
    """Form values for the detected GPU: name, NVML name, memory (driver), compute capability, power limit."""
    gpus = detected_gpus(facts)
    gpu = next((g for g in gpus if g["index"] == index), gpus[0] if gpus else None)
    if gpu is None:
        return None
    name = str(gpu["name"])
    memory = round(gpu["memory_bytes"] / GIB, 2) if gpu.get("memory_bytes") else None
    vendor = "amd" if re.search(r"\b(amd|instinct|radeon)\b", name, re.I) else "nvidia"
    when = (today or dt.date.today()).isoformat()
    values = {**FORM_DEFAULTS, "id": suggest_id(name, memory), "name": name, "vendor": vendor, "nvml_names": name,
              "memory_gib": memory, "memory_gib_source": "driver" if memory else "datasheet",
              "compute_capability": gpu.get("capability") or "",
              "tdp_w": float(gpu["power_limit_w"]) if gpu.get("power_limit_w") else None,
              "sources": f"python -m bench detect on {facts.get('hostname', 'this machine')} ({when}): device name, "
                         f"memory ({gpu['memory_from']})" + (", power limit" if gpu.get("power_limit_w") else "")}
    return values
