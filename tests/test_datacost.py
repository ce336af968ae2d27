"""The data line of a run's cost (issue 18): storage next to the GPUs for the run, and moving the dataset out of
the provider where it lives; each price cited (gpu_profiles/catalog/storage.yaml), a missing one said, never 0."""

from __future__ import annotations

import datetime as dt

import pytest

from planner.engine import datacost
from planner.engine.plan import build_plan
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import parse_scenario
from planner.inputs.storage import EgressPrice, ProviderStorage, StoragePrice, StorageTable, load_storage

TODAY = dt.date(2026, 12, 2)
TABLE = StorageTable(path="storage.yaml", providers={
    "cloud": ProviderStorage(StoragePrice(0.02, "object storage", dt.date(2026, 9, 1), "cloud pricing page"),
                             EgressPrice(0.09, 100.0, "internet egress, first 10 TB", dt.date(2026, 9, 1), "same")),
    "pods": ProviderStorage(StoragePrice(0.07, "network volume", None, "pods docs"), None),
})


def test_storage_for_the_run_and_one_download_per_instance_and_run():
    c = datacost.data_cost(500.0, gpu_provider="pods", data_location="cloud", hours=73.0, instances=2, runs=3,
                           table=TABLE)
    assert c.storage_usd == pytest.approx(500 * 0.07 * 73 / 730)  # 3.50
    assert c.egress_usd == pytest.approx(500 * 2 * 3 * 0.09)       # 270
    assert c.usd == pytest.approx(c.storage_usd + c.egress_usd)
    assert [n.key for n in c.notes] == ["data_storage", "data_egress"]


@pytest.mark.parametrize("location", [None, "local", "pods", "PODS"])
def test_no_transfer_when_the_data_is_already_there_or_yours(location):
    c = datacost.data_cost(500.0, gpu_provider="pods", data_location=location, hours=10.0, instances=1, runs=1,
                           table=TABLE)
    assert c.egress_usd == 0.0 and c.usd == pytest.approx(500 * 0.07 * 10 / 730)


def test_a_missing_price_is_said_not_counted_as_zero():
    c = datacost.data_cost(100.0, gpu_provider="elsewhere", data_location="pods", hours=10.0, instances=1, runs=1,
                           table=TABLE)
    assert c.storage_usd is None and c.egress_usd is None and c.usd == 0.0
    assert [n.key for n in c.notes] == ["data_storage_unpriced", "data_egress_unpriced"]


def test_no_dataset_size_no_data_line():
    c = datacost.data_cost(None, gpu_provider="pods", data_location="cloud", hours=10.0, instances=1, runs=1,
                           table=TABLE)
    assert (c.usd, c.notes) == (0.0, ())


def test_on_prem_gpus_pay_only_the_transfer():
    c = datacost.data_cost(100.0, gpu_provider="on-prem", data_location="cloud", hours=10.0, instances=1, runs=1,
                           table=TABLE)
    assert c.storage_usd == 0.0 and c.egress_usd == pytest.approx(9.0)


def test_the_shipped_table_loads_and_cites_every_price():
    table = load_storage()
    assert len(table.providers) >= 6
    for name, p in table.providers.items():
        for price in (p.storage, p.egress):
            if price is not None:
                assert price.source.strip() and price.product.strip(), name
    assert table.storage("runpod") is not None and table.egress("gcp") is not None
    assert table.egress("aws") is None  # the source gives the free allowance but no readable per-GB rate


@pytest.mark.parametrize(("text", "field"), [
    ("schema: nope\nproviders: {}\n", "schema"),
    ("schema: trainplan.storage/1\nproviders: {x: {storage: {usd_per_gb_month: -1, product: p, source: s}}}\n",
     "providers.x.storage.usd_per_gb_month"),
    ("schema: trainplan.storage/1\nproviders: {x: {storage: {usd_per_gb_month: 0.1, product: p}}}\n",
     "providers.x.storage.source"),
    ("schema: trainplan.storage/1\nproviders: {x: {egress: {usd_per_gb: 0.1, product: p, source: s, as_of: May}}}\n",
     "providers.x.egress.as_of"),
    ("schema: trainplan.storage/1\nproviders: {x: {tape: {}}}\n", "providers.x.tape"),
    ("schema: trainplan.storage/1\nproviders: {x: {egress: {usd_per_gb: 0.1, unit: TB, product: p, source: s}}}\n",
     "providers.x.egress.unit"),
    ("schema: trainplan.storage/1\nproviders: {x: {}, X: {}}\n", "providers.X"),
])
def test_a_bad_table_names_the_field(tmp_path, text, field):
    path = tmp_path / "storage.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_storage(path)
    assert err.value.field == field


def _scenario(**workload) -> dict:
    return {"schema": "trainplan.scenario/1", "name": "data line",
            "model": {"name": "resnet50"},
            "training": {"precisions": ["bf16"], "global_batch": 256},
            "workload": {"dataset_samples": 1281167, "epochs": 1, **workload},
            "hardware": {"gpus": ["rtx4090-24gb"], "gpu_counts": [1]}}


def test_the_data_line_reaches_the_option_cost():
    inputs = load_inputs(include_user_data=False)
    (plain,) = build_plan(parse_scenario(_scenario()), inputs, today=TODAY).options
    (with_data,) = build_plan(parse_scenario(_scenario(dataset_gb=150, data_location="gcp")), inputs,
                              today=TODAY).options
    assert plain.cost.data_usd == 0.0
    provider = with_data.cost.price.provider
    assert provider != "gcp"
    egress = 150 * load_storage().egress("gcp").usd_per_gb
    assert with_data.cost.data_usd >= egress
    assert with_data.cost.usd == pytest.approx(plain.cost.usd + with_data.cost.data_usd)
    assert any(n.key == "data_egress" for n in with_data.notes)


@pytest.mark.parametrize(("workload", "field"), [
    ({"dataset_gb": -1}, "workload.dataset_gb"),
    ({"data_location": "s3://bucket"}, "workload.data_location"),
    ({"data_location": 7}, "workload.data_location"),
    ({"data_location": "gcp"}, "workload.dataset_gb"),  # a location alone adds nothing: said, not ignored
])
def test_bad_data_fields_name_the_field(workload, field):
    with pytest.raises(InputError) as err:
        parse_scenario(_scenario(**workload))
    assert err.value.field == field



def test_a_price_per_gib_is_converted_to_per_gb(tmp_path):
    path = tmp_path / "storage.yaml"
    path.write_text("schema: trainplan.storage/1\nproviders:\n  g:\n"
                    "    egress: {usd_per_gb: 0.12, unit: GiB, product: per GiB, source: s}\n", encoding="utf-8")
    assert load_storage(path).egress("g").usd_per_gb == pytest.approx(0.12 / 1.073741824)


def _on_prem(n: int, **pricing) -> dict:
    s = _scenario(dataset_gb=100, data_location="gcp")
    s["hardware"] = {"gpus": ["rtx4090-24gb"], "gpu_counts": [n], "gpus_per_node": 4}
    s["pricing"] = {"tier": "on_prem", **pricing}
    return s


def test_on_prem_nodes_download_the_data_once_each_and_tax_covers_the_data_line():
    """On-prem prices are per GPU, but the data is downloaded per machine: 8 GPUs in nodes of 4 are 2 copies (a
    reviewer found 8). Tax applies to the data line as to the GPU hours."""
    inputs = load_inputs(include_user_data=False)
    (one,) = build_plan(parse_scenario(_on_prem(1)), inputs, today=TODAY).options
    (eight,) = build_plan(parse_scenario(_on_prem(8)), inputs, today=TODAY).options
    egress = 100 * load_storage().egress("gcp").usd_per_gb
    assert one.cost.data_usd == pytest.approx(egress) and eight.cost.data_usd == pytest.approx(2 * egress)
    (taxed,) = build_plan(parse_scenario(_on_prem(1, tax_rate=0.2)), inputs, today=TODAY).options
    assert taxed.cost.data_usd == pytest.approx(1.2 * egress)
    assert taxed.cost.usd == pytest.approx(1.2 * one.cost.usd)
