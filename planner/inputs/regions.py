"""Which group of cloud regions (planner.vocab.REGION_GROUPS) a quote's region belongs to.

One table of region-name patterns (shell patterns, case-insensitive, first match wins), from the providers' own
region lists (checked 2026-12-02):
AWS https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html (sa-east-1 Sao Paulo,
mx-central-1 Mexico), Google Cloud https://cloud.google.com/compute/docs/regions-zones (southamerica-east1 Sao Paulo,
southamerica-west1 Santiago, northamerica-south1 Queretaro), Azure https://learn.microsoft.com/azure/reliability/
regions-list (brazilsouth, brazilsoutheast, mexicocentral, chilecentral), Oracle https://docs.oracle.com/iaas/
Content/General/Concepts/regions.htm (sa-saopaulo-1, sa-vinhedo-1, sa-santiago-1, sa-valparaiso-1, sa-bogota-1,
mx-queretaro-1, mx-monterrey-1); the GPU clouds name theirs plainly (Lambda us-east-1, Nebius eu-north1, Hyperstack
US-1/NORWAY-1/CANADA-1, RunPod US/CA, Verda FIN-01/ICE-01).

A region no pattern matches (Canada, Asia, the Middle East, GovCloud, or a quote with no region at all) belongs to
no group: only "any" keeps it. Nothing is guessed from a provider's name.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

from planner.vocab import REGION_GROUPS

ANY = "any"

# (pattern, group). Order matters: the GovCloud rule comes before us-*.
_RULES: tuple[tuple[str, str | None], ...] = (
    # ---- Latin America
    ("sa-*", "latam"),                  # AWS sa-east-1; Oracle sa-saopaulo-1, sa-santiago-1, sa-bogota-1...
    ("mx-*", "latam"),                  # AWS mx-central-1; Oracle mx-queretaro-1, mx-monterrey-1
    ("southamerica-*", "latam"),        # Google Cloud southamerica-east1 / -west1
    ("northamerica-south*", "latam"),   # Google Cloud northamerica-south1 (Queretaro)
    ("brazil*", "latam"),               # Azure brazilsouth, brazilsoutheast
    ("mexico*", "latam"),               # Azure mexicocentral
    ("chile*", "latam"),                # Azure chilecentral
    # ---- United States
    ("us-gov-*", None),                 # AWS GovCloud: not for sale to everyone
    ("us-*", "us"),                     # AWS, Google Cloud, Oracle, Lambda, Nebius us-central1, Hyperstack US-1
    ("us", "us"),                       # RunPod's data-centre country
    ("eastus*", "us"),                  # Azure eastus, eastus2
    ("westus*", "us"),                  # Azure westus, westus2, westus3
    ("*centralus", "us"),               # Azure centralus, northcentralus, southcentralus, westcentralus
    # ---- Europe (the continent, the United Kingdom included)
    ("eu-*", "eu"),                     # AWS, Oracle, Nebius eu-north1 / eu-west1
    ("europe-*", "eu"),                 # Google Cloud
    ("uk-*", "eu"),                     # Oracle uk-london-1
    ("northeurope", "eu"), ("westeurope", "eu"), ("francecentral", "eu"), ("germanywestcentral", "eu"),
    ("swedencentral", "eu"), ("uksouth", "eu"), ("ukwest", "eu"), ("norwayeast", "eu"),
    ("switzerlandnorth", "eu"), ("polandcentral", "eu"), ("italynorth", "eu"), ("spaincentral", "eu"),
    ("norway-*", "eu"),                 # Hyperstack NORWAY-1
    ("fin-*", "eu"), ("ice-*", "eu"),   # Verda (DataCrunch) Finland, Iceland
)


def region_group(region: str | None) -> str | None:
    """The group (latam, us, eu) of a region name, or None when it belongs to none or is unknown."""
    if not region:
        return None
    name = region.strip().lower()
    for pattern, group in _RULES:
        if fnmatch.fnmatchcase(name, pattern):
            return group
    return None


def in_regions(region: str | None, *, group: str = ANY, regions: Iterable[str] = ()) -> bool:
    """True when a quote's region passes the scenario's filter: an explicit list of region names (any provider,
    case-insensitive) when given, else the region group ("any" keeps every quote, a region-less one too)."""
    wanted = {r.strip().lower() for r in regions}
    if wanted:
        return region is not None and region.strip().lower() in wanted
    if group == ANY:
        return True
    if group not in REGION_GROUPS:
        raise ValueError(f"unknown region group {group!r}; one of {', '.join(REGION_GROUPS)}")
    return region_group(region) == group
