"""Storage and egress prices per provider (gpu_profiles/catalog/storage.yaml): what keeping a dataset next to the
GPUs, and moving it out of the provider where it lives today, costs (the plan's data line, issue 18).

Each figure is cited with its product, the date its source states (null when the source gives none) and the
source. Units: USD per GB-month and USD per GB transferred out to the internet, decimal GB; a price the provider
states per GiB says `unit: GiB` and is converted here (1 GiB = 1.073741824 GB), so the planner works in GB.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from planner.inputs import loader
from planner.inputs.check import Reader
from planner.inputs.errors import InputError
from planner.inputs.price_catalog import CATALOG_DIR, STORAGE_NAME

SCHEMA = "trainplan.storage/1"
STORAGE_PATH = CATALOG_DIR / STORAGE_NAME
STORAGE_FILE = loader.FileKind("storage and egress price table (YAML)", "yaml", 1 * loader.MIB)
MAX_USD_PER_GB = 100.0
GB_PER_GIB = 2**30 / 1e9
UNITS = ("GB", "GiB")


@dataclass(frozen=True)
class StoragePrice:
    usd_per_gb_month: float
    product: str
    as_of: dt.date | None
    source: str
    derived: str = ""  # the one arithmetic step done on the published figure (e.g. hourly price x 730 h)


@dataclass(frozen=True)
class EgressPrice:
    usd_per_gb: float | None  # None: the source gives the free allowance but no readable per-GB rate
    free_gb_per_month: float
    product: str
    as_of: dt.date | None
    source: str
    derived: str = ""


@dataclass(frozen=True)
class ProviderStorage:
    storage: StoragePrice | None
    egress: EgressPrice | None


@dataclass(frozen=True)
class StorageTable:
    providers: Mapping[str, ProviderStorage]
    path: str

    def storage(self, provider: str) -> StoragePrice | None:
        p = self.providers.get(provider.lower())
        return p.storage if p else None

    def egress(self, provider: str) -> EgressPrice | None:
        """The provider's egress price; None also when the source gives no per-GB rate (only an allowance)."""
        p = self.providers.get(provider.lower())
        return p.egress if p and p.egress and p.egress.usd_per_gb is not None else None

    def known(self, provider: str) -> bool:
        return provider.lower() in self.providers


EMPTY = StorageTable(providers={}, path=str(STORAGE_PATH))


def _per_gb(r: Reader) -> float:
    """GB in the price's unit: 1 for GB, 1.073741824 for GiB (a per-GiB price / that = per GB)."""
    return GB_PER_GIB if r.choice("unit", UNITS, "GB") == "GiB" else 1.0


def load_storage(path: str | Path = STORAGE_PATH) -> StorageTable:
    """Read and check the table; InputError names the file and field of a bad value."""
    source = str(path)
    r = Reader(loader.load_file(path, STORAGE_FILE), source)
    r.reject_unknown(("schema", "retrieved", "providers"))
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)
    providers: dict[str, ProviderStorage] = {}
    sub = r.sub("providers")
    for name, entry in (sub.data.items() if sub is not None else ()):
        p = Reader(entry, source, f"providers.{name}")
        p.reject_unknown(("storage", "egress"))
        storage = egress = None
        s = p.sub("storage")
        if s is not None:
            s.reject_unknown(("usd_per_gb_month", "unit", "product", "as_of", "source", "derived"))
            per = _per_gb(s)
            storage = StoragePrice(usd_per_gb_month=s.number("usd_per_gb_month", minimum=0, maximum=MAX_USD_PER_GB)
                                   / per,
                                   product=s.string("product"), as_of=s.date("as_of", None), source=s.string("source"),
                                   derived=s.string("derived", ""))
        e = p.sub("egress")
        if e is not None:
            e.reject_unknown(("usd_per_gb", "unit", "free_gb_per_month", "product", "as_of", "source", "derived"))
            per = _per_gb(e)
            rate = e.number("usd_per_gb", None, minimum=0, maximum=MAX_USD_PER_GB)
            egress = EgressPrice(usd_per_gb=rate / per if rate is not None else None,
                                 free_gb_per_month=e.number("free_gb_per_month", 0.0, minimum=0, maximum=1e9),
                                 product=e.string("product"), as_of=e.date("as_of", None), source=e.string("source"),
                                 derived=e.string("derived", ""))
        if str(name).lower() in providers:
            raise InputError(source, f"providers.{name}", name, "each provider once (names are case-insensitive)")
        providers[str(name).lower()] = ProviderStorage(storage=storage, egress=egress)
    return StorageTable(providers=providers, path=source)
