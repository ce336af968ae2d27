"""User data under $TRAINPLAN_HOME (default ~/.trainplan): saved scenarios, price overrides, profiles, results."""

from __future__ import annotations

from pathlib import Path

import yaml

from planner.inputs import loader, shipped
from planner.inputs.atomic import atomic_write
from planner.inputs.errors import InputError
from planner.inputs.quotes import PriceQuote, parse_price

# Where user data lives (planner.inputs.user_home, below shipped): named here too, where the rest of user data is.
from planner.inputs.user_home import home as home
from planner.inputs.user_home import price_overrides_path as price_overrides_path
from planner.inputs.user_home import user_profiles_dir as user_profiles_dir
from planner.inputs.user_home import user_results_dir as user_results_dir
from planner.inputs.user_home import user_scenarios_dir as user_scenarios_dir

PROJECT_ROOT = shipped.ROOT  # the checkout, or the installed data (planner.inputs.shipped)
SHIPPED_RESULTS_DIR = shipped.RESULTS_DIR
SHIPPED_PROFILES_DIR = shipped.PROFILES_DIR
SHIPPED_SCENARIOS_DIR = shipped.SCENARIOS_DIR
DEFAULT_SCENARIO = SHIPPED_SCENARIOS_DIR / "resnet50-imagenet.yaml"


def load_price_overrides(path: Path | None = None) -> dict[str, list[PriceQuote]]:
    """{gpu id: [PriceQuote(origin='user')]} from the overrides file; a bad file raises InputError naming the field.

    Each quote is checked by the same rules as a shipped profile's quotes (quotes.parse_price); a hand-written
    quote may leave out provider, instance, tier, billing_increment_s and source (defaults below).
    """
    p = path or price_overrides_path()
    data = _read_overrides(p)
    out: dict[str, list[PriceQuote]] = {}
    for gpu_id, quotes in data.items():
        if not isinstance(gpu_id, str) or not gpu_id.strip():
            raise InputError(str(p), str(gpu_id), gpu_id, "a GPU profile id (text) as the key")
        if not isinstance(quotes, list):
            raise InputError(str(p), gpu_id, quotes, "a list of price quotes")
        out[gpu_id] = [_quote(q, str(p), f"{gpu_id}[{i}]") for i, q in enumerate(quotes)]
    return out


def _read_overrides(p: Path) -> dict:
    if not p.exists() and not p.is_symlink():
        return {}
    data = loader.load_file(p, loader.OVERRIDES)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(str(p), None, data, "a mapping {gpu id: [quotes]}")
    return data


_QUOTE_DEFAULTS = {"provider": "my-provider", "instance": "custom", "tier": "on_demand",
                   "billing_increment_s": 1, "source": "typed in by the user"}


def _quote(q: object, source: str, field: str) -> PriceQuote:
    if not isinstance(q, dict):
        raise InputError(source, field, q, "a mapping with provider, instance, usd_per_gpu_hour, tier")
    data = {**_QUOTE_DEFAULTS, **{k: v for k, v in q.items() if v is not None}}
    data["origin"] = "user"
    return parse_price(data, source, field)


def _write_overrides(p: Path, current: dict) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(p, yaml.safe_dump(current, sort_keys=True, allow_unicode=True))


def save_price_override(gpu_id: str, quote: PriceQuote, path: Path | None = None) -> Path:
    """Add (or replace, same provider/instance/tier) one user quote; shipped profiles are never edited.

    A broken overrides file is reported (InputError), never silently overwritten.
    """
    p = path or price_overrides_path()
    current = _read_overrides(p)
    rows = [r for r in current.get(gpu_id, []) if not isinstance(r, dict) or
            (r.get("provider"), r.get("instance"), r.get("tier")) != (quote.provider, quote.instance, quote.tier)]
    rows.append({
        "provider": quote.provider, "instance": quote.instance, "gpus_per_instance": quote.gpus_per_instance,
        "usd_per_gpu_hour": quote.usd_per_gpu_hour, "tier": quote.tier,
        "billing_increment_s": quote.billing_increment_s, "region": quote.region,
        "as_of": quote.as_of.isoformat() if quote.as_of else None, "source": quote.source,
    })
    current[gpu_id] = rows
    _write_overrides(p, current)
    return p


def remove_price_override(gpu_id: str, provider: str, instance: str, tier: str, path: Path | None = None) -> bool:
    """Delete one user quote (the shipped quote it replaced applies again); True when something was removed."""
    p = path or price_overrides_path()
    current = _read_overrides(p)
    rows = current.get(gpu_id, [])
    if not isinstance(rows, list):
        raise InputError(str(p), gpu_id, rows, "a list of price quotes")
    kept = [r for r in rows if not isinstance(r, dict) or
            (r.get("provider"), r.get("instance"), r.get("tier")) != (provider, instance, tier)]
    if len(kept) == len(rows):
        return False
    if kept:
        current[gpu_id] = kept
    else:
        current.pop(gpu_id, None)
    _write_overrides(p, current)
    return True
