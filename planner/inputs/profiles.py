"""GPU profiles: load, validate and query the per-GPU YAML files in gpu_profiles/ (schema trainplan.gpu/1)."""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.inputs import loader, price_catalog, shipped
from planner.inputs.check import Reader, keyed_reader
from planner.inputs.errors import InputError, skipped
from planner.inputs.quotes import PriceQuote, parse_price
from planner.vocab import EXCHANGE_RATE_MAX_AGE_DAYS, PEAK_KEYS, QUOTE_MAX_AGE_DAYS

SCHEMA = "trainplan.gpu/1"
DEFAULT_PROFILES_DIR = shipped.PROFILES_DIR

VENDORS = ("nvidia", "amd", "intel", "google", "other")
MEMORY_SOURCES = ("driver", "datasheet")
MAX_NOTES_CHARS = 100_000

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_CC_RE = re.compile(r"^(\d+\.\d+|gfx[0-9a-f]+)$")

# Key -> required? Order is the order profile_to_dict writes, matching the shipped files.
_PROFILE_KEYS = {
    "schema": True, "id": True, "name": True, "vendor": True, "architecture": False,
    "compute_capability": False, "nvml_names": False, "memory_gib": True, "memory_gib_source": True,
    "memory_gb_label": False, "memory_bandwidth_gb_per_s": True, "peak_tflops": True,
    "estimated_peaks": False, "interconnect": False, "pcie_gen": False, "tdp_w": True,
    "devices_per_package": False, "sustained": False, "prices": False, "purchase": False, "sources": False,
    "notes": False,
}
_SUSTAINED_KEYS = {"fraction": True, "source": True}
_INTERCONNECT_KEYS = {"kind": True, "bidirectional_gb_per_s": True}
_PURCHASE_KEYS = {"usd": True, "kind": True, "as_of": True, "source": True}
# What a purchase price is: a vendor/reseller list price, an observed retail (street) price, the maker's launch
# price (msrp), or a share of a multi-GPU product divided by its GPUs: a whole server (host included) or a GPU
# baseboard (NVSwitch board included, no host).
PURCHASE_KINDS = ("list", "street", "msrp", "server_per_gpu", "board_per_gpu")
MAX_PURCHASE_USD = 10_000_000.0  # the most one package may cost (a wafer-scale system is ~2 M)

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
class PurchasePrice:
    """What one package (a card or module as sold; for *_per_gpu kinds, a multi-GPU product's price / its GPUs)
    cost to buy, in USD, on `as_of`, with where the figure comes from. On-prem cost amortises it (engine.cost)."""

    usd: float
    kind: str  # PURCHASE_KINDS
    as_of: datetime.date
    source: str


@dataclass(frozen=True)
class Interconnect:
    kind: str
    bidirectional_gb_per_s: float

    @property
    def per_direction_gb_per_s(self) -> float:
        # Vendors quote NVLink/IF as the sum of both directions; collectives are limited per direction.
        return self.bidirectional_gb_per_s / 2


@dataclass(frozen=True)
class Sustained:
    """What a power-limited card sustains: `fraction` of its datasheet dense peaks, per `source` (a citation)."""

    fraction: float
    source: str


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
    purchase: PurchasePrice | None = None  # None: no citable purchase price (on-prem needs an override)
    # The share of the datasheet's dense tensor peak (quoted at the boost clock) the card sustains under a long
    # matmul load, where its power limit holds the clocks lower (an L4 at 72 W), with the measurement it stands on;
    # None: it holds its peak as the datasheet-class cards do (A100, H100).
    sustained: Sustained | None = None

    def supports(self, precision: str) -> bool:
        return precision in self.peak_tflops

    def peak_tflops_for(self, precision: str) -> float | None:
        return self.peak_tflops.get(precision)

    def is_estimated(self, precision: str) -> bool:
        return precision in self.estimated_peaks


# ---------------------------------------------------------------- field checks (the shared Reader's rules)

def _parse_peaks(r: Reader) -> FrozenMap:
    value = r.raw("peak_tflops")
    if not isinstance(value, Mapping):
        raise r.fail("peak_tflops", value, f"a mapping of precision ({', '.join(PEAK_KEYS)}) to dense TFLOPS")
    peaks_reader = Reader(value, r.source, "peak_tflops")
    peaks_reader.reject_unknown(PEAK_KEYS)
    peaks = {key: peaks_reader.number(key, minimum=0.1, maximum=10000, unit=" TFLOPS") for key in value}
    if "fp32" not in peaks:
        raise peaks_reader.fail("fp32", None, "an fp32 peak (every GPU has one)")
    return FrozenMap(peaks)


def _parse_estimated(r: Reader, peaks: Mapping[str, float]) -> FrozenMap:
    e = r.sub("estimated_peaks")
    if e is None:
        return FrozenMap()
    e.reject_unknown(PEAK_KEYS)
    estimated = {}
    for key in e.data:
        if key not in peaks:
            # An estimate with no figure behind it would mark a precision supported without a number.
            raise e.fail(key, e.data[key], f"a precision that also has a peak_tflops.{key} figure")
        estimated[key] = e.string(key)
    return FrozenMap(estimated)


def _parse_interconnect(r: Reader) -> Interconnect | None:
    if not r.has("interconnect"):
        return None
    i = keyed_reader(r.data["interconnect"], _INTERCONNECT_KEYS, r.source, "interconnect")
    return Interconnect(
        kind=i.string("kind"),
        bidirectional_gb_per_s=i.number("bidirectional_gb_per_s", minimum=1, maximum=20000, unit=" GB/s"),
    )


def _parse_purchase(r: Reader, *, devices_per_package: int) -> PurchasePrice | None:
    """The optional `purchase:` block: usd > 0, kind, as_of date and a non-empty source, else an error naming it.

    The planner divides `usd` by devices_per_package; a `*_per_gpu` kind is already a share per GPU, so the two
    together would divide twice: refused (give the package's price with another kind)."""
    if r.data.get("purchase") is None:
        return None
    p = keyed_reader(r.data["purchase"], _PURCHASE_KEYS, r.source, "purchase")
    kind = p.choice("kind", PURCHASE_KINDS)
    if kind.endswith("_per_gpu") and devices_per_package > 1:
        raise p.fail("kind", kind, f"a price per package (list, street or msrp): this profile's package holds "
                     f"{devices_per_package} devices and the planner divides by them")
    return PurchasePrice(
        usd=p.number("usd", minimum=0, exclusive_min=True, maximum=MAX_PURCHASE_USD, unit=" USD"),
        kind=kind,
        as_of=p.date("as_of"),
        source=p.string("source"),  # a non-empty string: a URL, or repository@commit:path and row
    )


def _parse_sustained(r: Reader) -> Sustained | None:
    """The optional `sustained:` block: fraction in (0, 1] and a non-empty source, else an error naming it."""
    if r.data.get("sustained") is None:
        return None
    p = keyed_reader(r.data["sustained"], _SUSTAINED_KEYS, r.source, "sustained")
    return Sustained(fraction=p.number("fraction", minimum=0.05, maximum=1.0), source=p.string("source"))


def _expected_id(source: str) -> str | None:
    # The id must equal the file stem so `gpu_profiles/<id>.yaml` is the one place an id is defined.
    path = Path(source)
    return path.stem if path.suffix in (".yaml", ".yml") else None


def parse_profile(data: dict, source: str) -> GpuProfile:
    """Validate one profile mapping; `source` names the file in errors and fixes the expected id."""
    r = keyed_reader(data, _PROFILE_KEYS, source, "")
    if r.data["schema"] != SCHEMA:
        raise r.fail("schema", r.data["schema"], SCHEMA)
    profile_id = r.string("id", max_chars=100)
    if not _ID_RE.match(profile_id):
        raise r.fail("id", profile_id, "lower-case letters, digits, '.', '_' or '-'")
    stem = _expected_id(source)
    if stem is not None and profile_id != stem:
        raise r.fail("id", profile_id, f"{stem!r} (the file name without .yaml)")
    cc = r.raw("compute_capability", None)
    if cc is not None and (not isinstance(cc, str) or not _CC_RE.match(cc)):
        raise r.fail("compute_capability", cc, 'a quoted string like "8.6", a gfx target, or null')
    peaks = _parse_peaks(r)
    prices = r.raw("prices", [])
    if not isinstance(prices, list):
        raise r.fail("prices", prices, "a list of price quotes")
    notes = r.raw("notes", "")
    if not isinstance(notes, str) or len(notes) > MAX_NOTES_CHARS:
        raise r.fail("notes", notes, f"a string of at most {MAX_NOTES_CHARS:,} characters")
    return GpuProfile(
        id=profile_id,
        name=r.string("name"),
        vendor=r.choice("vendor", VENDORS),
        architecture=r.string("architecture") if r.data.get("architecture") not in (None, "") else "unknown",
        compute_capability=cc,
        nvml_names=r.string_list("nvml_names", ()),
        memory_gib=r.number("memory_gib", minimum=1, maximum=1024, unit=" GiB"),
        memory_gib_source=r.choice("memory_gib_source", MEMORY_SOURCES),
        memory_bandwidth_gb_per_s=r.number("memory_bandwidth_gb_per_s", minimum=50, maximum=20000, unit=" GB/s"),
        peak_tflops=peaks,
        estimated_peaks=_parse_estimated(r, peaks),
        interconnect=_parse_interconnect(r),
        pcie_gen=r.integer("pcie_gen", None, minimum=1, maximum=7),
        tdp_w=r.number("tdp_w", minimum=10, maximum=2000, unit=" W"),
        devices_per_package=r.integer("devices_per_package", 1, minimum=1, maximum=16),
        prices=tuple(parse_price(p, source, f"prices[{i}]") for i, p in enumerate(prices)),
        purchase=_parse_purchase(r, devices_per_package=r.integer("devices_per_package", 1, minimum=1, maximum=16)),
        sources=r.string_list("sources", ()),
        notes=notes,
        path=source,
        memory_gb_label=r.number("memory_gb_label", None, minimum=1, maximum=1100, unit=" GB"),
        sustained=_parse_sustained(r),
    )


# ---------------------------------------------------------------- files

def load_profile(path: str | Path) -> GpuProfile:
    """Read and validate one profile file (shipped, a team folder's, or one added under $TRAINPLAN_HOME)."""
    path = Path(path)
    data = loader.load_file(path, loader.PROFILE)
    if not isinstance(data, dict):
        raise InputError(str(path), "", data, "a YAML mapping with the trainplan.gpu/1 keys")
    return parse_profile(data, str(path))


def _profile_files(directory: Path) -> list[Path]:
    # Hidden files are editors' and atomic writers' temporaries.
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))


def load_profiles(*dirs: str | Path) -> tuple[dict[str, GpuProfile], list[str]]:
    """Load every profile in `dirs` (default: the shipped folder). Later dirs override earlier ids.

    A bad file, whatever the failure (bad field, unreadable, too deep for the parser, out of memory), becomes
    one message in the returned problems list and never hides the others. A directory that does not exist is
    skipped: the user-data folder is often absent.
    """
    profiles: dict[str, GpuProfile] = {}
    problems: list[str] = []
    for directory in (Path(d) for d in (dirs or (DEFAULT_PROFILES_DIR,))):
        try:
            if not directory.exists():
                continue
            if not directory.is_dir():
                problems.append(str(InputError(str(directory), "", "a file", "a directory of profile files")))
                continue
            paths = _profile_files(directory)
        except OSError as exc:
            problems.append(skipped(directory, exc))
            continue
        seen_here: dict[str, Path] = {}
        for path in paths:
            try:
                profile = load_profile(path)
            except InputError as exc:
                problems.append(str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - one bad file must never abort the folder
                problems.append(skipped(path, exc))
                continue
            if profile.id in seen_here:
                problems.append(str(InputError(str(path), "id", profile.id,
                                               f"an id not already used by {seen_here[profile.id].name}")))
                continue
            seen_here[profile.id] = path
            profiles[profile.id] = profile
    for directory in (Path(d) for d in (dirs or (DEFAULT_PROFILES_DIR,))):
        _merge_catalogs(profiles, directory, problems)
    return profiles, problems


def _merge_catalogs(profiles: dict[str, GpuProfile], directory: Path, problems: list[str]) -> None:
    """Add the quotes of each price-catalog snapshot in <directory>/catalog/ to the profiles they name.

    A broken snapshot is one problem message (file and field) and adds nothing; the profiles keep their own quotes.
    """
    for path in price_catalog.snapshot_files(directory):
        try:
            snapshot = price_catalog.load_snapshot(path)
        except InputError as exc:
            problems.append(str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken snapshot must never stop the profiles loading
            problems.append(skipped(path, exc))
            continue
        for profile_id, quotes in snapshot.quotes.items():
            profile = profiles.get(profile_id)
            if profile is None:
                problems.append(str(InputError(str(path), f"quotes.{profile_id}", profile_id,
                                               "the id of a loaded GPU profile (its quotes were skipped)")))
                continue
            profiles[profile_id] = dataclasses.replace(profile, prices=merge_catalog_quotes(profile.prices, quotes))


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
        "sustained": None if profile.sustained is None else dataclasses.asdict(profile.sustained),
        "prices": [_price_to_dict(q) for q in profile.prices],
        "purchase": None if profile.purchase is None else dataclasses.asdict(profile.purchase),
        "sources": list(profile.sources),
        "notes": profile.notes,
    }


def _price_to_dict(quote: PriceQuote) -> dict:
    d = dataclasses.asdict(quote)
    if d["retrieved"] is None:  # hand-collected quotes read exactly as the shipped files write them
        del d["retrieved"]
    return d


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

# Freshness, one rule (issue 17): for one offer -- the same provider, instance, region and tier -- the newest quote
# wins: a user's price over a published one, a dated quote over an undated one, then the later date. A quote older
# than QUOTE_MAX_AGE_DAYS, or with no date, is stale; so is an exchange rate older than EXCHANGE_RATE_MAX_AGE_DAYS.
FRESH, STALE, UNDATED = "current", "stale", "undated"


def offer_key(q: PriceQuote) -> tuple[str, str, str, str]:
    """What makes two quotes the same offer: provider, instance, region and tier (case-insensitive)."""
    return q.provider.lower(), q.instance.lower(), (q.region or "").lower(), q.tier


def newer_quote(a: PriceQuote, b: PriceQuote) -> bool:
    """True when `a` supersedes `b` for the same offer (the freshness rule above); a tie keeps `b`."""
    return recency_rank(a) > recency_rank(b)


def recency_rank(q: PriceQuote) -> tuple[bool, bool, datetime.date]:
    """(a user's price, dated, the date): larger is more current (the freshness rule above)."""
    return (q.origin == "user", q.as_of is not None, q.as_of or datetime.date.min)


def quote_freshness(quote: PriceQuote, today: datetime.date, max_age_days: int = QUOTE_MAX_AGE_DAYS) -> str:
    """FRESH, STALE (older than max_age_days) or UNDATED (no as_of: flagged like a stale one); user prices are
    current whatever their date."""
    if quote.origin == "user":
        return FRESH
    if quote.as_of is None:
        return UNDATED
    return STALE if (today - quote.as_of).days > max_age_days else FRESH


def rate_is_stale(as_of: datetime.date | None, today: datetime.date,
                  max_age_days: int = EXCHANGE_RATE_MAX_AGE_DAYS) -> bool:
    """An exchange rate with no date, or older than max_age_days, is flagged."""
    return as_of is None or (today - as_of).days > max_age_days


def current_quotes(quotes: Iterable[PriceQuote], as_of_today: datetime.date | None = None) -> list[PriceQuote]:
    """Drop quotes superseded by a newer one for the same offer (newer_quote); quotes dated after `as_of_today`
    (when given) are ignored, so a plan can be reproduced as of an earlier day."""
    latest: dict[tuple, PriceQuote] = {}
    for q in quotes:
        if as_of_today is not None and q.as_of is not None and q.as_of > as_of_today:
            continue
        key = offer_key(q)
        if key not in latest or newer_quote(q, latest[key]):
            latest[key] = q
    return list(latest.values())


# Two quotes of one provider, GPU, tier and GPUs per instance disagree when their per-GPU prices differ by more
# than this share of the dated one (issue 35 c: undated catalog H100/H200 prices sat 22-29% below the same
# providers' dated 2026 rate cards). 10%: wider than the spread between regions of one provider in the shipped quotes.
PRICE_DISAGREE_FRACTION = 0.10


@dataclass(frozen=True)
class PriceDisagreement:
    dated: PriceQuote    # a published quote with a price date
    undated: PriceQuote  # a catalog quote without one (its catalog's read day is `retrieved`)

    @property
    def fraction(self) -> float:
        """(undated - dated) / dated: negative when the undated price is lower."""
        return (self.undated.usd_per_gpu_hour - self.dated.usd_per_gpu_hour) / self.dated.usd_per_gpu_hour

    @property
    def dated_wins(self) -> bool:
        """The rule (issue 35 c): the dated quote is preferred unless the catalog was read after its date (a later
        read may reflect a price cut)."""
        assert self.dated.as_of is not None and self.undated.retrieved is not None
        return self.undated.retrieved < self.dated.as_of


def price_disagreements(quotes: Iterable[PriceQuote], *,
                        fraction: float = PRICE_DISAGREE_FRACTION) -> list[PriceDisagreement]:
    """Pairs of one GPU's quotes from the same provider, tier and GPUs per instance (whatever their instance names)
    where a dated published quote and an undated catalog quote differ by more than `fraction` of the dated one. The
    dated quote must be current when the catalog was read (at most QUOTE_MAX_AGE_DAYS before it): an older price
    is history, not a rival (the shipped 2022-2025 quotes are often for another instance size of the family)."""
    quotes = list(quotes)
    dated = [q for q in quotes if q.as_of is not None and q.origin == "published"]
    undated = [q for q in quotes if q.as_of is None and q.retrieved is not None]
    return [PriceDisagreement(d, u) for d in dated for u in undated
            if (d.provider.lower(), d.tier, d.gpus_per_instance) == (u.provider.lower(), u.tier, u.gpus_per_instance)
            and d.as_of is not None and u.retrieved is not None
            and (u.retrieved - d.as_of).days <= QUOTE_MAX_AGE_DAYS
            and abs(u.usd_per_gpu_hour - d.usd_per_gpu_hour) > fraction * d.usd_per_gpu_hour]


def prefer_dated(quotes: Iterable[PriceQuote]) -> list[PriceQuote]:
    """`quotes` without the undated catalog quotes that a dated quote contradicts (price_disagreements) when the
    catalog was read before that date (PriceDisagreement.dated_wins); a catalog read later stays (and the plan
    notes both prices)."""
    quotes = list(quotes)
    dropped = {id(p.undated) for p in price_disagreements(quotes) if p.dated_wins}
    return [q for q in quotes if id(q) not in dropped]


def merge_catalog_quotes(own: Iterable[PriceQuote], catalog: Iterable[PriceQuote]) -> tuple[PriceQuote, ...]:
    """A profile's quotes plus a catalog's, no offer counted twice.

    A catalog quote supersedes the quotes it competes with when it is newer (newer_quote), or when they are
    published quotes that were already stale on the day the catalog gave its price (undated, or older than
    QUOTE_MAX_AGE_DAYS then): a price collected by hand long ago is history, the catalog read that day is the better
    evidence. Otherwise it is dropped. It competes with quotes for the same offer (offer_key) and with hand-collected
    quotes for the same provider, instance and tier that name no region (the same offer, its region not recorded).
    When such a region-less quote wins, it takes the catalog quote's region (the catalog says where the offer is
    sold), so a region filter still finds the offer. A profile's quotes for offers no catalog sells stay (history
    the plan's date filter may need)."""
    remaining = list(own)
    added: list[PriceQuote] = []
    placed: list[PriceQuote] = []  # region-less quotes now listed under the catalog's regions
    for q in catalog:
        rivals = [r for r in remaining + added if _competes(q, r)]
        if all(_supersedes(q, r) for r in rivals):
            remaining = [r for r in remaining if r not in rivals]
            added = [a for a in added if a not in rivals]
            added.append(q)
        elif q.region and all(r.region is None for r in rivals):
            for r in rivals:
                added.append(dataclasses.replace(r, region=q.region, source=f"{r.source} (region {q.region}: "
                                                 f"where the catalog sells it, {q.source})"))
                placed.append(r)
    return tuple([r for r in remaining if r not in placed] + added)


def _competes(catalog_quote: PriceQuote, other: PriceQuote) -> bool:
    if offer_key(catalog_quote) == offer_key(other):
        return True
    unplaced = other.region is None and other.origin == "published" and not other.from_catalog
    return unplaced and offer_key(catalog_quote)[:2] + (catalog_quote.tier,) == offer_key(other)[:2] + (other.tier,)


def _supersedes(catalog_quote: PriceQuote, other: PriceQuote) -> bool:
    if newer_quote(catalog_quote, other):
        return True
    day = catalog_quote.as_of or catalog_quote.retrieved
    return other.origin == "published" and day is not None and quote_freshness(other, day) != FRESH
