"""Cloud price catalogs (SkyPilot's vms.csv format) -> per-GPU-hour quotes, and the snapshot file that ships them.

A catalog row is one instance type in one region (and zone) with its on-demand (Price) and spot (SpotPrice) price per
instance-hour. The alias table (gpu_profiles/catalog/aliases.yaml) maps (provider, instance-type pattern,
accelerator name) to a profile id: the instance type, not the catalog's memory column, tells SXM from PCIe and
40 from 80 GB. A row no rule maps, or that cannot be read, is counted under its reason and reported, never guessed.

Quotes: usd_per_gpu_hour = instance price / AcceleratorCount; one quote per (provider, instance, region, tier), the
cheapest of the region's zones (the planner does not model zones; the zone is kept in the source). Every region is
kept: a region is part of the offer, and regional prices (Sao Paulo, Santiago...) are what a region filter needs.
as_of is a price date only when the excerpt proves one (an `as-of:` header line); otherwise it is null and
`retrieved` says when the catalog was read, with the catalog commit in the source ("date unknown").
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import fnmatch
import io
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import TrainplanError
from planner.inputs import loader
from planner.inputs.check import Reader, parse_date
from planner.inputs.errors import InputError, describe
from planner.inputs.quotes import DEFAULT_BILLING_INCREMENT_S, MAX_USD_PER_GPU_HOUR, PriceQuote, parse_price
from planner.inputs.shipped import PROFILES_DIR

SNAPSHOT_SCHEMA = "trainplan.price-catalog/1"
ALIASES_SCHEMA = "trainplan.catalog-aliases/1"
CATALOG_DIRNAME = "catalog"
ALIASES_NAME = "aliases.yaml"
NETWORKS_NAME = "networks.yaml"  # planner.inputs.networks: the network between a provider's instances
STORAGE_NAME = "storage.yaml"  # planner.inputs.storage: storage and egress prices per provider
CATALOG_DIR = PROFILES_DIR / CATALOG_DIRNAME
ALIASES_PATH = CATALOG_DIR / ALIASES_NAME

CSV_FILE = loader.FileKind("price catalog (CSV)", "csv", 16 * loader.MIB)
SNAPSHOT_FILE = loader.FileKind("price catalog snapshot (YAML)", "yaml", 2 * loader.MIB, max_nodes=400_000)
ALIASES_FILE = loader.FileKind("catalog alias table (YAML)", "yaml", 1 * loader.MIB)

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
OPTIONAL_COLUMNS = ("SpotPrice", "AvailabilityZone")
MAX_GPUS_PER_INSTANCE = 64
EXAMPLES_PER_REASON = 5

# Why a GPU offer gave no quote: the keys of ImportResult.unmapped, in the order the summary prints them.
NO_RULE = "no alias rule for this provider, instance and accelerator"
EXCLUDED = "left out by the alias table (its rule says why)"
ACCELERATOR_ONLY = "accelerator-only price: no instance type (the host VM is billed separately)"
COUNT_CONFLICT = "GPU count differs from the alias table's"
NO_PRICE = "no price (Price and SpotPrice empty)"
BAD_ROW = "unreadable row"
REASONS = (NO_RULE, EXCLUDED, ACCELERATOR_ONLY, COUNT_CONFLICT, NO_PRICE, BAD_ROW)
# A row's spot price equal to its on-demand price is not a spot discount: its spot quote is dropped, counted apart.
SPOT_AS_ON_DEMAND = "spot price equal to the on-demand price, not used as spot"


# ---------------------------------------------------------------- alias table

@dataclass(frozen=True)
class AliasRule:
    provider: str        # the provider's name in quotes (after the table's `providers:` map: oci -> oracle)
    instance: str        # fnmatch pattern over the instance type, case-insensitive
    accelerator: str     # the catalog's AcceleratorName, case-insensitive
    profile: str | None  # None: the offer is known and deliberately left out (why says so)
    gpus: int | None     # GPUs per instance when the instance type fixes it; a row saying otherwise is refused
    why: str

    def matches(self, provider: str, instance: str, accelerator: str) -> bool:
        return (self.provider == provider and self.accelerator.lower() == accelerator.lower()
                and fnmatch.fnmatchcase(instance.lower(), self.instance.lower()))


@dataclass(frozen=True)
class BillingIncrement:
    """How finely one provider bills one instance family (issue 35 c), as the provider's own page states it."""

    provider: str   # the provider's name in quotes
    instance: str   # fnmatch pattern over the instance type, case-insensitive ("*": every family)
    seconds: int    # the billing increment: 1 = per second, 60 = per minute, 3600 = per hour
    source: str     # the page that states it, with the sentence transcribed
    as_of: dt.date  # the day the page was read

    def matches(self, provider: str, instance: str) -> bool:
        return self.provider == provider and fnmatch.fnmatchcase(instance.lower(), self.instance.lower())


@dataclass(frozen=True)
class AttachedGpus:
    """A host VM whose GPUs a catalog prices on a separate accelerator-only row (Google Cloud: the host row has no
    AcceleratorName; a row with no InstanceType prices `count` GPUs of `accelerator` in the same zone). The import
    adds the two prices and names the offer `instance` (the host's name when it fixes the GPUs, as a2/a3/g2 do)."""

    provider: str
    host: str
    accelerator: str
    count: int
    instance: str


@dataclass(frozen=True)
class AliasTable:
    rules: tuple[AliasRule, ...]
    providers: Mapping[str, str]              # a catalog's name for a provider -> its name in quotes and rules
                                              # (SkyPilot's oci -> oracle, gpuhunt's lambdalabs -> lambda)
    billing_increment_s: Mapping[str, int]    # provider -> billing granularity; absent: hourly
    non_gpu: tuple[str, ...]                  # accelerator-name patterns that are not GPUs (TPUs, Inferentia...)
    path: str
    attached: tuple[AttachedGpus, ...] = ()   # hosts whose GPUs a catalog prices on separate rows (Google Cloud)
    increments: tuple[BillingIncrement, ...] = ()  # cited, per provider and instance family; first match wins

    def increment_s(self, provider: str, instance: str) -> int:
        """The billing increment of one offer: the first cited `billing_increments` rule that matches it, else the
        provider's uncited `billing_increment_s`, else hourly (DEFAULT_BILLING_INCREMENT_S)."""
        cited = next((b for b in self.increments if b.matches(provider, instance)), None)
        if cited is not None:
            return cited.seconds
        return self.billing_increment_s.get(provider, DEFAULT_BILLING_INCREMENT_S)

    def rule_for(self, provider: str, instance: str, accelerator: str) -> AliasRule | None:
        return next((r for r in self.rules if r.matches(provider, instance, accelerator)), None)

    def is_gpu(self, accelerator: str) -> bool:
        return not any(fnmatch.fnmatchcase(accelerator.lower(), p.lower()) for p in self.non_gpu)

    def provider_name(self, catalog_provider: str) -> str:
        return self.providers.get(catalog_provider, catalog_provider)


_RULE_KEYS = {"provider": True, "instance": True, "accelerator": True, "profile": True, "gpus": False, "why": False}


def load_aliases(path: str | Path = ALIASES_PATH, known_profiles: Iterable[str] | None = None) -> AliasTable:
    """Read and check the alias table; with `known_profiles`, every rule's profile must be one of them."""
    source = str(path)
    data = loader.load_file(path, ALIASES_FILE)
    r = Reader(data, source)
    r.reject_unknown(("schema", "providers", "billing_increment_s", "billing_increments", "non_gpu_accelerators",
                      "rules", "attached_gpus"))
    if r.raw("schema") != ALIASES_SCHEMA:
        raise r.fail("schema", r.raw("schema"), ALIASES_SCHEMA)
    known = set(known_profiles) if known_profiles is not None else None
    rules = []
    for i, item in enumerate(r.list_of("rules", max_items=5000)):
        q = Reader(item, source, f"rules[{i}]")
        q.reject_unknown(_RULE_KEYS)
        profile = q.string("profile", None)
        if profile is None and not q.has("why"):
            raise q.fail("why", None, "a reason (a rule with profile: null leaves offers out and must say why)")
        if profile is not None and known is not None and profile not in known:
            raise q.fail("profile", profile, "the id of a GPU profile in gpu_profiles/ (or null with a why)")
        rules.append(AliasRule(provider=q.string("provider"), instance=q.string("instance"),
                               accelerator=q.string("accelerator"), profile=profile,
                               gpus=q.integer("gpus", None, minimum=1, maximum=MAX_GPUS_PER_INSTANCE),
                               why=q.string("why", "")))
    providers = _string_map(r, "providers")
    billing = {}
    b = r.sub("billing_increment_s")
    if b is not None:
        billing = {str(k): b.integer(str(k), minimum=1, maximum=86400) for k in b.data}
    attached = []
    for i, item in enumerate(r.list_of("attached_gpus", [], max_items=5000)):
        q = Reader(item, source, f"attached_gpus[{i}]")
        q.reject_unknown(("provider", "host", "accelerator", "count", "instance"))
        host = q.string("host")
        attached.append(AttachedGpus(provider=q.string("provider"), host=host, accelerator=q.string("accelerator"),
                                     count=q.integer("count", minimum=1, maximum=MAX_GPUS_PER_INSTANCE),
                                     instance=q.string("instance", host)))
    increments = []
    for i, item in enumerate(r.list_of("billing_increments", [], max_items=500)):
        q = Reader(item, source, f"billing_increments[{i}]")
        q.reject_unknown(("provider", "instance", "seconds", "source", "as_of"))
        increments.append(BillingIncrement(provider=q.string("provider"), instance=q.string("instance", "*"),
                                           seconds=q.integer("seconds", minimum=1, maximum=86400),
                                           source=q.string("source"), as_of=q.date("as_of")))
    return AliasTable(rules=tuple(rules), providers=providers, billing_increment_s=billing,
                      non_gpu=r.string_list("non_gpu_accelerators", ()), path=source, attached=tuple(attached),
                      increments=tuple(increments))



def _string_map(r: Reader, key: str) -> dict[str, str]:
    sub = r.sub(key)
    return {} if sub is None else {str(k): sub.string(str(k)) for k in sub.data}


# ---------------------------------------------------------------- reading a catalog file

@dataclass(frozen=True)
class CatalogFile:
    """One vms.csv (or a raw excerpt of one): its provider, provenance and rows as (line number, row) pairs."""

    path: str
    provider: str                 # the catalog's folder name (aws, gcp, oci...)
    source: str                   # repo@commit:path when the header says so, else the file path
    retrieved: dt.date
    as_of: dt.date | None
    meta: Mapping[str, str]
    rows: tuple[tuple[int, Mapping[str, str]], ...]


_META_RE = re.compile(r"^#\s*([A-Za-z0-9_-]+)\s*:\s*(.*?)\s*$")


def read_catalog_file(path: str | Path, provider: str | None = None, source: str | None = None,
                      today: dt.date | None = None) -> CatalogFile:
    """Parse one SkyPilot-format CSV. Leading `# key: value` lines are provenance (source, provider, retrieved,
    as-of); the provider is then the header's, the argument's, or the folder name of a `<provider>/vms.csv`.

    InputError names the file (and line and column) for what makes the whole file unreadable: not UTF-8, no
    header, a required column missing. Bad values in single rows are left to the importer, which counts them.
    """
    path = Path(path)
    name = str(path)
    text = loader.decode(loader.read_file(path, CSV_FILE), name, CSV_FILE)
    lines = text.splitlines(keepends=True)
    meta: dict[str, str] = {}
    first = 0
    while first < len(lines) and lines[first].startswith("#"):
        m = _META_RE.match(lines[first].rstrip("\r\n"))
        if m:
            meta[m.group(1).lower()] = m.group(2)
        first += 1
    try:
        reader = csv.DictReader(io.StringIO("".join(lines[first:]), newline=""))
        header = reader.fieldnames
        if not header:
            raise InputError(name, None, "no header line", "a CSV header naming the columns "
                             + ", ".join(REQUIRED_COLUMNS))
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise InputError(name, f"line {first + 1}", ",".join(header),
                             "a header with the columns " + ", ".join(missing) + " (SkyPilot's vms.csv format)")
        rows = []
        for row in reader:
            line = first + reader.line_num
            if None in row:  # more cells than the header has columns
                raise InputError(name, f"line {line}", describe(row[None]), f"at most {len(header)} cells a row")
            rows.append((line, {k: (v or "").strip() for k, v in row.items()}))
    except csv.Error as exc:
        raise InputError(name, None, f"CSV error: {exc}", "a valid CSV file (SkyPilot's vms.csv format)") from None
    provider = (meta.get("provider") or provider or _provider_from_path(path)).strip().lower()
    retrieved = _meta_date(meta, "retrieved", name) or today or dt.date.today()
    return CatalogFile(path=name, provider=provider, source=meta.get("source") or source or name,
                       retrieved=retrieved, as_of=_meta_date(meta, "as-of", name), meta=meta, rows=tuple(rows))


def _provider_from_path(path: Path) -> str:
    return path.parent.name if path.name == "vms.csv" else path.stem


def _meta_date(meta: Mapping[str, str], key: str, source: str) -> dt.date | None:
    value = (meta.get(key) or "").strip()
    if not value or value.split()[0].lower() in ("null", "unknown"):
        return None
    return parse_date(value, source, f"# {key}")


def catalog_files(path: str | Path) -> list[Path]:
    """A file, or every *.csv under a folder (a catalogs/v8 tree or a raw-excerpt folder), sorted."""
    path = Path(path)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*.csv") if not p.name.startswith("."))
        # A SkyPilot tree also holds images.csv and quota mappings: only the vms.csv files carry prices.
        vms = [p for p in found if p.name == "vms.csv"]
        return vms or found
    if not path.exists():
        raise InputError(str(path), None, str(path), "an existing vms.csv file or a folder of them")
    return [path]


# ---------------------------------------------------------------- rows -> quotes

@dataclass
class ImportResult:
    files: list[CatalogFile] = field(default_factory=list)
    rows_read: int = 0
    gpu_rows: int = 0
    mapped: int = 0
    unmapped: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)   # reason -> a few "file line N: ..." lines
    quotes: dict[str, list[PriceQuote]] = field(default_factory=dict)  # profile id -> quotes
    # Rows whose SpotPrice equals their Price (issue 35 c): not a spot discount, so no spot quote is kept from them;
    # the row still gives its on-demand quote. "file line N: provider instance region at $X".
    spot_as_on_demand: list[str] = field(default_factory=list)

    def note(self, reason: str, text: str) -> None:
        self.unmapped[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < EXAMPLES_PER_REASON:
            shown.append(text)

    @property
    def quote_count(self) -> int:
        return sum(len(q) for q in self.quotes.values())


class _RowError(TrainplanError, ValueError):
    def __init__(self, column: str, value: str, expected: str):
        super().__init__(f"{column}: got {describe(value)}; expected {expected}")


def import_catalogs(paths: Sequence[str | Path], aliases: AliasTable, *, source: str | None = None,
                    today: dt.date | None = None) -> ImportResult:
    """Read every catalog file under `paths` and turn its GPU rows into per-GPU-hour quotes by profile id."""
    return import_files((read_catalog_file(file_path, source=source, today=today)
                         for path in paths for file_path in catalog_files(path)), aliases)


def import_files(files: Iterable[CatalogFile], aliases: AliasTable) -> ImportResult:
    """Catalog rows from any source (CSV files, an online catalog's offers in vms.csv columns) -> quotes."""
    result = ImportResult()
    best: dict[tuple, tuple[float, str, PriceQuote, str]] = {}  # offer -> (price, zone, quote, profile)
    for cat in files:
        result.files.append(cat)
        result.rows_read += len(cat.rows)  # the file's rows (a Google Cloud host + GPU pair is one offer below)
        for line, row in join_attached_gpus(cat, aliases):
            _import_row(cat, line, row, aliases, result, best)
    for _, _zone, quote, profile in sorted(best.values(), key=lambda v: _quote_order(v[2])):
        result.quotes.setdefault(profile, []).append(quote)
    return result


JOINED = "_joined"  # a row key the join adds: which two rows made the offer (never a catalog column)


def join_attached_gpus(cat: CatalogFile, aliases: AliasTable) -> list[tuple[int, Mapping[str, str]]]:
    """The file's rows, with each attached-GPU host (AliasTable.attached) priced whole: host row + the accelerator
    row of the same region and zone, GPU name and count (Price and SpotPrice each summed when both rows have one).
    Accelerator rows so used leave the list (they are in the offers now); the others stay and are counted as
    accelerator-only. A host with no matching accelerator row makes no offer."""
    provider = aliases.provider_name(cat.provider)
    hosts: dict[str, list[AttachedGpus]] = {}
    for a in aliases.attached:
        if a.provider == provider:
            hosts.setdefault(a.host.lower(), []).append(a)
    if not hosts:
        return list(cat.rows)
    accelerators: dict[tuple[str, str, str, int], tuple[int, Mapping[str, str]]] = {}
    for line, row in cat.rows:
        if not row.get("InstanceType") and row.get("AcceleratorName"):
            try:
                count = _gpu_count(row.get("AcceleratorCount", ""))
            except _RowError:
                continue  # stays in the list: the row check reports it
            key = (row.get("Region", "").lower(), row.get("AvailabilityZone", "").lower(),
                   row["AcceleratorName"].lower(), count)
            accelerators.setdefault(key, (line, row))
    used: set[int] = set()
    out: list[tuple[int, Mapping[str, str]]] = []
    for line, row in cat.rows:
        attached = [] if row.get("AcceleratorName") else hosts.get(row.get("InstanceType", "").lower(), [])
        if not attached:
            out.append((line, row))
            continue
        for a in attached:
            found = accelerators.get((row.get("Region", "").lower(), row.get("AvailabilityZone", "").lower(),
                                      a.accelerator.lower(), a.count))
            if found is None:
                continue  # this zone does not sell the GPU: no offer
            acc_line, acc = found
            used.add(acc_line)
            out.append((acc_line, {
                **row, "InstanceType": a.instance, "AcceleratorName": acc["AcceleratorName"],
                "AcceleratorCount": str(a.count),
                "Price": _sum_prices(row.get("Price", ""), acc.get("Price", "")),
                "SpotPrice": _sum_prices(row.get("SpotPrice", ""), acc.get("SpotPrice", "")),
                JOINED: f"host line {line} + {acc['AcceleratorName']} x{a.count} line {acc_line}",
            }))
    return [(line, row) for line, row in out if line not in used or row.get(JOINED)]


def _sum_prices(host: str, accelerator: str) -> str:
    """The sum of two price cells as text; empty when either is (a missing price is not a zero)."""
    try:
        return repr(round(float(host) + float(accelerator), 6)) if host and accelerator else ""
    except ValueError:
        return f"{host}+{accelerator}"  # unreadable: the row check reports it with both cells


def _import_row(cat: CatalogFile, line: int, row: Mapping[str, str], aliases: AliasTable, result: ImportResult,
               best: dict[tuple, tuple[float, str, PriceQuote, str]]) -> None:
    accelerator = row.get("AcceleratorName", "")
    if not accelerator or not aliases.is_gpu(accelerator):
        return
    result.gpu_rows += 1
    instance, region = row.get("InstanceType", ""), row.get("Region", "")
    where = f"{cat.path} line {line}"
    what = f"{cat.provider} {instance or '(none)'} {accelerator}"
    if not instance:
        result.note(ACCELERATOR_ONLY, f"{where}: {what}")
        return
    try:
        count = _gpu_count(row.get("AcceleratorCount", ""))
        if not region:
            raise _RowError("Region", region, "a region name")
        prices = {tier: _price(row.get(column, ""), column)
                  for tier, column in (("on_demand", "Price"), ("spot", "SpotPrice"))}
    except _RowError as exc:
        result.note(BAD_ROW, f"{where}: {exc}")
        return
    provider = aliases.provider_name(cat.provider)
    rule = aliases.rule_for(provider, instance, accelerator)
    if rule is None:
        result.note(NO_RULE, f"{where}: {what}")
        return
    if rule.profile is None:
        result.note(EXCLUDED, f"{where}: {what} ({rule.why})")
        return
    if rule.gpus is not None and rule.gpus != count:
        result.note(COUNT_CONFLICT, f"{where}: {what}: AcceleratorCount {count}, the instance has {rule.gpus}")
        return
    if all(p is None for p in prices.values()):
        result.note(NO_PRICE, f"{where}: {what} {region}")
        return
    if prices["spot"] is not None and prices["spot"] == prices["on_demand"]:
        result.spot_as_on_demand.append(f"{where}: {what} {region} at ${prices['spot']:g}")
        prices["spot"] = None
    for tier, price in prices.items():
        if price is None:
            continue
        per_gpu = price / count
        if per_gpu > MAX_USD_PER_GPU_HOUR:
            result.note(BAD_ROW, f"{where}: {_RowError('Price' if tier == 'on_demand' else 'SpotPrice', str(price), f'at most {MAX_USD_PER_GPU_HOUR:g} USD per GPU-hour')}")
            return
    result.mapped += 1
    zone = row.get("AvailabilityZone", "")
    for tier, price in prices.items():
        if price is None:
            continue
        quote = PriceQuote(
            provider=provider, instance=instance, gpus_per_instance=count,
            usd_per_gpu_hour=round(price / count, 6), tier=tier,
            billing_increment_s=aliases.increment_s(provider, instance),
            region=region, as_of=cat.as_of,
            source=f"{cat.source} row {instance} {region}" + (f" ({zone})" if zone else "")
            + (f" ({row[JOINED]})" if row.get(JOINED) else ""),
            retrieved=cat.retrieved)
        key = (provider, instance.lower(), region.lower(), tier)
        if key not in best or (price, zone) < best[key][:2]:
            best[key] = (price, zone, quote, rule.profile)


def _gpu_count(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise _RowError("AcceleratorCount", text, "a whole number of GPUs") from None
    if not value.is_integer() or not 1 <= value <= MAX_GPUS_PER_INSTANCE:
        raise _RowError("AcceleratorCount", text, f"a whole number of GPUs between 1 and {MAX_GPUS_PER_INSTANCE} "
                        "(a fraction of a GPU is not an instance the planner can bill)")
    return int(value)


def _price(text: str, column: str) -> float | None:
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise _RowError(column, text, "a price in USD per instance-hour") from None
    if not value > 0 or value != value or value == float("inf"):
        raise _RowError(column, text, "a price > 0 USD per instance-hour (empty when there is none)")
    return value


def _quote_order(q: PriceQuote) -> tuple:
    return (q.provider, q.instance.lower(), q.region or "", q.tier)


# ---------------------------------------------------------------- the snapshot file

@dataclass(frozen=True)
class Snapshot:
    path: str
    source: str
    retrieved: dt.date | None
    as_of: dt.date | None
    quotes: Mapping[str, tuple[PriceQuote, ...]]


# A dated snapshot of one provider, as `prices refresh` writes them: gpuhunt-<YYYY-MM-DD>-<provider>.yaml (the
# provider is gpuhunt's name: letters only). Any other name is an ordinary snapshot, always read.
REFRESH_PREFIX = "gpuhunt-"
DATED_SNAPSHOT = re.compile(r"^" + re.escape(REFRESH_PREFIX) + r"(?P<day>\d{4}-\d{2}-\d{2})-(?P<provider>[a-z]+)\.ya?ml$")


def snapshot_files(profiles_dir: str | Path) -> list[Path]:
    """The snapshot files of a profile folder: <dir>/catalog/*.yaml except the alias and network tables. Of the
    `prices refresh` files (DATED_SNAPSHOT) only each provider's newest is read: an offer a later refresh no longer
    lists is gone, not kept alive by an older day's file (those stay on disk as history)."""
    folder = Path(profiles_dir) / CATALOG_DIRNAME
    if not folder.is_dir():
        return []
    files = sorted(p for p in folder.iterdir()
                   if p.suffix in (".yaml", ".yml") and p.name not in (ALIASES_NAME, NETWORKS_NAME, STORAGE_NAME)
                   and not p.name.startswith("."))
    newest: dict[str, str] = {}
    for p in files:
        day, provider = _refresh_day(p)
        if day:
            newest[provider] = max(newest.get(provider, ""), day)
    return [p for p in files if not (dp := _refresh_day(p))[0] or newest[dp[1]] == dp[0]]


def _refresh_day(path: Path) -> tuple[str, str]:
    """(day, provider) of a `prices refresh` file, ("", "") for any other name (or an impossible date)."""
    m = DATED_SNAPSHOT.match(path.name)
    if not m:
        return "", ""
    try:
        dt.date.fromisoformat(m["day"])
    except ValueError:
        return "", ""
    return m["day"], m["provider"]


def load_snapshot(path: str | Path) -> Snapshot:
    """Read a snapshot; InputError names the file and the field (quotes.<profile>[i].<key>) of any bad value."""
    source = str(path)
    r = Reader(loader.load_file(path, SNAPSHOT_FILE), source)
    r.reject_unknown(("schema", "source", "retrieved", "as_of", "files", "summary", "quotes"))
    if r.raw("schema") != SNAPSHOT_SCHEMA:
        raise r.fail("schema", r.raw("schema"), SNAPSHOT_SCHEMA)
    quotes_reader = r.sub("quotes")
    quotes: dict[str, tuple[PriceQuote, ...]] = {}
    if quotes_reader is not None:
        for profile_id, items in quotes_reader.data.items():
            if not isinstance(items, list):
                raise quotes_reader.fail(str(profile_id), items, "a list of price quotes")
            quotes[str(profile_id)] = tuple(parse_price(q, source, f"quotes.{profile_id}[{i}]")
                                            for i, q in enumerate(items))
    return Snapshot(path=source, source=r.string("source"), retrieved=r.date("retrieved", None),
                    as_of=r.date("as_of", None), quotes=quotes)


IMPORT_COMMAND = "`python -m planner prices import <the files below> --out THIS_FILE`"


def render_snapshot(result: ImportResult, root: str | Path | None = None, *, made_by: str = IMPORT_COMMAND,
                    dates_note: str = "as_of: null = the catalog rows carry no price date (shown as 'date unknown'); "
                                      "retrieved = when read.") -> str:
    """The snapshot's YAML text: deterministic (sorted, no clock), one quote a line like the profile files.
    `made_by` and `dates_note` are its header comments (the command that writes it, what its dates mean)."""
    import yaml

    def rel(p: str) -> str:
        try:
            return Path(p).resolve().relative_to(Path(root).resolve()).as_posix() if root else p
        except ValueError:
            return p

    sources = sorted({_repo_of(f.source) for f in result.files})
    retrieved = max((f.retrieved for f in result.files), default=None)
    as_ofs = {f.as_of for f in result.files}
    as_of = as_ofs.pop() if len(as_ofs) == 1 else None
    out = [f"schema: {SNAPSHOT_SCHEMA}",
           f"# Generated by {made_by}; do not edit.",
           f"# {dates_note}",
           f"source: {_flow(', '.join(sources) or 'none')}",
           f"retrieved: {retrieved.isoformat() if retrieved else 'null'}",
           f"as_of: {as_of.isoformat() if as_of else 'null'}",
           "files:"]
    for f in result.files:
        sha = f.meta.get("upstream-sha256", "")
        entry = {"provider": f.provider, "path": rel(f.path), "upstream": f.source,
                 "upstream_sha256": sha if _SHA256_RE.match(sha) else None, "rows": len(f.rows)}
        out.append("  - " + _flow(entry))
    summary = {"rows_read": result.rows_read, "gpu_rows": result.gpu_rows, "mapped": result.mapped,
               "quotes": result.quote_count,
               "unmapped": {reason: result.unmapped[reason] for reason in REASONS if result.unmapped[reason]}}
    if result.spot_as_on_demand:
        summary[SPOT_AS_ON_DEMAND] = len(result.spot_as_on_demand)
    out.append("summary: " + yaml.safe_dump(summary, default_flow_style=True, width=100_000, sort_keys=False).strip())
    out.append("quotes:" + ("" if result.quotes else " {}"))
    for profile in sorted(result.quotes):
        out.append(f"  {profile}:")
        for q in result.quotes[profile]:
            d = {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in dataclasses.asdict(q).items()}
            d.pop("origin")
            out.append("    - " + _flow(d))
    return "\n".join(out) + "\n"


def _flow(value: Any) -> str:
    import yaml

    return yaml.safe_dump(value, default_flow_style=True, width=100_000, sort_keys=False).strip().removesuffix("...").strip()


_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def _repo_of(source: str) -> str:
    """owner/name of a repo@commit:path source; another source as given."""
    head = source.split(":", 1)[0]
    return head.split("@", 1)[0] if "@" in head else source


# ---------------------------------------------------------------- the summary a person reads

def summary_lines(result: ImportResult) -> list[str]:
    """Rows read, GPU rows, mapped, unmapped by reason (with examples), quotes by provider / tier / regions."""
    lines = [f"read {len(result.files)} file(s): {result.rows_read} rows, {result.gpu_rows} GPU rows, "
             f"{result.mapped} mapped, {sum(result.unmapped.values())} not mapped"]
    for reason in REASONS:
        if result.unmapped[reason]:
            lines.append(f"  {result.unmapped[reason]:>5}  {reason}")
            lines.extend(f"           e.g. {e}" for e in result.examples.get(reason, []))
    if result.spot_as_on_demand:
        lines.append(f"  {len(result.spot_as_on_demand):>5}  {SPOT_AS_ON_DEMAND} (the on-demand quote is kept)")
        lines.extend(f"           e.g. {e}" for e in result.spot_as_on_demand[:EXAMPLES_PER_REASON])
    by: dict[tuple[str, str], list[str]] = {}
    for quotes in result.quotes.values():
        for q in quotes:
            by.setdefault((q.provider, q.tier), []).append(q.region or "")
    # No quote: nothing is written (planner.inputs.atomic.refuse_empty), and the line must not say otherwise.
    lines.append(f"quotes written: {result.quote_count} for {len(result.quotes)} GPU profiles" if result.quote_count
                 else "quotes: none (nothing written)")
    for (provider, tier), regions in sorted(by.items()):
        lines.append(f"  {provider:<11} {tier:<10} {len(regions):>4} quotes in {len(set(regions))} region(s): "
                     + ", ".join(sorted(set(regions))))
    return lines
