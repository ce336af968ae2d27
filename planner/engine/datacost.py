"""The data line of a run's cost (issue 18): keeping the dataset next to the GPUs for the run, and moving it out of
the provider where it lives today.

- storage = dataset GB × the GPU provider's storage price per GB-month × run hours / 730 (one copy, on the
  provider's network or object storage; providers bill a GB-month as 730 hours, 365 × 24 / 12);
- egress = dataset GB × instances × runs × the data's provider's internet egress price per GB, when the data lives
  at another provider (each instance downloads its copy once per run; ingress is free at the providers we list).
  Data at "other" (a place planner.vocab.DATA_LOCATIONS does not list) has no price to cite: no egress is counted,
  and the option's note says so.
  The providers' monthly free allowance is not subtracted: it is shared with everything else on the account.

Prices come from gpu_profiles/catalog/storage.yaml (planner.inputs.storage), each cited. A price the table does not
have is left out of the line and the option's note says so: never counted as zero silently.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from planner.engine.notes import Note
from planner.inputs.storage import StorageTable
from planner.vocab import DATA_OTHER

HOURS_PER_BILLING_MONTH = 730.0
# Where the data already is when it needs no transfer out of a cloud: your own machines, or the GPU's own provider.
LOCAL_DATA = ("local", "on_prem", "on-prem")


@dataclass(frozen=True)
class DataCost:
    usd: float
    storage_usd: float | None  # None: no storage price for the GPU's provider
    egress_usd: float | None   # None: no egress price for the data's provider (0.0: no transfer needed)
    notes: tuple[Note, ...]


def _dated(day: dt.date | None) -> object:
    """A price's date for a note: the ISO day, or the words for "no date" in the note's language."""
    return day.isoformat() if day else Note("date_unknown")


def storage_usd(dataset_gb: float, usd_per_gb_month: float, hours: float) -> float:
    """dataset GB × USD per GB-month × hours / 730."""
    return dataset_gb * usd_per_gb_month * hours / HOURS_PER_BILLING_MONTH


def egress_usd(dataset_gb: float, usd_per_gb: float, *, copies: int) -> float:
    """dataset GB × copies (instances × runs) × USD per GB out."""
    return dataset_gb * copies * usd_per_gb


def needs_transfer(data_location: str | None, gpu_provider: str) -> bool:
    """Whether the data must leave a cloud provider to reach the GPUs."""
    if not data_location or data_location.lower() in LOCAL_DATA:
        return False
    return data_location.lower() != gpu_provider.lower()


def data_cost(dataset_gb: float | None, *, gpu_provider: str, data_location: str | None, hours: float,
              instances: int, runs: int, table: StorageTable) -> DataCost:
    """The data line for one run scenario (likely, low or high hours); zero with no note when no dataset size.

    `instances`: the machines that each download a copy (rented instances; for on-prem, nodes of
    hardware.gpus_per_node GPUs). Prices are per decimal GB (planner.inputs.storage converts per-GiB ones)."""
    if not dataset_gb:
        return DataCost(0.0, 0.0, 0.0, ())
    notes: list[Note] = []
    on_prem = gpu_provider.lower() in LOCAL_DATA
    stored: float | None = 0.0
    if not on_prem:
        price = table.storage(gpu_provider)
        if price is None:
            stored = None
            notes.append(Note("data_storage_unpriced", provider=gpu_provider, gb=float(dataset_gb)))
        else:
            stored = storage_usd(dataset_gb, price.usd_per_gb_month, hours)
            notes.append(Note("data_storage", gb=float(dataset_gb), provider=gpu_provider,
                              price=price.usd_per_gb_month, product=price.product,
                              as_of=_dated(price.as_of), source=price.source, hours=float(hours),
                              usd=float(stored)))
    moved: float | None = 0.0
    if data_location == DATA_OTHER:  # a place the list does not have: no price to cite, so none counted, said so
        moved = None
        notes.append(Note("data_location_other", gb=float(dataset_gb)))
    elif data_location and needs_transfer(data_location, gpu_provider):
        out = table.egress(data_location)
        copies = max(1, instances) * max(1, runs)
        if out is None or out.usd_per_gb is None:
            moved = None
            notes.append(Note("data_egress_unpriced", location=data_location, gb=float(dataset_gb)))
        else:
            moved = egress_usd(dataset_gb, out.usd_per_gb, copies=copies)
            notes.append(Note("data_egress", gb=float(dataset_gb), copies=copies, location=data_location,
                              price=out.usd_per_gb, product=out.product, as_of=_dated(out.as_of),
                              source=out.source, free=float(out.free_gb_per_month), usd=float(moved)))
    return DataCost(usd=(stored or 0.0) + (moved or 0.0), storage_usd=stored, egress_usd=moved, notes=tuple(notes))
