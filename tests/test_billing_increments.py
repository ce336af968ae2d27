"""Billing increments per provider and instance family, each cited (issue 35 c): a provider whose own page states
per-second billing is not billed hourly. 7B on 8 x H200 at Nebius was billed 8 GPU-hours ($28.00) for a 0.1 h run."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from planner.engine.plan import build_plan
from planner.inputs import price_catalog as pc
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.profiles import load_profiles
from planner.inputs.scenario import load_scenario_file

ROOT = Path(__file__).resolve().parents[1]
TODAY = dt.date(2026, 12, 8)
HEADER = ("schema: trainplan.catalog-aliases/1\nrules:\n  - {provider: cloud, instance: \"*\", accelerator: X, "
          "profile: null, why: none}\n")


def _aliases(tmp_path: Path, body: str) -> pc.AliasTable:
    path = tmp_path / "aliases.yaml"
    path.write_text(HEADER + body, encoding="utf-8")
    return pc.load_aliases(path)


def test_a_family_rule_wins_over_the_provider_default_and_the_first_match_wins(tmp_path):
    table = _aliases(tmp_path, """billing_increment_s: {cloud: 3600}
billing_increments:
  - {provider: cloud, instance: "VM.*", seconds: 1, as_of: 2026-12-08, source: "vm page"}
  - {provider: cloud, instance: "VM.GPU.*", seconds: 60, as_of: 2026-12-08, source: "never reached"}
  - {provider: cloud, instance: "BM.*", seconds: 60, as_of: 2026-12-08, source: "bm page"}
""")
    assert table.increment_s("cloud", "vm.gpu.a10.1") == 1  # case-insensitive, first rule
    assert table.increment_s("cloud", "BM.GPU.A10.4") == 60
    assert table.increment_s("cloud", "other-shape") == 3600  # the uncited provider default
    assert table.increment_s("elsewhere", "VM.x") == 3600  # nothing known: hourly


@pytest.mark.parametrize(("rule", "field"), [
    ('{provider: c, seconds: 1, source: s}', "billing_increments[0].as_of"),
    ('{provider: c, seconds: 1, as_of: 2026-12-08}', "billing_increments[0].source"),
    ('{provider: c, seconds: 0, as_of: 2026-12-08, source: s}', "billing_increments[0].seconds"),
    ('{provider: c, seconds: 1, as_of: 2026-12-08, source: s, minimum: 60}', "billing_increments[0]"),
])
def test_an_uncited_undated_or_unknown_rule_is_refused_naming_the_field(tmp_path, rule, field):
    with pytest.raises(InputError) as err:
        _aliases(tmp_path, f"billing_increments:\n  - {rule}\n")
    assert field in str(err.value)


def test_every_shipped_rule_quotes_its_page_and_the_catalog_follows_it():
    table = pc.load_aliases(pc.ALIASES_PATH)
    assert {b.provider for b in table.increments} >= {"nebius", "aws"}
    for b in table.increments:
        assert b.source.startswith("https://") and "'" in b.source, b  # a URL and the sentence, quoted
    snapshot = pc.load_snapshot(ROOT / "gpu_profiles" / "catalog" / "skypilot.yaml")
    quotes = [q for qs in snapshot.quotes.values() for q in qs]
    nebius = [q for q in quotes if q.provider == "nebius"]
    assert nebius and all(q.billing_increment_s == 1 for q in nebius)
    assert all(q.billing_increment_s == table.increment_s(q.provider, q.instance) for q in quotes)
    profiles, _ = load_profiles()
    hand = [q for p in profiles.values() for q in p.prices if q.provider == "nebius" and not q.from_catalog]
    assert hand and all(q.billing_increment_s == 1 for q in hand)  # the hand-collected Nebius rows agree


def test_the_7b_on_8_h200_at_nebius_is_billed_by_the_second():
    inputs = load_inputs(include_user_data=False)
    scenario = load_scenario_file(ROOT / "scenarios" / "llama7b-full-finetune.yaml", known_gpu_ids=inputs.profiles)
    plan = build_plan(scenario, inputs, today=TODAY)
    o = plan.option("h200-sxm-141gb-x8-bf16")
    assert o is not None and o.cost is not None and o.cost.price.provider == "nebius"
    c = o.cost
    assert c.price.billing_increment_s == 1
    assert c.hours < 0.5  # a short run: hourly billing would have made it 8 GPU-hours
    assert 8 * c.hours <= c.gpu_hours <= 8 * (c.hours + 2 / 3600)  # rounded up to the second, not the hour
    assert not any(n.key == "billed_increments" for n in c.notes)
