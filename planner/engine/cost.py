"""What a run costs: price choice, instance rounding, hours with overheads, billing, spot, on-prem, energy (§5)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from planner.engine import datacost
from planner.engine.estimates import ConvergenceEstimate, CostEstimate, CostLines, PriceChoice, StepEstimate
from planner.engine.notes import Note
from planner.engine.option import OptionPlan
from planner.errors import TrainplanError
from planner.inputs.profiles import current_quotes, prefer_dated, price_disagreements, recency_rank
from planner.inputs.regions import ANY as ANY_REGION
from planner.inputs.regions import in_regions
from planner.inputs.storage import EMPTY as EMPTY_STORAGE
from planner.inputs.storage import StorageTable
from planner.vocab import QUOTE_MAX_AGE_DAYS

if TYPE_CHECKING:
    from planner.inputs.networks import Link, NetworkTable
    from planner.inputs.profiles import GpuProfile, PriceQuote, PurchasePrice
    from planner.inputs.scenario import OnPrem, Pricing, SpotSettings, Workload

HOURS_PER_YEAR = 365 * 24
# Without a measured mean power, a training GPU is taken to draw this fraction of its TDP. An assumption, not a
# measurement (shown in the notes and in the on-prem price source). The nearest public figures are for a whole
# 8-GPU H100 HGX node while training: a peak of ~8.4 kW against its rated 10.2 kW (82 %; Latif et al. 2024,
# arXiv:2412.08602) and compute-heavy training at 76 % of that rating (Newkirk et al. 2025, arXiv:2506.14551).
# A run's mean draw, with data loading, evaluation and checkpoints, sits below those peaks, hence 0.7.
# pricing.on_prem.power_fraction_of_tdp replaces it for on-prem; measured NVML power replaces both.
TDP_UTILISATION = 0.7
# Its source (node measurements: 76-82 % of rated power, arXiv:2506.14551, arXiv:2412.08602) is said by the catalog:
# price_source.tdp_share_assumed.
STALE_QUOTE_DAYS = QUOTE_MAX_AGE_DAYS  # the one freshness rule (planner.vocab)
# Billing rounding smaller than this fraction of the hours is not worth a note.
BILLING_NOTE_FRACTION = 0.01


class NoQuoteError(TrainplanError, ValueError):
    """No price quote exists for the GPU at the requested tier (and provider); `note` says which and what exists."""

    def __init__(self, note: Note) -> None:
        super().__init__(note.key)
        self.note = note


# ---------------------------------------------------------------- formulas

def instances_needed(n_gpus: int, gpus_per_instance: int) -> tuple[int, int, Note | None]:
    """(instances, GPUs billed, note): a quote for k-GPU instances bills n rounded up to a multiple of k."""
    if n_gpus < 1 or gpus_per_instance < 1:
        raise ValueError(f"n_gpus and gpus_per_instance must be at least 1, got {n_gpus}, {gpus_per_instance}")
    instances = math.ceil(n_gpus / gpus_per_instance)
    billed = instances * gpus_per_instance
    note = None
    if billed != n_gpus:
        note = Note("instances_rounded", n=n_gpus, billed=billed, k=gpus_per_instance)
    return instances, billed, note


def choose_quote(prices: Iterable[PriceQuote], tier: str, provider: str = "cheapest",
                 overrides: Iterable[PriceQuote] = (), today: dt.date | None = None, *, n_gpus: int | None = None,
                 gpus_per_node: int = 8, region_group: str = ANY_REGION, regions: Sequence[str] = (),
                 usable: Callable[[PriceQuote], bool] | None = None) -> PriceQuote | None:
    """The quote to bill at: the lowest usd_per_gpu_hour of `tier` (from `provider` unless "cheapest").

    With `n_gpus`, the lowest bill for that many GPUs: an 8-GPU instance at a lower hourly rate still bills
    8 GPUs for a 1-GPU job, so it loses to a dearer 1-GPU instance when that costs less in total. For a job on
    several GPUs, instances holding min(n, gpus_per_node) GPUs come first: the step time assumes GPUs that share
    a node (NVLink/PCIe), which separate 1-GPU rentals do not give.

    User overrides replace every published quote with the same provider, instance and tier, and add new ones; one
    that names no region counts in every region (a price you typed is one you can get), one that names a region
    only where that region passes the filter. Published quotes count only in the scenario's
    regions (`regions` names, else `region_group`: planner.inputs.regions). Within one offer only the newest quote
    counts (planner.inputs.profiles.current_quotes: an old, cheaper price is history, not an offer); quotes dated
    after `today` are ignored so a plan can be reproduced as of a day. `usable` keeps only the quotes it accepts
    (billing_for: rentals whose GPUs the step time can assume). Returns None when nothing matches.
    """
    overrides = list(overrides)
    replaced = {_offer_key(q) for q in overrides}
    pool = [q for q in prices if _offer_key(q) not in replaced
            and in_regions(q.region, group=region_group, regions=regions)]
    pool += [q for q in overrides if q.region is None or in_regions(q.region, group=region_group, regions=regions)]
    offers = prefer_dated(current_quotes([q for q in pool if q.tier == tier and _offered_by(q, provider)],
                                         as_of_today=today))
    if usable is not None:
        offers = [q for q in offers if usable(q)]
    if not offers:
        return None
    if n_gpus and n_gpus > 1:
        node_sized = [q for q in offers if q.gpus_per_instance >= min(n_gpus, gpus_per_node)]
        offers = node_sized or offers

    # Ties: a user price, then the newest, then alphabetical, so the choice is deterministic.
    def billed_rate(q: PriceQuote) -> float:
        if n_gpus is None:
            return q.usd_per_gpu_hour
        return instances_needed(n_gpus, q.gpus_per_instance)[1] * q.usd_per_gpu_hour

    def preference(q: PriceQuote) -> tuple[float | int | str, ...]:
        user, dated, day = recency_rank(q)
        return (billed_rate(q), q.usd_per_gpu_hour, -int(user), -int(dated), -day.toordinal(), q.provider.lower(),
                q.instance.lower(), q.region or "")

    return min(offers, key=preference)


def _offered_by(quote: PriceQuote, provider: str) -> bool:
    return provider == "cheapest" or quote.provider.lower() == provider.lower()


def _offer_key(quote: PriceQuote) -> tuple[str, str, str]:
    """What a user override replaces: the provider's instance at that tier, in every region."""
    return quote.provider.lower(), quote.instance.lower(), quote.tier


# ---------------------------------------------------------------- topology: what the time may assume

@dataclass(frozen=True)
class Billing:
    """The rental an option is billed for, and the hardware its step time must assume (issue 18)."""

    quote: PriceQuote
    topology: str                      # planner.vocab.TOPOLOGIES
    gpus_per_node: int                 # GPUs that share one instance's NVLink/PCIe in the timing
    inter_node_gb_per_s: float | None  # between instances/nodes, GB/s one direction; None: the scenario's figure
    network: str                       # where that figure comes from ("" within one node)


# An HGX/DGX-class server: 8 GPUs on NVLink/NVSwitch. The clouds' multi-node products (EFA, InfiniBand clusters)
# are built from such whole servers; an instance of fewer GPUs is a slice of one, on the provider's ordinary network.
FULL_NODE_GPUS = 8


def topology_for(n_gpus: int, gpus_per_instance: int, full_node_gpus: int = FULL_NODE_GPUS) -> str:
    """From the job and the rental alone: one_node when one instance holds every GPU; multi_node for whole servers
    (instances of at least full_node_gpus GPUs); separate_nodes for several smaller instances."""
    if n_gpus <= gpus_per_instance:
        return "one_node"
    return "multi_node" if gpus_per_instance >= full_node_gpus else "separate_nodes"


def billing_for(prices: Iterable[PriceQuote], pricing: Pricing, overrides: Sequence[PriceQuote] = (),
                today: dt.date | None = None, *, n_gpus: int, gpus_per_node: int, networks: NetworkTable,
                gpu_name: str = "", gpu_id: str = "") -> Billing:
    """The quote to bill `n_gpus` at (choose_quote) among rentals the step time can assume, and that time's layout.

    One instance holding every GPU: timed within it. Whole servers (topology_for): timed over the scenario's
    inter-node network (hardware.inter_node_gb_per_s, the cluster network the user assumes; the option's note says
    to check the provider sells one). Several smaller instances: timed over the provider's cited network between
    instances (networks.yaml). A provider that has no private network between rentals is never used for several
    instances, and small instances with no cited figure are not either, except for a provider the table does not
    know when the price is yours (your own cluster: the scenario's figure). Raises NoQuoteError naming why.
    """
    prices = list(prices)

    def link(q: PriceQuote) -> Link:
        return networks.link(q.provider, q.instance)

    def usable(q: PriceQuote) -> bool:
        topology = topology_for(n_gpus, q.gpus_per_instance)
        if topology == "one_node":
            return True
        if networks.private_network(q.provider) is False:
            return False
        if topology == "multi_node":
            return True
        return link(q).gb_per_s is not None or (q.origin == "user" and not networks.knows(q.provider))

    def pick(accept: Callable[[PriceQuote], bool] | None) -> PriceQuote | None:
        return choose_quote(prices, pricing.tier, pricing.provider, overrides, today, n_gpus=n_gpus,
                            gpus_per_node=gpus_per_node, region_group=pricing.region_group,
                            regions=pricing.regions, usable=accept)

    quote = pick(usable)
    if quote is None:
        anyway = pick(None)
        if anyway is None:
            raise NoQuoteError(_no_quote_message(prices, pricing, overrides, today, gpu_name=gpu_name,
                                                 gpu_id=gpu_id))
        raise NoQuoteError(Note("no_rentable_topology", n=n_gpus, gpu=gpu_name, k=anyway.gpus_per_instance,
                                provider=anyway.provider, instance=anyway.instance, why=link(anyway).source))
    topology = topology_for(n_gpus, quote.gpus_per_instance)
    if topology == "one_node":
        return Billing(quote, topology, max(quote.gpus_per_instance, n_gpus), None, "")
    if topology == "multi_node":
        return Billing(quote, topology, quote.gpus_per_instance, None, "the scenario's hardware.inter_node_gb_per_s")
    found = link(quote)
    if found.gb_per_s is None:  # usable() let it through: your price, on a network the table does not know
        return Billing(quote, topology, quote.gpus_per_instance, None,
                       "your price: the scenario's hardware.inter_node_gb_per_s")
    return Billing(quote, topology, quote.gpus_per_instance, found.gb_per_s, found.source)


def billing_candidates(prices: Iterable[PriceQuote], pricing: Pricing, overrides: Sequence[PriceQuote] = (),
                       today: dt.date | None = None, *, n_gpus: int, gpus_per_node: int, networks: NetworkTable,
                       gpu_name: str = "", gpu_id: str = "") -> list[Billing]:
    """billing_for's rental first, then the best rental of each other instance size the step time can assume.

    The hourly rate alone does not decide a multi-GPU job: two 4-GPU instances on a fast network can cost less in
    total than eight 1-GPU rentals on a slow one, because they finish sooner. The plan times each candidate and bills
    the cheapest in total (plan._option). One GPU: one candidate. Raises NoQuoteError as billing_for does.
    """
    prices, overrides = list(prices), list(overrides)

    def best(of_size: int | None) -> Billing:
        keep = (lambda q: True) if of_size is None else (lambda q: q.gpus_per_instance == of_size)
        return billing_for([q for q in prices if keep(q)], pricing, [q for q in overrides if keep(q)], today,
                           n_gpus=n_gpus, gpus_per_node=gpus_per_node, networks=networks, gpu_name=gpu_name,
                           gpu_id=gpu_id)

    first = best(None)
    if n_gpus <= 1:
        return [first]
    out = [first]
    for size in sorted({q.gpus_per_instance for q in [*prices, *overrides] if q.tier == pricing.tier}
                       - {first.quote.gpus_per_instance}):
        try:
            out.append(best(size))
        except NoQuoteError:
            continue
    return out


def run_hours(steps: float, step_time_s: float, workload: Workload, pricing: Pricing) -> float:
    """Hours = steps x early-stop x step time x (1 + eval + checkpoint) x (1 + failure) x runs (docs/methods.md#cost):
    early stop and the eval/checkpoint overheads from the workload, failures and runs from the pricing."""
    w = workload
    one_run_s = steps * w.early_stop_fraction * step_time_s * (1 + w.eval_overhead + w.checkpoint_overhead)
    return one_run_s * (1 + pricing.failure_overhead) * pricing.runs / 3600.0


def billed_hours(hours: float, billing_increment_s: float) -> float:
    """Hours rounded up to the billing increment (per-hour billing: 2.1 h -> 3 h)."""
    if billing_increment_s <= 0:
        raise ValueError(f"billing_increment_s must be positive, got {billing_increment_s}")
    increments = math.ceil(hours * 3600.0 / billing_increment_s - 1e-9)  # 2.0 h stays 2 h despite float noise
    return max(increments, 0) * billing_increment_s / 3600.0


def spot_preemption(hours: float, instances: int, spot: SpotSettings) -> tuple[float, float]:
    """(expected preemptions, lost hours): preemptions = hours x rate per instance-hour x instances; each loses
    half the checkpoint interval + the restart time (docs/methods.md#cost).

    First order: the lost hours are not themselves exposed to further preemptions (fine while lost << hours).
    """
    preemptions = hours * spot.preemptions_per_instance_hour * instances
    lost_hours = preemptions * (spot.checkpoint_interval_min / 2.0 + spot.restart_min) / 60.0
    return preemptions, lost_hours


def on_prem_usd_per_gpu_hour(on_prem: OnPrem, gpu_power_w: float, *, purchase_usd: float | None = None) -> float:
    """purchase / (lifetime hours x fleet utilisation) + power kW x PUE x electricity price (docs/methods.md#cost).

    `purchase_usd`: what one GPU cost (on_prem_purchase); None = the scenario's override."""
    return (on_prem_capital_usd_per_gpu_hour(on_prem, purchase_usd=purchase_usd)
            + on_prem_power_usd_per_gpu_hour(on_prem, gpu_power_w))


def on_prem_capital_usd_per_gpu_hour(on_prem: OnPrem, *, purchase_usd: float | None = None) -> float:
    """Purchase spread over the hours the GPU does paid work: purchase / (lifetime x 8,760 h x fleet utilisation).

    `purchase_usd`: what one GPU cost (on_prem_purchase); None = the scenario's override, which must then be set."""
    usd = purchase_usd if purchase_usd is not None else on_prem.purchase_usd_per_gpu
    if usd is None:
        raise ValueError("no purchase price: pass purchase_usd or set pricing.on_prem.purchase_usd_per_gpu")
    return usd / (on_prem.lifetime_years * HOURS_PER_YEAR * on_prem.fleet_utilisation)


def on_prem_power_usd_per_gpu_hour(on_prem: OnPrem, gpu_power_w: float) -> float:
    """Electricity per GPU-hour at the facility: power kW x PUE x USD per kWh."""
    return gpu_power_w / 1000.0 * on_prem.pue * on_prem.usd_per_kwh


@dataclass(frozen=True)
class OnPremPurchase:
    """What one GPU (one torch device) is amortised from, and where that figure comes from."""

    usd: float
    source: str            # "scenario override (...)" or the profile's kind, date and citation
    as_of: dt.date | None  # the price's date; None for an override (the user's own figure)


def on_prem_purchase(gpu: GpuProfile, on_prem: OnPrem) -> OnPremPurchase | None:
    """The scenario's override (pricing.on_prem.purchase_usd_per_gpu) for every GPU, else the profile's cited
    `purchase:` price divided by devices_per_package (an MI250X package holds 2 GCDs, each one profile GPU);
    None when neither exists (the option is then unpriced: on_prem_unpriced)."""
    if on_prem.purchase_usd_per_gpu is not None:
        return OnPremPurchase(on_prem.purchase_usd_per_gpu,
                              "scenario override (pricing.on_prem.purchase_usd_per_gpu)", None)
    if gpu.purchase is None:
        return None
    return OnPremPurchase(gpu.purchase.usd / gpu.devices_per_package,
                          _purchase_text(gpu.purchase, gpu.devices_per_package), gpu.purchase.as_of)


def on_prem_unpriced(gpu: GpuProfile, on_prem: OnPrem) -> Note | None:
    """Why `gpu` has no on-prem price (no cited purchase price and no override), or None when it has one."""
    if on_prem_purchase(gpu, on_prem) is not None:
        return None
    return Note("on_prem_no_purchase", gpu=gpu.name, gpu_id=gpu.id)


def _purchase_text(p: PurchasePrice, devices_per_package: int) -> str:
    per_device = f" / {devices_per_package} devices per package" if devices_per_package > 1 else ""
    return f"{p.kind.replace('_', ' ')} price ${p.usd:,.2f}{per_device} as of {p.as_of.isoformat()} ({p.source})"


def energy_kwh(n_gpus: int, mean_power_w: float, hours: float, pue: float = 1.0) -> float:
    """kWh = n x mean power x hours (x PUE at the facility; 1.0 for cloud, whose PUE is not known here)."""
    return n_gpus * mean_power_w * hours * pue / 1000.0


def co2_kg(kwh: float | None, grid_kg_per_kwh: float | None) -> float | None:
    """kg CO2 = kWh x grid intensity; None when either is unknown."""
    if kwh is None or grid_kg_per_kwh is None:
        return None
    return kwh * grid_kg_per_kwh


def stale_quote_warning(quote: PriceQuote | PriceChoice, today: dt.date,
                        max_age_days: int = STALE_QUOTE_DAYS) -> Note | None:
    """A warning when a published quote is older than max_age_days or has no date; user prices are current."""
    as_of = _as_date(quote.as_of)
    if as_of is None:
        if quote.origin == "user":
            return None
        retrieved = _as_date(quote.retrieved)
        if retrieved is not None:  # a catalog row: read on that day, but the catalog gives no price date
            return Note("price_undated_catalog", provider=quote.provider, instance=quote.instance,
                        retrieved=retrieved.isoformat())
        return Note("price_undated", provider=quote.provider, instance=quote.instance)
    age_days = (today - as_of).days
    if age_days <= max_age_days:
        return None
    return Note("price_stale", as_of=as_of.isoformat(), days=age_days, max_days=max_age_days,
                provider=quote.provider, instance=quote.instance)


def undated_rate_warning(pricing: Pricing) -> Note | None:
    """A warning when amounts are converted out of USD at a rate with no date."""
    if pricing.currency == "USD" or pricing.exchange_rate_as_of is not None:
        return None
    return Note("rate_undated", rate=pricing.exchange_rate, currency=pricing.currency)


# ---------------------------------------------------------------- the estimate

@dataclass(frozen=True)
class _Run:
    """One scenario of a run (likely, low or high): wall-clock hours and what is billed."""

    hours: float  # all runs, overheads and spot losses included
    billed_hours: float
    preemptions: float
    lost_hours: float


def estimate_cost(option: OptionPlan, step: StepEstimate, convergence: ConvergenceEstimate, pricing: Pricing,
                  workload: Workload, *, mean_power_w: float | None = None, overrides: Sequence[PriceQuote] = (),
                  today: dt.date | None = None, gpus_per_node: int = 8, billing: Billing | None = None,
                  storage: StorageTable | None = None) -> CostEstimate:
    """Hours, billed GPU-hours, USD and local amount with low/high range, energy and CO2 for one option:
    its step time and band (`step`) × its steps and their range (`convergence`) on option.n_gpus × option.gpu.

    `billing` (billing_for) is the rental the step time was computed for; without it the cheapest quote is chosen
    here (callers that time several GPUs must pass it, so time and price assume the same instances).
    Raises NoQuoteError when the GPU has no quote for the tier (and provider); `today` defaults to the clock.
    With workload.dataset_gb, a data line (planner/engine/datacost.py, prices from `storage`) is added to the USD.
    """
    today = today or dt.date.today()
    gpu, n_gpus = option.gpu, option.n_gpus
    step_time_s, step_band_s = step.step_time_s, step.band_s
    steps, steps_range = convergence.steps, convergence.steps_range
    notes: list[Note] = []
    power_w = _power_w(gpu, mean_power_w, notes, tdp_fraction(pricing))
    price, pue = _price(gpu, pricing, overrides, power_w, today, notes=notes, n_gpus=n_gpus,
                        gpus_per_node=gpus_per_node, quote=billing.quote if billing else None)
    instances, n_billed, rounding_note = instances_needed(n_gpus, price.gpus_per_instance)
    if rounding_note:
        notes.append(rounding_note)
    if billing is not None and billing.topology == "multi_node":
        notes.append(Note("whole_nodes", n=n_gpus, k=price.gpus_per_instance, instances=instances,
                          provider=price.provider))
    if billing is not None and billing.topology == "separate_nodes":
        notes.append(Note("separate_instances", n=n_gpus, k=price.gpus_per_instance, instances=instances,
                          gb_s=round(billing.inter_node_gb_per_s, 2) if billing.inter_node_gb_per_s else "?",
                          network=billing.network))
    increment_s = pricing.billing_increment_min * 60.0 if pricing.billing_increment_min else price.billing_increment_s

    def run(s: float, t_s: float) -> _Run:
        return _run(s, t_s, workload, pricing, instances=instances, increment_s=increment_s)

    likely = run(steps, step_time_s)
    steps_low, steps_high = steps_range or (steps, steps)
    low = run(min(steps_low, steps), min(step_band_s[0], step_time_s))
    high = run(max(steps_high, steps), max(step_band_s[1], step_time_s))

    if pricing.tier == "spot":
        notes.append(Note("spot_preemptions", preemptions=round(likely.preemptions, 1),
                          hours=round(likely.lost_hours, 1)))
        mean_gap_min = 60.0 / (pricing.spot.preemptions_per_instance_hour * instances) \
            if pricing.spot.preemptions_per_instance_hour else float("inf")
        if mean_gap_min <= pricing.spot.checkpoint_interval_min + pricing.spot.restart_min:
            notes.append(Note("spot_unfinishable", gap_min=round(mean_gap_min),
                              interval_min=round(pricing.spot.checkpoint_interval_min)))
    if likely.billed_hours - likely.hours > BILLING_NOTE_FRACTION * likely.hours:
        notes.append(Note("billed_increments", increment=_increment_text(increment_s),
                          hours=round(likely.hours, 2), billed=round(likely.billed_hours, 2)))
    for warning in (stale_quote_warning(price, today) if price.origin != "on_prem" else None,
                    undated_rate_warning(pricing)):
        if warning:
            notes.append(warning)

    # The machines that each download the dataset: the rented instances; on-prem, nodes of gpus_per_node GPUs (its
    # price is per GPU, so `instances` counts GPUs there).
    machines = math.ceil(n_gpus / gpus_per_node) if price.origin == "on_prem" else instances

    def data(r: _Run) -> datacost.DataCost:
        return datacost.data_cost(workload.dataset_gb, gpu_provider=price.provider, data_location=workload.data_location,
                                  hours=r.hours, instances=machines, runs=pricing.runs,
                                  table=storage or EMPTY_STORAGE)

    def usd(r: _Run, data_usd: float) -> float:
        """GPU-hours billed x price, + the data line (storage and egress are billed by providers too), x (1 + tax)."""
        return (n_billed * r.billed_hours * price.usd_per_gpu_hour + data_usd) * (1 + pricing.tax_rate)

    data_likely = data(likely)
    notes.extend(data_likely.notes)
    usd_likely = usd(likely, data_likely.usd)
    usd_range = (usd(low, data(low).usd), usd(high, data(high).usd))
    kwh = energy_kwh(n_gpus, power_w, likely.hours, pue) if power_w is not None else None
    return CostEstimate(
        hours=likely.hours,
        hours_range=(low.hours, high.hours),
        gpu_hours=n_billed * likely.billed_hours,  # billed GPU-hours: usd = (gpu_hours x price + data) x (1 + tax)
        usd=usd_likely,
        usd_range=usd_range,
        amount_in_currency=usd_likely * pricing.exchange_rate,
        currency=pricing.currency,
        amount_range_in_currency=(usd_range[0] * pricing.exchange_rate, usd_range[1] * pricing.exchange_rate),
        price=price,
        n_gpus_billed=n_billed,
        preemptions=likely.preemptions,
        energy_kwh=kwh,
        co2_kg=co2_kg(kwh, pricing.grid_kg_co2_per_kwh),
        notes=tuple(notes),
        data_usd=data_likely.usd * (1 + pricing.tax_rate),
        lines=cost_lines(n_billed * likely.billed_hours * price.usd_per_gpu_hour, data_likely,
                         tax_rate=pricing.tax_rate),
    )


def cost_lines(gpu_usd: float, data: datacost.DataCost, *, tax_rate: float) -> CostLines:
    """The lines of one cost before tax (GPU time, storage, egress) and the tax on their sum: what the headline's
    formula shows, so that its lines add up to estimate_cost's usd."""
    storage, egress = data.storage_usd or 0.0, data.egress_usd or 0.0
    return CostLines(gpu_usd=gpu_usd, storage_usd=storage, egress_usd=egress,
                     tax_usd=(gpu_usd + storage + egress) * tax_rate, tax_rate=tax_rate)


def estimate_time_only(option: OptionPlan, step: StepEstimate, convergence: ConvergenceEstimate, pricing: Pricing,
                       workload: Workload, *, mean_power_w: float | None = None,
                       reason: Note | None = None) -> CostEstimate:
    """Hours, GPU-hours and energy when no price applies (e.g. an owned card with no quote): money is NaN and
    `price` None, so a plan still says how long the run takes; `reason` (why there is no price) goes in notes."""
    n_gpus, step_time_s, step_band_s = option.n_gpus, step.step_time_s, step.band_s
    steps, steps_range = convergence.steps, convergence.steps_range
    notes: list[Note] = [reason] if reason else []
    power_w = _power_w(option.gpu, mean_power_w, notes, tdp_fraction(pricing))
    plain = replace(pricing, tier="on_demand")  # no spot losses without a spot price

    def run(s: float, t_s: float) -> _Run:
        return _run(s, t_s, workload, plain, instances=n_gpus, increment_s=1.0)

    likely = run(steps, step_time_s)
    steps_low, steps_high = steps_range or (steps, steps)
    low = run(min(steps_low, steps), min(step_band_s[0], step_time_s))
    high = run(max(steps_high, steps), max(step_band_s[1], step_time_s))
    kwh = energy_kwh(n_gpus, power_w, likely.hours) if power_w is not None else None
    nan = float("nan")
    return CostEstimate(
        hours=likely.hours, hours_range=(low.hours, high.hours), gpu_hours=n_gpus * likely.hours, usd=nan,
        usd_range=(nan, nan), amount_in_currency=nan, currency=pricing.currency, amount_range_in_currency=(nan, nan),
        price=None, n_gpus_billed=n_gpus, energy_kwh=kwh, co2_kg=co2_kg(kwh, pricing.grid_kg_co2_per_kwh),
        notes=tuple(notes), data_usd=None,
    )


def _run(steps: float, step_time_s: float, workload: Workload, pricing: Pricing, *, instances: int,
         increment_s: float) -> _Run:
    hours = run_hours(steps, step_time_s, workload, pricing)
    preemptions = lost = 0.0
    if pricing.tier == "spot":
        preemptions, lost = spot_preemption(hours, instances, pricing.spot)
    total = hours + lost
    return _Run(hours=total, billed_hours=billed_hours(total, increment_s), preemptions=preemptions, lost_hours=lost)


def tdp_fraction(pricing: Pricing) -> float:
    """The share of TDP a GPU is taken to draw without measured power: pricing.on_prem.power_fraction_of_tdp for
    on-prem when set, else TDP_UTILISATION (cloud energy always uses the default)."""
    fraction = pricing.on_prem.power_fraction_of_tdp
    return fraction if pricing.tier == "on_prem" and fraction is not None else TDP_UTILISATION


def _power_w(gpu: GpuProfile, mean_power_w: float | None, notes: list[Note],
             fraction_of_tdp: float = TDP_UTILISATION) -> float | None:
    """Mean draw per GPU while training: measured, else TDP x fraction_of_tdp (noted), else unknown."""
    if mean_power_w is not None:
        return mean_power_w
    tdp_w = gpu.tdp_w
    if not tdp_w:
        notes.append(Note("no_energy"))
        return None
    power_w = tdp_w * fraction_of_tdp
    notes.append(Note("energy_tdp", pct=round(fraction_of_tdp * 100), tdp=round(tdp_w), power=round(power_w)))
    return power_w


def _price(gpu: GpuProfile, pricing: Pricing, overrides: Sequence[PriceQuote], power_w: float | None,
           today: dt.date, *, notes: list[Note], n_gpus: int | None = None,
           gpus_per_node: int = 8, quote: PriceQuote | None = None) -> tuple[PriceChoice, float]:
    """(price, PUE for energy): computed for on-prem, else `quote` or the chosen one; PUE 1.0 for cloud."""
    if pricing.tier == "on_prem":
        return _on_prem_price(gpu, pricing.on_prem, power_w, notes), pricing.on_prem.pue
    if quote is None:
        quote = choose_quote(gpu.prices, pricing.tier, pricing.provider, overrides, today, n_gpus=n_gpus,
                             gpus_per_node=gpus_per_node, region_group=pricing.region_group,
                             regions=pricing.regions)
    if quote is None:
        raise NoQuoteError(_no_quote_message(gpu.prices, pricing, overrides, today, gpu_name=gpu.name,
                                             gpu_id=gpu.id))
    notes.extend(_disagreement_notes(quote, gpu.prices, today))
    as_of = _as_date(quote.as_of)
    choice = PriceChoice(
        provider=quote.provider, instance=quote.instance, tier=quote.tier, usd_per_gpu_hour=quote.usd_per_gpu_hour,
        gpus_per_instance=quote.gpus_per_instance, billing_increment_s=quote.billing_increment_s,
        as_of=as_of.isoformat() if as_of else None, source=quote.source, origin=quote.origin, region=quote.region,
        retrieved=quote.retrieved.isoformat() if quote.retrieved else None,
    )
    return choice, 1.0


def _disagreement_notes(quote: PriceQuote, prices: Iterable[PriceQuote], today: dt.date) -> list[Note]:
    """A note for each quote of the same provider, tier and GPUs per instance whose price contradicts the billed
    one (planner.inputs.profiles.price_disagreements): both prices, their dates, and which the rule billed."""
    current = current_quotes([q for q in prices if q.tier == quote.tier], as_of_today=today)
    notes: dict[tuple[str, float], Note] = {}  # one per rival instance and price (the catalog repeats regions)
    for d in price_disagreements(current):
        if quote not in (d.dated, d.undated) or d.dated.as_of is None or d.undated.retrieved is None:
            continue
        rival = d.undated if quote == d.dated else d.dated
        notes.setdefault((rival.instance, rival.usd_per_gpu_hour), Note(
            "price_disagrees_dated" if d.dated_wins else "price_disagrees_catalog", provider=quote.provider,
            dated_instance=d.dated.instance, dated_usd=round(d.dated.usd_per_gpu_hour, 4),
            as_of=d.dated.as_of.isoformat(), undated_instance=d.undated.instance,
            undated_usd=round(d.undated.usd_per_gpu_hour, 4), retrieved=d.undated.retrieved.isoformat(),
            percent=round(100 * d.fraction)))
    return list(notes.values())


def _on_prem_price(gpu: GpuProfile, on_prem: OnPrem, power_w: float | None, notes: list[Note]) -> PriceChoice:
    """The on-prem price of one GPU-hour (on_prem_usd_per_gpu_hour) with a source that names the purchase price
    (kind, date, citation, or the scenario override) and the power terms. Raises NoQuoteError when the GPU has no
    purchase price and the scenario no override (plan.py asks on_prem_unpriced first and leaves it unpriced).

    as_of is the purchase price's date, for display; estimate_cost does not apply the 180-day quote rule to
    on-prem prices: a purchase price is the cost of hardware already bought (or a reference for it) and does not
    go stale the way a rental quote does.
    """
    purchase = on_prem_purchase(gpu, on_prem)
    if purchase is None:
        raise NoQuoteError(Note("on_prem_no_purchase", gpu=gpu.name, gpu_id=gpu.id))
    if power_w is None:
        notes.append(Note("on_prem_no_power"))
    usd_per_gpu_hour = on_prem_usd_per_gpu_hour(on_prem, power_w or 0.0, purchase_usd=purchase.usd)
    derivation = (Note("price_source.on_prem", usd=purchase.usd, years=on_prem.lifetime_years, hours=HOURS_PER_YEAR,
                       utilisation=on_prem.fleet_utilisation, kw=(power_w or 0.0) / 1000, pue=on_prem.pue,
                       usd_per_kwh=on_prem.usd_per_kwh),
                  Note("price_source.purchase", source=purchase.source),
                  Note("price_source.power", origin=_power_origin(on_prem, power_w, notes)))
    return PriceChoice(provider="on-prem", instance="owned", tier="on_prem", usd_per_gpu_hour=usd_per_gpu_hour,
                       gpus_per_instance=1, billing_increment_s=1.0,
                       as_of=purchase.as_of.isoformat() if purchase.as_of else None, source=purchase.source,
                       derivation=derivation,
                       origin="on_prem")


def _power_origin(on_prem: OnPrem, power_w: float | None, notes: Sequence[Note]) -> Note:
    """Where the on-prem power figure comes from: _power_w's energy_tdp note in `notes` marks a TDP share."""
    if power_w is None:
        return Note("price_source.power_unknown")
    tdp = next((n for n in notes if n.key == "energy_tdp"), None)
    if tdp is None:
        return Note("price_source.power_measured")
    share = (Note("price_source.tdp_share_given", share=on_prem.power_fraction_of_tdp)
             if on_prem.power_fraction_of_tdp is not None
             else Note("price_source.tdp_share_assumed", share=TDP_UTILISATION))
    return Note("price_source.power_tdp", tdp=tdp.params["tdp"], share=share)


def _no_quote_message(prices: Sequence[PriceQuote], pricing: Pricing, overrides: Sequence[PriceQuote],
                      today: dt.date | None, *, gpu_name: str, gpu_id: str) -> Note:
    who = Note("no_quote_any_provider") if pricing.provider == "cheapest" else Note("no_quote_provider",
                                                                                     provider=pricing.provider)
    if pricing.regions or pricing.region_group != ANY_REGION:
        elsewhere = choose_quote(prices, pricing.tier, pricing.provider, overrides, today)
        if elsewhere is not None:  # the GPU is sold at this tier, just not in the scenario's regions
            where = ", ".join(pricing.regions) if pricing.regions else pricing.region_group
            return Note("no_quote_in_regions", tier=pricing.tier, gpu=gpu_name, gpu_id=gpu_id, regions=where,
                        provider=elsewhere.provider, region=elsewhere.region or Note("region_unnamed"),
                        usd=round(elsewhere.usd_per_gpu_hour, 2))
    tiers = sorted({q.tier for q in [*prices, *overrides]})
    have = Note("no_quote_has_tiers", tiers=", ".join(tiers)) if tiers else Note("no_quote_none")
    return Note("no_quote", tier=pricing.tier, gpu=gpu_name, gpu_id=gpu_id, who=who, have=have)


def _as_date(value: dt.date | str | None) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


def _increment_text(increment_s: float) -> str:
    if increment_s % 3600 == 0:
        return f"{increment_s / 3600:g}-hour"
    if increment_s % 60 == 0:
        return f"{increment_s / 60:g}-min"
    return f"{increment_s:g}-s"
