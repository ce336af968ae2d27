"""Topology (issue 18): a multi-GPU option's time and price assume the same rented hardware."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from planner.engine.cost import NoQuoteError, billing_candidates, billing_for, topology_for
from planner.engine.plan import build_plan
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.networks import Link, NetworkTable, ProviderNetwork, load_networks
from planner.inputs.profiles import PriceQuote
from planner.inputs.scenario import Pricing, load_scenario_file
from tests.notes_support import detail_en, english

ROOT = Path(__file__).resolve().parents[1]
TODAY = dt.date(2026, 12, 2)
NETWORKS = NetworkTable(path="networks.yaml", providers={
    "bigcloud": ProviderNetwork(private_network=True, default_gbit_per_s=25.0, default_source="bigcloud docs",
                                why="", instances=()),
    "market": ProviderNetwork(private_network=False, default_gbit_per_s=None, default_source="",
                              why="'instances talk over the public internet'", instances=()),
})


def _q(usd: float, gpus: int, provider: str = "bigcloud", instance: str = "", origin: str = "published") -> PriceQuote:
    return PriceQuote(provider, instance or f"{provider}-{gpus}x", gpus, usd, "on_demand", 1, "us-east-1",
                      dt.date(2026, 11, 1), "test", origin)


@pytest.mark.parametrize("n,k,full_node,topology", [
    (1, 1, 8, "one_node"), (4, 8, 8, "one_node"), (8, 8, 8, "one_node"), (16, 8, 8, "multi_node"),
    (8, 1, 8, "separate_nodes"), (8, 4, 8, "separate_nodes"), (16, 16, 8, "one_node"), (8, 4, 4, "multi_node"),
])
def test_topology_of_a_rental(n, k, full_node, topology):
    assert topology_for(n, k, full_node) == topology


def test_a_node_sized_quote_is_timed_as_one_node():
    b = billing_for([_q(1.0, 1), _q(2.0, 8)], Pricing(), today=TODAY, n_gpus=8, gpus_per_node=8, networks=NETWORKS)
    assert (b.topology, b.quote.gpus_per_instance, b.gpus_per_node, b.inter_node_gb_per_s) == ("one_node", 8, 8, None)


def test_small_instances_are_timed_over_the_providers_network():
    b = billing_for([_q(1.0, 1)], Pricing(), today=TODAY, n_gpus=8, gpus_per_node=8, networks=NETWORKS)
    assert b.topology == "separate_nodes" and b.gpus_per_node == 1
    assert b.inter_node_gb_per_s == pytest.approx(25 / 8) and "bigcloud docs" in b.network


def test_a_provider_without_a_private_network_is_not_used_for_several_instances():
    quotes = [_q(0.3, 1, provider="market"), _q(1.0, 1)]
    b = billing_for(quotes, Pricing(), today=TODAY, n_gpus=4, gpus_per_node=8, networks=NETWORKS)
    assert b.quote.provider == "bigcloud"  # dearer, but its instances can talk to each other
    one = billing_for(quotes, Pricing(), today=TODAY, n_gpus=1, gpus_per_node=8, networks=NETWORKS)
    assert one.quote.provider == "market" and one.topology == "one_node"  # one GPU needs no network
    with pytest.raises(NoQuoteError) as err:
        billing_for(quotes[:1], Pricing(), today=TODAY, n_gpus=4, gpus_per_node=8, networks=NETWORKS,
                    gpu_name="RTX 4090")
    text = english(err.value.note)
    assert "no rental of 4 × RTX 4090" in text and "public internet" in text


def test_an_unknown_network_is_never_assumed_fast():
    with pytest.raises(NoQuoteError):
        billing_for([_q(1.0, 2, provider="elsewhere")], Pricing(), today=TODAY, n_gpus=4, gpus_per_node=8,
                    networks=NETWORKS)


def test_your_own_small_instances_use_the_scenarios_network_unless_the_table_knows_the_provider():
    mine = _q(1.0, 1, provider="mylab", origin="user")
    b = billing_for([], Pricing(), [mine], TODAY, n_gpus=4, gpus_per_node=8, networks=NETWORKS)
    assert b.topology == "separate_nodes" and b.inter_node_gb_per_s is None and "your price" in b.network
    # your price for a marketplace the table says has no private network: still not several instances
    with pytest.raises(NoQuoteError):
        billing_for([], Pricing(), [_q(0.2, 1, provider="market", origin="user")], TODAY, n_gpus=4,
                    gpus_per_node=8, networks=NETWORKS)
    yours_on_bigcloud = billing_for([], Pricing(), [_q(0.9, 1, origin="user")], TODAY, n_gpus=4, gpus_per_node=8,
                                    networks=NETWORKS)
    assert yours_on_bigcloud.inter_node_gb_per_s == pytest.approx(25 / 8)


def test_whole_servers_are_decided_by_the_rental_not_the_scenarios_node_size():
    # 1-GPU rentals are never "whole nodes", even when the scenario says nodes hold 1 GPU; 8-GPU servers always are.
    assert billing_for([_q(1.0, 1)], Pricing(), today=TODAY, n_gpus=8, gpus_per_node=1,
                       networks=NETWORKS).topology == "separate_nodes"
    b = billing_for([_q(2.0, 8)], Pricing(), today=TODAY, n_gpus=16, gpus_per_node=16, networks=NETWORKS)
    assert (b.topology, b.gpus_per_node, b.inter_node_gb_per_s) == ("multi_node", 8, None)
    with pytest.raises(NoQuoteError):  # a marketplace with no private network: not even whole servers
        billing_for([_q(1.5, 8, provider="market")], Pricing(), today=TODAY, n_gpus=16, gpus_per_node=8,
                    networks=NETWORKS)


def test_link_lookup_prefers_the_instance_then_the_provider_default():
    table = NetworkTable(path="n.yaml", providers={"aws": ProviderNetwork(True, None, "", "", instances=())})
    assert table.link("aws", "g5.xlarge") == Link(None, "no network figure for aws g5.xlarge")
    assert table.link("nobody", "x").gb_per_s is None


def test_the_shipped_network_table_loads_and_cites_every_figure():
    table = load_networks()
    assert table.providers
    for name, p in table.providers.items():
        assert p.private_network is not False or p.why, name
        assert p.default_gbit_per_s is None or p.default_source, name
        assert all(i.source for i in p.instances), name


@pytest.mark.parametrize("text,field", [
    ("schema: trainplan.networks/1\nproviders: {x: {private_network: false}}", "providers.x.why"),
    ("schema: trainplan.networks/1\nproviders: {x: {private_network: yes please}}", "providers.x.private_network"),
    ("schema: trainplan.networks/1\nproviders: {x: {instances: {a: {gbit_per_s: -1, source: s}}}}",
     "providers.x.instances.a.gbit_per_s"),
    ("schema: trainplan.networks/2\nproviders: {}", "schema"),
])
def test_a_bad_network_table_names_the_field(tmp_path, text, field):
    path = tmp_path / "networks.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_networks(path)
    assert err.value.field == field


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")))
def test_no_pick_of_a_shipped_scenario_mixes_a_one_node_time_with_separate_rentals(name):
    inputs = load_inputs(include_user_data=False)
    scenario = load_scenario_file(ROOT / "scenarios" / f"{name}.yaml")
    plan = build_plan(scenario, inputs, today=TODAY)
    r = plan.recommendation
    picks = [plan.option(i) for i in (r.primary, r.runner_up, r.cheapest_within_deadline, r.fastest_within_budget)
             if i]
    assert picks and all(p.topology is not None for p in picks)
    checked = 0
    for o in plan.options:
        price = o.cost.price if o.cost else None
        if price is None or o.n_gpus == 1 or price.origin == "on_prem":
            continue
        gpu = inputs.profiles[o.gpu_id]
        candidates = billing_candidates(gpu.prices, scenario.pricing, today=TODAY, n_gpus=o.n_gpus,
                                        gpus_per_node=scenario.hardware.gpus_per_node, networks=inputs.networks)
        # the price billed is one of the rentals the step time can assume, and the time assumes exactly its instances
        billing = next((b for b in candidates if (b.quote.provider, b.quote.instance, b.quote.gpus_per_instance)
                        == (price.provider, price.instance, price.gpus_per_instance)), None)
        assert billing is not None, o.id
        assert o.topology == billing.topology == topology_for(o.n_gpus, price.gpus_per_instance), o.id
        detail = detail_en(o.scaling.source) if o.scaling else ""
        if o.topology == "separate_nodes":
            link = inputs.networks.link(price.provider, price.instance)
            assert link.gb_per_s is not None and f"× {link.gb_per_s:g} GB/s aggregate" in detail, (o.id, detail)
            checked += 1
        elif o.topology == "one_node":
            assert "in one node" in detail, (o.id, detail)
        else:
            assert f"× {scenario.hardware.inter_node_gb_per_s:g} GB/s aggregate" in detail, (o.id, detail)
            assert any(n.key == "whole_nodes" for n in o.notes), o.id
    if name == "resnet50-imagenet":
        assert checked  # 8 x A10G on g5.xlarge, 8 x RTX 4090 on RunPod pods...


def test_candidates_are_the_best_rental_of_each_instance_size():
    quotes = [_q(1.0, 1), _q(1.2, 1, instance="other-1x"), _q(1.5, 4), _q(3.0, 8, provider="market")]
    got = billing_candidates(quotes, Pricing(), today=TODAY, n_gpus=8, gpus_per_node=8, networks=NETWORKS)
    assert [(b.quote.instance, b.topology) for b in got] == [
        ("market-8x", "one_node"), ("bigcloud-1x", "separate_nodes"), ("bigcloud-4x", "separate_nodes")]
    assert billing_candidates(quotes, Pricing(), today=TODAY, n_gpus=1, gpus_per_node=8,
                              networks=NETWORKS)[0].quote.instance == "bigcloud-1x"
    assert len(billing_candidates(quotes, Pricing(), today=TODAY, n_gpus=1, gpus_per_node=8, networks=NETWORKS)) == 1


def test_a_node_that_finishes_sooner_is_billed_when_it_costs_less_in_total():
    """8 x L40S for GPT-2: 8 RunPod pods over RunPod's 0.1 Gbit/s default would be the lowest hourly rate, but
    AWS g6e.12xlarge (4 GPUs, 100 Gbit/s) finishes so much sooner that it costs less in total: it is billed, and
    the note names both totals."""
    inputs = load_inputs(include_user_data=False)
    scenario = load_scenario_file(ROOT / "scenarios" / "gpt2-124m-10b-tokens.yaml")
    plan = build_plan(scenario, inputs, today=TODAY)
    o = plan.option("l40s-48gb-x8-bf16")
    assert o.cost.price.instance == "g6e.12xlarge" and o.topology == "separate_nodes"
    note = next(n for n in o.notes if n.key == "billed_by_total")
    assert dict(note.items)["other_provider"] == "runpod"
    assert dict(note.items)["other_usd"] > 5 * o.cost.usd  # a raw number: the note says it in the locale


def test_a_cheaper_rental_that_misses_the_deadline_loses_to_one_that_meets_it():
    """Among the rentals of one option (plan._rental_preference): meeting the deadline at the scenario's confidence
    comes before the lower total, so billing by total never costs the option its deadline (a reviewer's finding)."""
    from planner.engine.estimates import CostEstimate
    from planner.engine.plan import _rental_preference
    from planner.inputs.scenario import Constraints

    def cost(usd: float, hours: float, high: float) -> CostEstimate:
        return CostEstimate(hours=hours, hours_range=(hours, high), gpu_hours=hours, usd=usd, usd_range=(usd, usd),
                            amount_in_currency=usd, currency="USD", amount_range_in_currency=(usd, usd), price=None,
                            n_gpus_billed=8)

    slow_cheap, fast_dear = cost(100.0, 20.0, 30.0), cost(150.0, 5.0, 8.0)
    p90 = Constraints(deadline_hours=24)
    assert min((slow_cheap, fast_dear), key=lambda c: _rental_preference(c, p90)) is fast_dear
    p50 = Constraints(deadline_hours=24, deadline_confidence="p50")
    assert min((slow_cheap, fast_dear), key=lambda c: _rental_preference(c, p50)) is slow_cheap
    assert min((slow_cheap, fast_dear), key=lambda c: _rental_preference(c, Constraints())) is slow_cheap
