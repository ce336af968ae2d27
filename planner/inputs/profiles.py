"""GPU profiles: load, validate and query the per-GPU YAML files in gpu_profiles/ (schema trainplan.gpu/1)."""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from planner.inputs.errors import InputError
from planner.vocab import PEAK_KEYS, RENTAL_TIERS

SCHEMA = "trainplan.gpu/1"
DEFAULT_PROFILES_DIR = Path(__file__).resolve().parents[2] / "gpu_profiles"

ORIGINS = ("published", "user")
VENDORS = ("nvidia", "amd", "intel", "google", "other")
MEMORY_SOURCES = ("driver", "datasheet")
# Billing granularity when a quote does not say: hourly, so an unknown increment never understates cost.
DEFAULT_BILLING_INCREMENT_S = 3600

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_CC_RE = re.compile(r"^(\d+\.\d+|gfx[0-9a-f]+)$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# Key -> required? Order is the order profile_to_dict writes, matching the shipped files.
_PROFILE_KEYS = {
    "schema": True, "id": True, "name": True, "vendor": True, "architecture": False,
    "compute_capability": False, "nvml_names": False, "memory_gib": True, "memory_gib_source": True,
    "memory_gb_label": False, "memory_bandwidth_gb_per_s": True, "peak_tflops": True,
    "estimated_peaks": False, "interconnect": False, "pcie_gen": False, "tdp_w": True,
    "devices_per_package": False, "prices": False, "sources": False, "notes": False,
}
_PRICE_KEYS = {
    "provider": True, "instance": True, "gpus_per_instance": False, "usd_per_gpu_hour": True,
    "tier": True, "billing_increment_s": False, "region": False, "as_of": False, "source": True,
    "origin": False,
}
_INTERCONNECT_KEYS = {"kind": True, "bidirectional_gb_per_s": True}

# A device name carrying one of these tokens beyond a profile's alias is a different product
# (3060 Ti vs 3060, H200 NVL vs H200 SXM, a MIG slice vs the whole GPU), so containment must not match it.
_VARIANT_TOKENS = frozenset({"ti", "super", "laptop", "mobile", "max", "q", "nvl", "mig", "vgpu"})


class FrozenMap(Mapping):
    """A read-only, hashable mapping, so frozen dataclasses holding one stay hashable."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping | Iterable[tuple[Any, Any]] = ()):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


@dataclass(frozen=True)
class PriceQuote:
    provider: str
    instance: str
    gpus_per_instance: int
    usd_per_gpu_hour: float
    tier: str
    billing_increment_s: int
    region: str | None
    as_of: datetime.date | None
    source: str
    origin: str = "published"


@dataclass(frozen=True)
class Interconnect:
    kind: str
    bidirectional_gb_per_s: float

    @property
    def per_direction_gb_per_s(self) -> float:
        # Vendors quote NVLink/IF as the sum of both directions; collectives are limited per direction.
        return self.bidirectional_gb_per_s / 2


@dataclass(frozen=True)
class GpuProfile:
    """One torch device (an MI250X profile is one GCD). Peaks are dense TFLOPS; an absent key = unsupported."""

    id: str
    name: str
    vendor: str
    architecture: str
    compute_capability: str | None
    nvml_names: tuple[str, ...]
    memory_gib: float
    memory_gib_source: str
    memory_bandwidth_gb_per_s: float
    peak_tflops: Mapping[str, float]
    estimated_peaks: Mapping[str, str]
    interconnect: Interconnect | None
    pcie_gen: int | None
    tdp_w: float
    devices_per_package: int
    prices: tuple[PriceQuote, ...]
    sources: tuple[str, ...]
    notes: str
    path: str
    memory_gb_label: float | None = None

    def supports(self, precision: str) -> bool:
        return precision in self.peak_tflops

    def peak_tflops_for(self, precision: str) -> float | None:
        return self.peak_tflops.get(precision)

    def is_estimated(self, precision: str) -> bool:
        return precision in self.estimated_peaks


# ---------------------------------------------------------------- field checks (each raises InputError)

def _check_keys(data: Any, spec: Mapping[str, bool], source: str, where: str) -> Mapping:
    if not isinstance(data, Mapping):
        raise InputError(source, where, data, "a mapping")
    for key in data:
        if key not in spec:
            raise InputError(source, _join(where, str(key)), data[key],
                             f"no such key (known keys: {', '.join(spec)})")
    for key, required in spec.items():
        if required and key not in data:
            raise InputError(source, _join(where, key), None, "this key (it is required)")
    return data


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _string(value: Any, source: str, field: str, *, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(source, field, value, "a non-empty string" + (" or null" if allow_none else ""))
    return value


def _choice(value: Any, choices: tuple[str, ...], source: str, field: str) -> str:
    if value not in choices:
        raise InputError(source, field, value, f"one of {', '.join(choices)}")
    return value


def _number(value: Any, lo: float, hi: float, source: str, field: str, unit: str = "") -> float:
    # bool is an int subclass: `true` in YAML must not read as 1.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(source, field, value, f"a number between {lo:g} and {hi:g}{unit}")
    if not lo <= value <= hi:
        raise InputError(source, field, value, f"a number between {lo:g} and {hi:g}{unit}")
    return float(value)


def _integer(value: Any, lo: int, hi: int, source: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputError(source, field, value, f"an integer between {lo} and {hi}")
    return value


def _date(value: Any, source: str, field: str) -> datetime.date | None:
    if value is None:
        return None
    # YAML reads an unquoted 2026-11-01 as a date; a quoted one arrives as a string.
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value
    if isinstance(value, str) and _DATE_RE.match(value):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            pass
    raise InputError(source, field, value, "an ISO date YYYY-MM-DD or null")


def _string_list(value: Any, source: str, field: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InputError(source, field, value, "a list of strings")
    return tuple(_string(item, source, f"{field}[{i}]") for i, item in enumerate(value))


def _parse_peaks(value: Any, source: str) -> FrozenMap:
    if not isinstance(value, Mapping):
        raise InputError(source, "peak_tflops", value, f"a mapping of precision ({', '.join(PEAK_KEYS)}) "
                         "to dense TFLOPS")
    peaks = {}
    for key, tflops in value.items():
        _choice(key, PEAK_KEYS, source, f"peak_tflops.{key}")
        peaks[key] = _number(tflops, 0.1, 10000, source, f"peak_tflops.{key}", " TFLOPS")
    if "fp32" not in peaks:
        raise InputError(source, "peak_tflops.fp32", None, "an fp32 peak (every GPU has one)")
    return FrozenMap(peaks)


def _parse_estimated(value: Any, peaks: Mapping[str, float], source: str) -> FrozenMap:
    if value is None:
        return FrozenMap()
    if not isinstance(value, Mapping):
        raise InputError(source, "estimated_peaks", value, "a mapping of precision to the estimate's source")
    estimated = {}
    for key, why in value.items():
        field = f"estimated_peaks.{key}"
        _choice(key, PEAK_KEYS, source, field)
        if key not in peaks:
            # An estimate with no figure behind it would mark a precision supported without a number.
            raise InputError(source, field, why, f"a precision that also has a peak_tflops.{key} figure")
        estimated[key] = _string(why, source, field)
    return FrozenMap(estimated)


def _parse_interconnect(value: Any, source: str) -> Interconnect | None:
    if value is None:
        return None
    _check_keys(value, _INTERCONNECT_KEYS, source, "interconnect")
    return Interconnect(
        kind=_string(value["kind"], source, "interconnect.kind"),
        bidirectional_gb_per_s=_number(value["bidirectional_gb_per_s"], 1, 20000, source,
                                       "interconnect.bidirectional_gb_per_s", " GB/s"),
    )


def parse_price(data: Any, source: str, where: str = "prices[0]") -> PriceQuote:
    _check_keys(data, _PRICE_KEYS, source, where)

    def f(key: str) -> str:
        return f"{where}.{key}"

    return PriceQuote(
        provider=_string(data["provider"], source, f("provider")),
        instance=_string(data["instance"], source, f("instance")),
        gpus_per_instance=_integer(data.get("gpus_per_instance", 1), 1, 64, source, f("gpus_per_instance")),
        usd_per_gpu_hour=_positive_price(data["usd_per_gpu_hour"], source, f("usd_per_gpu_hour")),
        tier=_choice(data["tier"], RENTAL_TIERS, source, f("tier")),
        billing_increment_s=_integer(data.get("billing_increment_s", DEFAULT_BILLING_INCREMENT_S), 1, 86400,
                                     source, f("billing_increment_s")),
        region=_string(data.get("region"), source, f("region"), allow_none=True),
        as_of=_date(data.get("as_of"), source, f("as_of")),
        source=_string(data["source"], source, f("source")),
        origin=_choice(data.get("origin", "published"), ORIGINS, source, f("origin")),
    )


def _positive_price(value: Any, source: str, field: str) -> float:
    expected = "a price per GPU-hour in USD, above 0 and at most 200"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(source, field, value, expected)
    if not 0 < value <= 200:
        raise InputError(source, field, value, expected)
    return float(value)


def _expected_id(source: str) -> str | None:
    # The id must equal the file stem so `gpu_profiles/<id>.yaml` is the one place an id is defined.
    path = Path(source)
    return path.stem if path.suffix in (".yaml", ".yml") else None


def parse_profile(data: dict, source: str) -> GpuProfile:
    """Validate one profile mapping; `source` names the file in errors and fixes the expected id."""
    _check_keys(data, _PROFILE_KEYS, source, "")
    if data["schema"] != SCHEMA:
        raise InputError(source, "schema", data["schema"], SCHEMA)
    profile_id = _string(data["id"], source, "id")
    if not _ID_RE.match(profile_id):
        raise InputError(source, "id", profile_id, "lower-case letters, digits, '.', '_' or '-'")
    stem = _expected_id(source)
    if stem is not None and profile_id != stem:
        raise InputError(source, "id", profile_id, f"{stem!r} (the file name without .yaml)")
    cc = data.get("compute_capability")
    if cc is not None and (not isinstance(cc, str) or not _CC_RE.match(cc)):
        raise InputError(source, "compute_capability", cc, 'a quoted string like "8.6", a gfx target, or null')
    peaks = _parse_peaks(data["peak_tflops"], source)
    label = data.get("memory_gb_label")
    prices = data.get("prices") or []
    if not isinstance(prices, list):
        raise InputError(source, "prices", prices, "a list of price quotes")
    notes = data.get("notes") or ""
    if not isinstance(notes, str):
        raise InputError(source, "notes", notes, "a string")
    return GpuProfile(
        id=profile_id,
        name=_string(data["name"], source, "name"),
        vendor=_choice(data["vendor"], VENDORS, source, "vendor"),
        architecture=_string(data.get("architecture") or "unknown", source, "architecture"),
        compute_capability=cc,
        nvml_names=_string_list(data.get("nvml_names") or [], source, "nvml_names"),
        memory_gib=_number(data["memory_gib"], 1, 1024, source, "memory_gib", " GiB"),
        memory_gib_source=_choice(data["memory_gib_source"], MEMORY_SOURCES, source, "memory_gib_source"),
        memory_bandwidth_gb_per_s=_number(data["memory_bandwidth_gb_per_s"], 50, 20000, source,
                                          "memory_bandwidth_gb_per_s", " GB/s"),
        peak_tflops=peaks,
        estimated_peaks=_parse_estimated(data.get("estimated_peaks"), peaks, source),
        interconnect=_parse_interconnect(data.get("interconnect"), source),
        pcie_gen=None if data.get("pcie_gen") is None else _integer(data["pcie_gen"], 1, 7, source, "pcie_gen"),
        tdp_w=_number(data["tdp_w"], 10, 2000, source, "tdp_w", " W"),
        devices_per_package=_integer(data.get("devices_per_package", 1), 1, 16, source, "devices_per_package"),
        prices=tuple(parse_price(p, source, f"prices[{i}]") for i, p in enumerate(prices)),
        sources=_string_list(data.get("sources") or [], source, "sources"),
        notes=notes,
        path=source,
        memory_gb_label=None if label is None else _number(label, 1, 1100, source, "memory_gb_label", " GB"),
    )


# ---------------------------------------------------------------- files

# The C parser (when PyYAML was built with libyaml) loads the 25 shipped profiles several times faster.
_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeBase):
    """SafeLoader that rejects a key given twice (plain YAML silently keeps the last one)."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), "", type(exc).__name__, f"a readable UTF-8 file ({exc})") from exc
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "the file"
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(str(path), f"YAML syntax at {where}", problem, "valid YAML") from exc


def load_profile(path: str | Path) -> GpuProfile:
    path = Path(path)
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise InputError(str(path), "", data, "a YAML mapping with the trainplan.gpu/1 keys")
    return parse_profile(data, str(path))


def _profile_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def load_profiles(*dirs: str | Path) -> tuple[dict[str, GpuProfile], list[str]]:
    """Load every profile in `dirs` (default: the shipped folder). Later dirs override earlier ids.

    A bad file becomes one message in the returned problems list and never hides the others.
    A directory that does not exist is skipped: the user-data folder is often absent.
    """
    profiles: dict[str, GpuProfile] = {}
    problems: list[str] = []
    for directory in (Path(d) for d in (dirs or (DEFAULT_PROFILES_DIR,))):
        if not directory.exists():
            continue
        if not directory.is_dir():
            problems.append(str(InputError(str(directory), "", "a file", "a directory of profile files")))
            continue
        seen_here: dict[str, Path] = {}
        for path in _profile_files(directory):
            try:
                profile = load_profile(path)
            except InputError as exc:
                problems.append(str(exc))
                continue
            if profile.id in seen_here:
                problems.append(str(InputError(str(path), "id", profile.id,
                                               f"an id not already used by {seen_here[profile.id].name}")))
                continue
            seen_here[profile.id] = path
            profiles[profile.id] = profile
    return profiles, problems


def profile_to_dict(profile: GpuProfile) -> dict:
    """The YAML-ready mapping of a profile; parse_profile(profile_to_dict(p), p.path) == p."""
    return {
        "schema": SCHEMA,
        "id": profile.id,
        "name": profile.name,
        "vendor": profile.vendor,
        "architecture": profile.architecture,
        "compute_capability": profile.compute_capability,
        "nvml_names": list(profile.nvml_names),
        "memory_gib": profile.memory_gib,
        "memory_gib_source": profile.memory_gib_source,
        "memory_gb_label": profile.memory_gb_label,
        "memory_bandwidth_gb_per_s": profile.memory_bandwidth_gb_per_s,
        "peak_tflops": dict(profile.peak_tflops),
        "estimated_peaks": dict(profile.estimated_peaks),
        "interconnect": None if profile.interconnect is None else dataclasses.asdict(profile.interconnect),
        "pcie_gen": profile.pcie_gen,
        "tdp_w": profile.tdp_w,
        "devices_per_package": profile.devices_per_package,
        "prices": [dataclasses.asdict(q) for q in profile.prices],
        "sources": list(profile.sources),
        "notes": profile.notes,
    }


# ---------------------------------------------------------------- name matching

def _tokens(text: str) -> tuple[str, ...]:
    return tuple(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    n = len(inner)
    return n > 0 and any(outer[i:i + n] == inner for i in range(len(outer) - n + 1))


def _as_profiles(profiles: Mapping[str, GpuProfile] | Iterable[GpuProfile]) -> list[GpuProfile]:
    items = profiles.values() if isinstance(profiles, Mapping) else profiles
    return sorted(items, key=lambda p: p.id)


def match_nvml_name(name: str, profiles: Mapping[str, GpuProfile] | Iterable[GpuProfile]) -> GpuProfile | None:
    """The profile a device name (NVML / torch.cuda.get_device_name) belongs to, or None.

    Order: exact alias or id; same alias ignoring case and punctuation; then an alias contained in the
    name (longest alias wins) or the name contained in exactly one profile's aliases. A name with a
    variant marker (Ti, SUPER, NVL, MIG...) beyond the alias is another product and does not match.
    """
    candidates = _as_profiles(profiles)
    wanted = name.strip()
    for p in candidates:
        if wanted == p.id or wanted in p.nvml_names:
            return p
    wanted_tokens = _tokens(wanted)
    if not wanted_tokens:
        return None
    for p in candidates:
        if any(_tokens(alias) == wanted_tokens for alias in p.nvml_names):
            return p

    best: dict[str, int] = {}  # profile id -> longest alias (in tokens) found inside the name
    for p in candidates:
        for alias in (*p.nvml_names, p.name):
            alias_tokens = _tokens(alias)
            extra = set(wanted_tokens) - set(alias_tokens)
            if _contains(wanted_tokens, alias_tokens) and not extra & _VARIANT_TOKENS:
                best[p.id] = max(best.get(p.id, 0), len(alias_tokens))
    if best:
        top = max(best.values())
        winners = [pid for pid, n in best.items() if n == top]
        return _by_id(candidates, winners[0]) if len(winners) == 1 else None

    holders = {p.id for p in candidates for alias in (*p.nvml_names, p.name)
               if _contains(_tokens(alias), wanted_tokens)}
    # A short name ("H100") that fits several profiles is ambiguous: guessing would pick the wrong memory.
    return _by_id(candidates, holders.pop()) if len(holders) == 1 else None


def _by_id(profiles: list[GpuProfile], profile_id: str) -> GpuProfile:
    return next(p for p in profiles if p.id == profile_id)


# ---------------------------------------------------------------- prices

def current_quotes(quotes: Iterable[PriceQuote], as_of_today: datetime.date | None = None) -> list[PriceQuote]:
    """Drop quotes superseded by a newer one for the same provider, instance, tier and region.

    A user override beats a published quote; a dated quote beats an undated one; quotes dated after
    `as_of_today` (when given) are ignored, so a plan can be reproduced as of an earlier day.
    """
    latest: dict[tuple, PriceQuote] = {}
    for q in quotes:
        if as_of_today is not None and q.as_of is not None and q.as_of > as_of_today:
            continue
        key = (q.provider.lower(), q.instance.lower(), q.tier, (q.region or "").lower())
        if key not in latest or _rank(q) > _rank(latest[key]):
            latest[key] = q
    return list(latest.values())


def _rank(q: PriceQuote) -> tuple:
    return (q.origin == "user", q.as_of is not None, q.as_of or datetime.date.min)


def cheapest_quote(profile: GpuProfile, tier: str, provider: str = "cheapest",
                   as_of_today: datetime.date | None = None) -> PriceQuote | None:
    """The lowest current per-GPU-hour quote for `tier` (from `provider`, or any when "cheapest")."""
    if tier == "on_prem":
        return None  # on-prem cost comes from purchase price and power, not from a rental quote
    _choice(tier, RENTAL_TIERS, "<argument>", "tier")
    wanted = provider.lower()
    pool = [q for q in profile.prices
            if q.tier == tier and (wanted == "cheapest" or q.provider.lower() == wanted)]
    current = current_quotes(pool, as_of_today)
    if not current:
        return None
    # Ties go to the newest quote, then alphabetically, so the choice is deterministic.
    return min(current, key=lambda q: (q.usd_per_gpu_hour, -(q.as_of or datetime.date.min).toordinal(),
                                       q.provider, q.instance, q.region or ""))
