"""Online price refresh: current offers through gpuhunt -> dated catalog snapshots under $TRAINPLAN_HOME, and what changed.

gpuhunt (dstack's GPU price catalog, https://github.com/dstackai/gpuhunt) is optional and pinned
(requirements-prices.txt); it is imported only inside `gpuhunt_fetch`, so the planner runs without it. Its offers
(CatalogItem: provider, instance_name, location, price, gpu_count, gpu_name, spot...) are turned into rows in
SkyPilot's vms.csv columns and go through the CSV importer's code path (price_catalog.import_files): the same alias
table, per-GPU-hour prices, each region's cheapest zone, unmapped offers counted by reason, the same snapshot file.

A live offer is evidence of that day's price: as_of = retrieved = the day fetched. Each provider's quotes are one
file, `<profiles>/catalog/gpuhunt-<YYYY-MM-DD>-<provider>.yaml` (a refresh of some providers leaves the others'
files alone, and no file outgrows the snapshot size cap); the same day replaces its file, and plans read only each
provider's newest file (price_catalog.snapshot_files): an offer the latest refresh no longer lists is gone, and older
days' files stay on disk as history. Offline, timed out or not installed: RefreshError, and nothing is written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import TrainplanError
from planner.inputs import price_catalog as pc
from planner.inputs.errors import InputError
from planner.inputs.profiles import GpuProfile, PriceQuote, current_quotes, load_profiles, offer_key
from planner.inputs.userdata import SHIPPED_PROFILES_DIR, user_profiles_dir
from planner.vocab import PRICE_CHANGE_REPORT_FRACTION

GPUHUNT_PIN = "0.1.34"
INSTALL_COMMAND = f"pip install gpuhunt=={GPUHUNT_PIN}"
DEFAULT_TIMEOUT_S = 60.0
# gpuhunt's published catalogs (one download per provider, no credentials: its OFFLINE_PROVIDERS in 0.1.34) and
# Vast.ai's public marketplace API (queried live). gpuhunt's other online providers need accounts.
PUBLISHED_PROVIDERS = ("aws", "azure", "gcp", "lambdalabs", "nebius", "oci", "runpod", "verda", "cloudrift")
LIVE_PROVIDERS = ("vastai",)
PROVIDERS = PUBLISHED_PROVIDERS + LIVE_PROVIDERS
SNAPSHOT_PREFIX = pc.REFRESH_PREFIX  # only each provider's newest such file is read (pc.snapshot_files)
SOURCE_PREFIX = "gpuhunt "   # every refreshed quote's source starts so (how a diff knows an earlier refresh's quotes)

# gpuhunt items that are not an on-demand or spot rental of one instance.
NOT_OFFERS = {"gcp-dws-calendar-mode": "GCP DWS calendar mode (a reservation of fixed length)",
              "runpod-cluster": "RunPod instant cluster (2-8 nodes rented together)"}
# Providers whose instance_name is a GPU type, not a machine shape: one name comes in 1, 2, 4, 8-GPU sizes, so the
# planner's instance is "<n>x <name>". On a marketplace the name is a listing id: the instance becomes "<n>x <GPU
# name>" and the listing goes to the source, so each region keeps its cheapest listing (as a region keeps its
# cheapest zone in the CSV importer).
GPU_TYPE_NAMED = ("runpod",)
MARKETPLACES = ("vastai",)
GPU_VENDORS = (None, "nvidia", "amd")  # TPUs, Gaudi and Tenstorrent cards are not GPU rows
_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")

# RefreshError kinds: the app words each one itself (pages.gpus.refresh.error.<kind>).
NOT_INSTALLED, TIMEOUT, FETCH_FAILED, NO_OFFERS, WRITE_FAILED = (
    "not_installed", "timeout", "fetch_failed", "no_offers", "write_failed")


class RefreshError(TrainplanError):
    """The refresh did not happen: one message for a person; the current prices stay as they were."""

    def __init__(self, kind: str, message: str, detail: str = ""):
        super().__init__(message)
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Fetched:
    """What a fetcher returns: gpuhunt's version, each provider's offers (CatalogItem fields as a mapping), and the
    providers that failed with why."""

    version: str
    offers: Mapping[str, Sequence[Mapping[str, Any]]]
    failed: Mapping[str, str] = field(default_factory=dict)


Fetcher = Callable[[Sequence[str]], Fetched]


# ---------------------------------------------------------------- fetching (the only code that imports gpuhunt)

def gpuhunt_fetch(providers: Sequence[str]) -> Fetched:
    """Current offers with at least one GPU from gpuhunt, by provider. Raises RefreshError when gpuhunt is missing
    and lets a failure to download every catalog propagate (offline); one provider failing is reported in `failed`."""
    import logging

    gpuhunt = _import_gpuhunt()
    # gpuhunt logs each failed download with a traceback; the refresh reports failures itself.
    log = logging.getLogger("gpuhunt")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    if any(p in PUBLISHED_PROVIDERS for p in providers):
        catalog.load()  # every published catalog; raises when none could be downloaded
    offers: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    for name in providers:
        try:
            if name == "vastai":  # a live API: its provider object is added (gpuhunt's default_catalog does so too)
                catalog.add_provider(importlib.import_module("gpuhunt.providers.vastai").VastAIProvider())
            offers[name] = [_item_fields(item) for item in catalog.query(provider=name, min_gpu_count=1)]
        except Exception as exc:  # noqa: BLE001 - a third-party network client: one provider never stops the rest
            failed[name] = _why(exc)
    return Fetched(version=_gpuhunt_version(gpuhunt), offers=offers, failed=failed)


def _import_gpuhunt() -> Any:
    try:
        return importlib.import_module("gpuhunt")
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "gpuhunt"
        raise RefreshError(NOT_INSTALLED, f"gpuhunt is not installed: {INSTALL_COMMAND} "
                           "(or pip install -r requirements-prices.txt)"
                           + ("" if missing == "gpuhunt" else f"; it needs {missing}, which is missing"),
                           INSTALL_COMMAND) from None


def _gpuhunt_version(module: Any) -> str:
    from importlib import metadata

    try:
        return metadata.version("gpuhunt")
    except metadata.PackageNotFoundError:
        return str(getattr(module, "__version__", "unknown"))


def _item_fields(item: Any) -> dict[str, Any]:
    data = dataclasses.asdict(item) if dataclasses.is_dataclass(item) and not isinstance(item, type) else dict(item)
    return {k: getattr(v, "value", v) for k, v in data.items()}  # enums (gpu_vendor, cpu_arch) -> their text


def _why(exc: BaseException, limit: int = 300) -> str:
    """'Type: message (Cause: its message)', shortened: network errors repeat their cause at length."""
    cause = exc.__cause__ or exc.__context__
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fetch_offers(providers: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S,
                 fetcher: Fetcher | None = None) -> Fetched:
    """Run the fetcher with a wall-clock limit (gpuhunt's downloads have none of their own). On a timeout the
    fetch thread is left to finish on its own (a daemon: it never holds up the exit) and its result is dropped."""
    fetch = fetcher or gpuhunt_fetch
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["fetched"] = fetch(providers)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=work, name="gpuhunt-fetch", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise RefreshError(TIMEOUT, f"no answer from gpuhunt's price catalogs within {timeout_s:g} s (offline or a "
                           "slow network?); the current prices stay, nothing was written. Try again, or raise "
                           "--timeout", f"{timeout_s:g}")
    error = box.get("error")
    if isinstance(error, RefreshError):
        raise error
    if error is not None:
        if not isinstance(error, Exception):
            raise error  # KeyboardInterrupt, SystemExit: not a fetch failure
        raise RefreshError(FETCH_FAILED, f"could not fetch prices through gpuhunt ({_why(error)}); check the "
                           "internet connection. The current prices stay, nothing was written", _why(error))
    return box["fetched"]


# ---------------------------------------------------------------- offers -> quotes (the CSV importer's path)

class _BadOffer(TrainplanError, ValueError):
    pass


def _row(provider: str, item: Any) -> Mapping[str, str] | str | None:
    """One gpuhunt offer as a vms.csv row; None when it has no GPU, a NOT_OFFERS reason when it is not a rental the
    planner bills. _BadOffer for an item without the CatalogItem fields the row needs."""
    if not isinstance(item, Mapping):
        raise _BadOffer(f"got {type(item).__name__}; expected an offer with CatalogItem's fields")
    count = item.get("gpu_count")
    if count == 0 or item.get("gpu_vendor") not in GPU_VENDORS:
        return None
    flags, provider_data = item.get("flags") or (), item.get("provider_data") or {}
    if not isinstance(flags, (list, tuple)) or not isinstance(provider_data, Mapping):
        raise _BadOffer(f"flags/provider_data: got {type(flags).__name__}/{type(provider_data).__name__}; expected "
                        "a list and a mapping")
    for flag in flags:
        if flag in NOT_OFFERS:
            return NOT_OFFERS[flag]
    if provider_data.get("is_dws_calendar_mode"):
        return NOT_OFFERS["gcp-dws-calendar-mode"]
    instance, location, spot = item.get("instance_name"), item.get("location"), item.get("spot")
    if not isinstance(instance, str) or not instance.strip():
        raise _BadOffer(f"instance_name: got {instance!r}; expected the instance type")
    if not isinstance(spot, bool):
        raise _BadOffer(f"spot: got {spot!r}; expected true or false")
    gpu = str(item.get("gpu_name") or "(no GPU name)")
    region = location.strip() if isinstance(location, str) else ""
    zone = ""
    if provider == "gcp" and (m := _GCP_ZONE.match(region)):
        region, zone = m.group(1), region
    if provider in GPU_TYPE_NAMED:
        instance = f"{count}x {instance}"
    elif provider in MARKETPLACES:
        instance, zone = f"{count}x {gpu}", f"listing {instance}"
    price = item.get("price")
    text = "" if price is None else str(price)
    return {"InstanceType": instance.strip(), "AcceleratorName": gpu, "AcceleratorCount": str(count),
            "Region": region, "AvailabilityZone": zone, "Price": "" if spot else text, "SpotPrice": text if spot else ""}


@dataclass
class ProviderImport:
    provider: str                       # gpuhunt's name
    result: pc.ImportResult
    not_offers: Counter = field(default_factory=Counter)  # NOT_OFFERS reason -> items left out


def import_offers(provider: str, items: Sequence[Any], version: str, day: dt.date,
                  aliases: pc.AliasTable) -> ProviderImport:
    """One provider's gpuhunt offers -> quotes, through the CSV importer's rows, alias table and counters. Row
    messages name the offer by its place in gpuhunt's list ("gpuhunt:aws line 8") and vms.csv's column names
    (Price/SpotPrice = price, AcceleratorCount = gpu_count, Region = location)."""
    rows: list[tuple[int, Mapping[str, str]]] = []
    bad: list[str] = []
    not_offers: Counter = Counter()
    where = f"gpuhunt:{provider}"
    for i, item in enumerate(items, start=1):
        try:
            row = _row(provider, item)
        except _BadOffer as exc:
            bad.append(f"{where} line {i}: {exc}")
            continue
        if isinstance(row, str):
            not_offers[row] += 1
        else:  # a row without an accelerator is read and is not a GPU row, as in a vms.csv
            rows.append((i, row or {"AcceleratorName": ""}))
    source = f"{SOURCE_PREFIX}{version} ({provider} catalog) fetched {day.isoformat()}"
    cat = pc.CatalogFile(path=where, provider=provider, source=source, retrieved=day, as_of=day, meta={},
                         rows=tuple(rows))
    result = pc.import_files([cat], aliases)
    for text in bad:  # counted like the importer's unreadable rows: a GPU offer that gave no quote
        result.rows_read += 1
        result.gpu_rows += 1
        result.note(pc.BAD_ROW, text)
    return ProviderImport(provider=provider, result=result, not_offers=not_offers)


def combined(imports: Iterable[ProviderImport]) -> pc.ImportResult:
    """One ImportResult over several providers' (for the summary and the diff)."""
    out = pc.ImportResult()
    for imp in imports:
        r = imp.result
        out.files.extend(r.files)
        out.rows_read += r.rows_read
        out.gpu_rows += r.gpu_rows
        out.mapped += r.mapped
        out.unmapped.update(r.unmapped)
        for reason, examples in r.examples.items():
            shown = out.examples.setdefault(reason, [])
            shown.extend(examples[: pc.EXAMPLES_PER_REASON - len(shown)])
        for profile, quotes in r.quotes.items():
            out.quotes.setdefault(profile, []).extend(quotes)
    return out


# ---------------------------------------------------------------- what changed

@dataclass(frozen=True)
class QuoteChange:
    """One offer in a diff; old is None for an added offer, new None for a removed one."""

    profile: str
    provider: str
    instance: str
    region: str | None
    tier: str
    gpus_per_instance: int
    old_usd_per_gpu_hour: float | None
    new_usd_per_gpu_hour: float | None

    @property
    def change(self) -> float | None:
        """(new - old) / old; None unless both prices exist."""
        old, new = self.old_usd_per_gpu_hour, self.new_usd_per_gpu_hour
        return None if old is None or new is None else (new - old) / old


@dataclass(frozen=True)
class QuoteDiff:
    added: tuple[QuoteChange, ...]      # offers the planner had no quote for
    removed: tuple[QuoteChange, ...]    # offers the last refresh of these providers found and this one did not
    changed: tuple[QuoteChange, ...]    # the price moved by more than `threshold`, the largest move first
    unchanged: int                      # offers whose price moved by `threshold` or less
    threshold: float = PRICE_CHANGE_REPORT_FRACTION


def compare_quotes(before: Mapping[str, Iterable[PriceQuote]], after: Mapping[str, Iterable[PriceQuote]],
                   providers: Iterable[str], threshold: float = PRICE_CHANGE_REPORT_FRACTION) -> QuoteDiff:
    """New quotes vs the planner's current ones for the same offer (profiles.offer_key: provider, instance,
    region, tier). `providers` are the quote providers this refresh covered: only their earlier refreshed quotes
    can be "removed" (a hand-collected quote or another catalog's is not what this catalog lists)."""
    old: dict[tuple, tuple[str, PriceQuote]] = {}
    for profile, quotes in before.items():
        for q in current_quotes(quotes):
            old.setdefault(offer_key(q), (profile, q))
    added, changed, seen, unchanged = [], [], set(), 0
    for profile, quotes in after.items():
        for q in quotes:
            key = offer_key(q)
            seen.add(key)
            if key not in old:
                added.append(_change(profile, q, None, q.usd_per_gpu_hour))
                continue
            entry = _change(profile, q, old[key][1].usd_per_gpu_hour, q.usd_per_gpu_hour)
            if entry.change is not None and abs(entry.change) > threshold:
                changed.append(entry)
            else:
                unchanged += 1
    # Removed: in the latest earlier refresh of a covered provider, not in this one (an offer gone for longer was
    # reported by the refresh after it went; plans read only each provider's newest refresh, so it is gone).
    covered = {p.lower() for p in providers}
    latest: dict[str, dt.date] = {}
    for _, q in old.values():
        if q.provider.lower() in covered and q.source.startswith(SOURCE_PREFIX) and q.retrieved is not None:
            latest[q.provider.lower()] = max(q.retrieved, latest.get(q.provider.lower(), q.retrieved))
    removed = [_change(profile, q, q.usd_per_gpu_hour, None) for key, (profile, q) in old.items()
               if key not in seen and q.source.startswith(SOURCE_PREFIX)
               and q.retrieved is not None and q.retrieved == latest.get(q.provider.lower())]
    return QuoteDiff(added=tuple(sorted(added, key=_order)), removed=tuple(sorted(removed, key=_order)),
                     changed=tuple(sorted(changed, key=lambda c: (-abs(c.change or 0.0), *_order(c)))),
                     unchanged=unchanged, threshold=threshold)


def _change(profile: str, q: PriceQuote, old: float | None, new: float | None) -> QuoteChange:
    return QuoteChange(profile=profile, provider=q.provider, instance=q.instance, region=q.region, tier=q.tier,
                       gpus_per_instance=q.gpus_per_instance, old_usd_per_gpu_hour=old, new_usd_per_gpu_hour=new)


def _order(c: QuoteChange) -> tuple:
    return (c.profile, c.provider, c.instance.lower(), c.region or "", c.tier)


# ---------------------------------------------------------------- the refresh

@dataclass
class RefreshOutcome:
    day: dt.date
    version: str
    imports: list[ProviderImport]           # providers that returned offers
    failed: dict[str, str]                  # gpuhunt provider -> why it gave no quotes
    diff: QuoteDiff
    paths: dict[str, Path]                  # gpuhunt provider -> its snapshot file (written unless dry_run)
    dry_run: bool

    @property
    def result(self) -> pc.ImportResult:
        return combined(self.imports)


def snapshot_path(catalog_dir: Path, day: dt.date, provider: str) -> Path:
    return catalog_dir / f"{SNAPSHOT_PREFIX}{day.isoformat()}-{provider}.yaml"


def parse_providers(text: str | None) -> tuple[str, ...]:
    """'aws,gcp' -> ('aws', 'gcp'); None or empty -> every provider. gpuhunt's names (lambdalabs, oci, vastai)."""
    if not text or not text.strip():
        return PROVIDERS
    names = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
    for name in names:
        if name not in PROVIDERS:
            raise InputError("--providers", None, name, "gpuhunt provider names from " + ", ".join(PROVIDERS))
    return names


def refresh(*, providers: Sequence[str] = PROVIDERS, timeout_s: float = DEFAULT_TIMEOUT_S, dry_run: bool = False,
            fetcher: Fetcher | None = None, today: dt.date | None = None,
            profiles: Mapping[str, GpuProfile] | None = None, catalog_dir: Path | None = None) -> RefreshOutcome:
    """Fetch, map, compare with the planner's current quotes and (unless dry_run) write one snapshot per provider.

    profiles: the planner's profiles before the refresh (default: shipped + $TRAINPLAN_HOME, as plans load them);
    catalog_dir: where snapshots go (default: $TRAINPLAN_HOME/gpu_profiles/catalog, which plans read).
    Raises RefreshError (nothing written) when gpuhunt is missing, times out, fails, or no provider gave an offer.
    """
    day = today or dt.date.today()
    if profiles is None:
        profiles, _ = load_profiles(SHIPPED_PROFILES_DIR, user_profiles_dir())
    aliases = pc.load_aliases(pc.ALIASES_PATH, known_profiles=profiles)
    fetched = fetch_offers(providers, timeout_s, fetcher)
    failed = {p: fetched.failed[p] for p in providers if p in fetched.failed}
    imports = []
    for provider in providers:
        items = fetched.offers.get(provider)
        if provider in failed:
            continue
        if not items:
            failed[provider] = "no offers (its catalog is empty or was not downloaded)"
            continue
        imp = import_offers(provider, items, fetched.version, day, aliases)
        if not imp.result.quote_count:  # an empty snapshot would hide this provider's quotes of earlier days
            failed[provider] = (f"{len(items)} offers, none gave a quote ({imp.result.gpu_rows} GPU rows, none mapped "
                                "to a GPU profile)")
            continue
        imports.append(imp)
    folder = catalog_dir or user_profiles_dir() / pc.CATALOG_DIRNAME
    texts = {}
    for imp in list(imports):
        text = pc.render_snapshot(imp.result, made_by=f"`python -m planner prices refresh` (gpuhunt {fetched.version})",
                                  dates_note="as_of = retrieved = the day the offers were fetched (a live offer is "
                                             "evidence of that day's price).")
        if len(text.encode("utf-8")) > pc.SNAPSHOT_FILE.max_bytes:
            failed[imp.provider] = (f"{imp.result.quote_count} quotes: more than a snapshot file may hold "
                                    f"({pc.SNAPSHOT_FILE.max_bytes // 2**20} MiB)")
            imports.remove(imp)
            continue
        texts[imp.provider] = text
    if not imports:
        detail = "; ".join(f"{p}: {why}" for p, why in failed.items())
        raise RefreshError(NO_OFFERS, f"gpuhunt gave no usable offers ({detail}); the current prices stay, nothing "
                           "was written", detail)
    diff = compare_quotes({pid: p.prices for pid, p in profiles.items()}, combined(imports).quotes,
                          {aliases.provider_name(imp.provider) for imp in imports})
    paths = {p: snapshot_path(folder, day, p) for p in texts}
    if not dry_run:
        _write(paths, texts)
    return RefreshOutcome(day=day, version=fetched.version, imports=imports, failed=failed, diff=diff, paths=paths,
                          dry_run=dry_run)


def _write(paths: Mapping[str, Path], texts: Mapping[str, str]) -> None:
    from planner.inputs.atomic import atomic_write

    done: list[str] = []
    for provider, path in paths.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, texts[provider])
        except OSError as exc:
            detail = f"{path}: {exc.strerror or type(exc).__name__}"
            kept = f" (written before it: {', '.join(done)})" if done else ""
            raise RefreshError(WRITE_FAILED, f"could not write {detail}; that file is unchanged{kept}",
                               detail) from None
        done.append(str(path))


# ---------------------------------------------------------------- the summary a person reads (CLI)

def outcome_lines(outcome: RefreshOutcome, show: int = 10) -> list[str]:
    """Counts, the importer's summary, the files, providers without quotes, and the first `show` of each change."""
    diff = outcome.diff
    lines = [f"gpuhunt {outcome.version}: offers of {len(outcome.imports)} provider(s) fetched {outcome.day}"]
    if outcome.version != GPUHUNT_PIN:
        lines.append(f"warning: gpuhunt {outcome.version} is installed; the tested version is {GPUHUNT_PIN} "
                     f"({INSTALL_COMMAND})")
    summary = pc.summary_lines(outcome.result)
    if outcome.dry_run:
        summary = [line.replace("quotes written:", "quotes (dry run, not written):", 1) for line in summary]
    lines += summary
    left_out = Counter[str]()
    for imp in outcome.imports:
        left_out.update(imp.not_offers)
    lines += [f"  {n:>5}  left out, not an on-demand or spot rental: {reason}" for reason, n in left_out.items()]
    for path in outcome.paths.values():
        lines.append(("would write " if outcome.dry_run else "wrote ") + str(path))
    if outcome.dry_run:
        lines.append("dry run: nothing written")
    lines += [f"not refreshed: {provider}: {why}" for provider, why in outcome.failed.items()]
    pct = f"{diff.threshold:.0%}"
    lines.append(f"what changed since the prices the planner had: {len(diff.added)} added, {len(diff.removed)} "
                 f"removed, {len(diff.changed)} changed by more than {pct} ({diff.unchanged} within {pct})")
    for title, entries in (("added", diff.added), ("removed", diff.removed),
                           (f"changed by more than {pct}", diff.changed)):
        if entries:
            more = f", first {show} of {len(entries)}" if len(entries) > show else ""
            lines.append(f"{title} ({len(entries)}{more}):")
            lines += ["  " + change_line(c) for c in entries[:show]]
    return lines


def change_line(c: QuoteChange) -> str:
    where = f"{c.profile}  {c.provider} {c.instance} {c.region or '-'} {c.tier} ({c.gpus_per_instance} GPU)"
    old, new = c.old_usd_per_gpu_hour, c.new_usd_per_gpu_hour
    if old is None:
        return f"{where}  ${new:.4f}/GPU-h"
    if new is None:
        return f"{where}  was ${old:.4f}/GPU-h"
    return f"{where}  ${old:.4f} -> ${new:.4f}/GPU-h ({(c.change or 0.0):+.1%})"
