"""The GPUs & prices table: one row per profile with the quote a plan would bill, and every quote of one GPU."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from planner.engine.cost import choose_quote, stale_quote_warning
from planner.inputs.profiles import GpuProfile, PriceQuote
from planner.inputs.regions import region_group
from planner.inputs.userdata import user_profiles_dir
from planner.present import fmt
from planner.vocab import PEAK_KEYS


@dataclass(frozen=True)
class ProfileRow:
    id: str
    name: str
    vendor: str
    added_by_you: bool
    memory_gib: float
    memory_gib_source: str
    bandwidth_gb_per_s: float
    peaks: Mapping[str, float | None]
    estimated: tuple[str, ...]
    tdp_w: float
    interconnect_kind: str | None  # the GPU-to-GPU link (nvlink4, pcie4_x8...), None without one
    interconnect_gb_per_s: float | None  # its bidirectional bandwidth
    usd_per_gpu_hour: float | None
    provider: str | None
    instance: str | None
    price_as_of: dt.date | None
    price_age_days: int | None
    stale: bool  # the quote is undated or older than STALE_QUOTE_DAYS (user prices are never stale)
    price_origin: str | None  # published | user
    n_quotes: int
    region: str | None = None  # the region of the quote above
    # The cheapest published quote of `tier` in a Latin American region (planner.inputs.regions), None = no LatAm quote
    latam_usd_per_gpu_hour: float | None = None
    latam_offer: str | None = None  # "aws · g5.xlarge · sa-east-1"
    measured_points: int = 0  # step times measured by bench runs on this GPU (any model)
    published_points: int = 0  # published figures for this GPU (results/published/)


def profile_rows(profiles: Mapping[str, GpuProfile], overrides: Mapping[str, list[PriceQuote]], tier: str,
                 today: dt.date, user_dir: str | Path | None = None,
                 points: Mapping[str, Mapping[str, int]] | None = None) -> list[ProfileRow]:
    """One row per profile with the quote a plan would bill at (cheapest of `tier`, user prices included), and
    how many measured and published step-time points exist for it (`points`: result_views.point_counts)."""
    points = points or {}
    mine = Path(user_dir if user_dir is not None else user_profiles_dir()).resolve()
    rows = []
    for p in sorted(profiles.values(), key=lambda p: (p.vendor, -p.memory_gib, p.name)):
        extra = list(overrides.get(p.id, []))
        q = choose_quote(p.prices, tier, "cheapest", extra, today)
        as_of = q.as_of if q is not None else None
        latam = choose_quote(p.prices, tier, "cheapest", (), today, region_group="latam")
        rows.append(ProfileRow(
            id=p.id, name=p.name, vendor=p.vendor, added_by_you=Path(p.path).resolve().parent == mine,
            memory_gib=p.memory_gib, memory_gib_source=p.memory_gib_source,
            bandwidth_gb_per_s=p.memory_bandwidth_gb_per_s,
            peaks={k: p.peak_tflops.get(k) for k in PEAK_KEYS}, estimated=tuple(p.estimated_peaks),
            tdp_w=p.tdp_w,
            interconnect_kind=p.interconnect.kind if p.interconnect else None,
            interconnect_gb_per_s=p.interconnect.bidirectional_gb_per_s if p.interconnect else None,
            usd_per_gpu_hour=q.usd_per_gpu_hour if q else None, provider=q.provider if q else None,
            instance=q.instance if q else None, price_as_of=as_of,
            price_age_days=(today - as_of).days if as_of else None,
            stale=q is not None and stale_quote_warning(q, today) is not None,
            price_origin=q.origin if q else None, n_quotes=len(p.prices) + len(extra),
            region=q.region if q else None,
            latam_usd_per_gpu_hour=latam.usd_per_gpu_hour if latam else None,
            latam_offer=fmt.offer(latam.provider, latam.instance, latam.region) if latam else None,
            measured_points=points.get(p.id, {}).get("measured", 0),
            published_points=points.get(p.id, {}).get("published", 0),
        ))
    return rows


def quotes_of(profile: GpuProfile, overrides: Iterable[PriceQuote], today: dt.date) -> list[dict]:
    """Every quote of one GPU (published and yours), by tier and price, with its age, whether it is stale, and
    whether one of your prices replaces it (same provider, instance and tier: plans bill yours)."""
    overrides = list(overrides)
    yours = {(q.provider.lower(), q.instance.lower(), q.tier) for q in overrides}
    rows = []
    for q in [*profile.prices, *overrides]:
        rows.append({"provider": q.provider, "instance": q.instance, "tier": q.tier,
                     "usd_per_gpu_hour": q.usd_per_gpu_hour, "gpus_per_instance": q.gpus_per_instance,
                     "billing_increment_s": q.billing_increment_s,
                     "region": q.region, "region_group": region_group(q.region), "as_of": q.as_of,
                     "retrieved": q.retrieved, "age_days": (today - q.as_of).days if q.as_of else None,
                     "stale": stale_quote_warning(q, today) is not None, "origin": q.origin, "source": q.source,
                     "replaced": q.origin != "user" and (q.provider.lower(), q.instance.lower(), q.tier) in yours})
    return sorted(rows, key=lambda r: (r["tier"], r["usd_per_gpu_hour"], r["provider"]))


