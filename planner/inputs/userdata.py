"""User data under $TRAINPLAN_HOME (default ~/.trainplan): saved scenarios, price overrides, profiles, results."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import yaml

from planner.inputs.errors import InputError
from planner.inputs.profiles import PriceQuote

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_RESULTS_DIR = PROJECT_ROOT / "results"
SHIPPED_PROFILES_DIR = PROJECT_ROOT / "gpu_profiles"
SHIPPED_SCENARIOS_DIR = PROJECT_ROOT / "scenarios"
DEFAULT_SCENARIO = SHIPPED_SCENARIOS_DIR / "resnet50-imagenet.yaml"


MAX_USD_PER_GPU_HOUR = 200.0  # the same bound as shipped profile quotes (planner/profiles.py)


def home() -> Path:
    return Path(os.environ.get("TRAINPLAN_HOME") or Path.home() / ".trainplan")


def user_results_dir() -> Path:
    return home() / "results"


def user_profiles_dir() -> Path:
    return home() / "gpu_profiles"


def user_scenarios_dir() -> Path:
    return home() / "scenarios"


def price_overrides_path() -> Path:
    return home() / "price_overrides.yaml"


def load_price_overrides(path: Path | None = None) -> dict[str, list[PriceQuote]]:
    """{gpu id: [PriceQuote(origin='user')]} from the overrides file; a bad file raises InputError."""
    p = path or price_overrides_path()
    if not p.exists():
        return {}
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InputError(str(p), None, str(exc).splitlines()[0], "valid YAML") from None
    if not isinstance(data, dict):
        raise InputError(str(p), None, data, "a mapping {gpu id: [quotes]}")
    out: dict[str, list[PriceQuote]] = {}
    for gpu_id, quotes in data.items():
        if not isinstance(quotes, list):
            raise InputError(str(p), str(gpu_id), quotes, "a list of price quotes")
        out[str(gpu_id)] = [_quote(q, str(p), f"{gpu_id}[{i}]") for i, q in enumerate(quotes)]
    return out


def _quote(q: object, source: str, field: str) -> PriceQuote:
    if not isinstance(q, dict):
        raise InputError(source, field, q, "a mapping with provider, instance, usd_per_gpu_hour, tier")
    try:
        usd = float(q["usd_per_gpu_hour"])
    except (KeyError, TypeError, ValueError):
        raise InputError(source, f"{field}.usd_per_gpu_hour", q.get("usd_per_gpu_hour"),
                         "a price in USD per GPU-hour") from None
    if not 0 < usd <= MAX_USD_PER_GPU_HOUR:
        raise InputError(source, f"{field}.usd_per_gpu_hour", usd,
                         f"a price > 0 and <= {MAX_USD_PER_GPU_HOUR:g} USD per GPU-hour")
    tier = q.get("tier", "on_demand")
    if tier not in ("on_demand", "spot", "reserved_1y", "reserved_3y"):
        raise InputError(source, f"{field}.tier", tier, "on_demand, spot, reserved_1y or reserved_3y")
    as_of = q.get("as_of")
    if isinstance(as_of, str):
        as_of = dt.date.fromisoformat(as_of)
    return PriceQuote(
        provider=str(q.get("provider", "my-provider")), instance=str(q.get("instance", "custom")),
        gpus_per_instance=int(q.get("gpus_per_instance", 1)), usd_per_gpu_hour=usd, tier=tier,
        billing_increment_s=int(q.get("billing_increment_s", 1)), region=q.get("region"),
        as_of=as_of, source=str(q.get("source", "typed in by the user")), origin="user",
    )


def save_price_override(gpu_id: str, quote: PriceQuote, path: Path | None = None) -> Path:
    """Add (or replace, same provider/instance/tier) one user quote; shipped profiles are never edited."""
    p = path or price_overrides_path()
    current = yaml.safe_load(p.read_text(encoding="utf-8")) if p.exists() else {}
    current = current or {}
    rows = [r for r in current.get(gpu_id, [])
            if (r.get("provider"), r.get("instance"), r.get("tier")) != (quote.provider, quote.instance, quote.tier)]
    rows.append({
        "provider": quote.provider, "instance": quote.instance, "gpus_per_instance": quote.gpus_per_instance,
        "usd_per_gpu_hour": quote.usd_per_gpu_hour, "tier": quote.tier,
        "billing_increment_s": quote.billing_increment_s, "region": quote.region,
        "as_of": quote.as_of.isoformat() if quote.as_of else None, "source": quote.source,
    })
    current[gpu_id] = rows
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(current, sort_keys=True, allow_unicode=True), encoding="utf-8")
    os.replace(tmp, p)
    return p


def remove_price_override(gpu_id: str, provider: str, instance: str, tier: str, path: Path | None = None) -> bool:
    """Delete one user quote (the shipped quote it replaced applies again); True when something was removed."""
    p = path or price_overrides_path()
    if not p.exists():
        return False
    current = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    rows = current.get(gpu_id, [])
    kept = [r for r in rows if (r.get("provider"), r.get("instance"), r.get("tier")) != (provider, instance, tier)]
    if len(kept) == len(rows):
        return False
    if kept:
        current[gpu_id] = kept
    else:
        current.pop(gpu_id, None)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(current, sort_keys=True, allow_unicode=True), encoding="utf-8")
    os.replace(tmp, p)
    return True
