"""A rental price quote: the one record shipped profiles, price catalogs and a user's overrides all hold.

Below profiles, price_catalog and userdata, which all read quotes, so none of them imports another to get one.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from planner.inputs.check import keyed_reader
from planner.vocab import RENTAL_TIERS

ORIGINS = ("published", "user")
# Billing granularity when a quote does not say: hourly, so an unknown increment never understates cost.
DEFAULT_BILLING_INCREMENT_S = 3600
MAX_USD_PER_GPU_HOUR = 200.0  # the most any rental quote (shipped or a user's) may say

# Key -> required? Order is the order profiles' profile_to_dict writes, matching the shipped files.
_PRICE_KEYS = {
    "provider": True, "instance": True, "gpus_per_instance": False, "usd_per_gpu_hour": True,
    "tier": True, "billing_increment_s": False, "region": False, "as_of": False, "source": True,
    "origin": False, "retrieved": False,
}


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
    # The day a machine-readable catalog was read (catalog quotes only; hand-collected quotes leave it None). It is
    # not a price date: a catalog row with no date of its own keeps as_of None and is shown as "date unknown".
    retrieved: datetime.date | None = None

    @property
    def from_catalog(self) -> bool:
        """Imported from a price catalog (gpu_profiles/catalog/), not hand-collected."""
        return self.retrieved is not None


def parse_price(data: Any, source: str, where: str = "prices[0]") -> PriceQuote:
    q = keyed_reader(data, _PRICE_KEYS, source, where)
    return PriceQuote(
        provider=q.string("provider"),
        instance=q.string("instance"),
        gpus_per_instance=q.integer("gpus_per_instance", 1, minimum=1, maximum=64),
        usd_per_gpu_hour=q.number("usd_per_gpu_hour", minimum=0, exclusive_min=True, maximum=MAX_USD_PER_GPU_HOUR,
                                  unit=" USD per GPU-hour"),
        tier=q.choice("tier", RENTAL_TIERS),
        billing_increment_s=q.integer("billing_increment_s", DEFAULT_BILLING_INCREMENT_S, minimum=1, maximum=86400),
        region=q.string("region", None),
        as_of=q.date("as_of", None),
        source=q.string("source"),
        origin=q.choice("origin", ORIGINS, "published"),
        retrieved=q.date("retrieved", None),
    )
