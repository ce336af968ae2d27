"""Tests for planner.inputs.price_refresh and `python -m planner prices refresh`: recorded gpuhunt offers only, no network."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import enum
import json
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from planner.cli import _run_prices
from planner.inputs import price_catalog as pc
from planner.inputs import price_refresh as pr
from planner.inputs.folders import load_inputs
from planner.inputs.profiles import PriceQuote
from planner.inputs.userdata import user_profiles_dir
from planner.vocab import PRICE_CHANGE_REPORT_FRACTION

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "gpuhunt" / "offers.json"
DAY1, DAY2 = dt.date(2030, 1, 1), dt.date(2030, 1, 2)  # later than any shipped quote: the refreshed ones are newest


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own $TRAINPLAN_HOME; the developer's own user data is never read or written."""
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def offers(edit=None) -> list[dict]:
    items = json.loads(FIXTURE.read_text(encoding="utf-8"))["offers"]
    return edit(copy.deepcopy(items)) if edit else items


def recorded(edit=None, failed: dict[str, str] | None = None):
    """A fetcher returning the recorded offers of the providers asked for (as gpuhunt_fetch returns them)."""
    items = offers(edit)

    def fetch(providers):
        by: dict[str, list[dict]] = {}
        for o in items:
            if o["provider"] in providers:
                by.setdefault(o["provider"], []).append(o)
        return pr.Fetched(version=pr.GPUHUNT_PIN, offers=by, failed=failed or {})
    return fetch


def failing(exc: BaseException):
    def fetch(providers):
        raise exc
    return fetch


@pytest.fixture(scope="module")
def imported(aliases) -> dict[str, pr.ProviderImport]:
    fetched = recorded()(pr.PROVIDERS)
    return {p: pr.import_offers(p, items, fetched.version, DAY1, aliases) for p, items in fetched.offers.items()}


def _quotes(imported, profile: str, **match) -> list[PriceQuote]:
    found = [q for imp in imported.values() for q in imp.result.quotes.get(profile, [])]
    return [q for q in found if all(getattr(q, k) == v for k, v in match.items())]


def _catalog_bytes(home: Path) -> dict[str, bytes]:
    folder = home / "gpu_profiles" / "catalog"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


# ---------------------------------------------------------------- offers -> quotes

def test_offers_map_through_the_alias_table(imported):
    (p5,) = _quotes(imported, "h100-sxm-80gb", instance="p5.48xlarge", tier="on_demand")
    assert p5.provider == "aws" and p5.region == "us-east-1"
    # gpuhunt calls the 80 GB A100 plain "A100": the instance type (p4de, a2-ultragpu) says which part it is
    assert _quotes(imported, "a100-sxm-80gb", provider="aws", instance="p4de.24xlarge")
    assert _quotes(imported, "a100-sxm-80gb", provider="gcp", instance="a2-ultragpu-8g")
    assert not _quotes(imported, "a100-sxm-40gb")
    (lam,) = _quotes(imported, "h100-sxm-80gb", instance="gpu_8x_h100_sxm5")
    assert lam.provider == "lambda" and lam.billing_increment_s == 60  # gpuhunt's lambdalabs, the table's lambda
    vast = _quotes(imported, "rtx4090-24gb", provider="vast")
    assert vast and all(q.billing_increment_s == 1 for q in vast)


def test_per_gpu_prices_for_1_2_4_8_gpu_instances(imported):
    def one(profile, **match):
        (q,) = _quotes(imported, profile, tier="on_demand", **match)
        return q.gpus_per_instance, q.usd_per_gpu_hour

    assert one("a10g-24gb", instance="g5.xlarge", region="us-east-1") == (1, pytest.approx(1.006))
    assert one("rtx4090-24gb", instance="2x NVIDIA GeForce RTX 4090") == (2, pytest.approx(1.38 / 2))
    assert one("l4-24gb", instance="g6.12xlarge") == (4, pytest.approx(4.6016 / 4))
    assert one("h100-sxm-80gb", instance="p5.48xlarge") == (8, pytest.approx(55.04 / 8))
    assert one("rtx4090-24gb", provider="vast", region="us-texas") == (4, pytest.approx(1.6 / 4))
    # RunPod's 1- and 2-GPU pods share one GPU-type name: the count is part of the instance, both offers stay
    assert {q.instance for q in _quotes(imported, "rtx4090-24gb", provider="runpod", region="EU-RO-1")} == {
        "1x NVIDIA GeForce RTX 4090", "2x NVIDIA GeForce RTX 4090"}


def test_spot_items_are_spot_quotes(imported):
    (spot,) = _quotes(imported, "h100-sxm-80gb", instance="p5.48xlarge", tier="spot")
    assert spot.usd_per_gpu_hour == pytest.approx(27.52 / 8)
    (g5,) = _quotes(imported, "a10g-24gb", instance="g5.xlarge", tier="spot")
    assert g5.usd_per_gpu_hour == pytest.approx(0.4246) and g5.region == "us-east-1"
    (bid,) = _quotes(imported, "rtx4090-24gb", provider="vast", tier="spot")
    assert bid.usd_per_gpu_hour == pytest.approx(0.25)
    assert not _quotes(imported, "rtx4090-24gb", provider="runpod", tier="spot")


def test_regions_are_kept_and_gcp_zones_become_their_region(imported):
    g5 = _quotes(imported, "a10g-24gb", instance="g5.xlarge", tier="on_demand")
    assert {q.region: q.usd_per_gpu_hour for q in g5} == {"us-east-1": pytest.approx(1.006),
                                                           "sa-east-1": pytest.approx(1.676)}
    (gcp,) = _quotes(imported, "a100-sxm-80gb", provider="gcp", tier="on_demand")
    assert gcp.region == "us-central1" and gcp.usd_per_gpu_hour == pytest.approx(40.2 / 8)  # the cheaper zone
    assert gcp.source.endswith("(us-central1-c)")
    # a marketplace: each region keeps its cheapest listing, named in the source
    (cal,) = _quotes(imported, "rtx4090-24gb", provider="vast", region="us-california", tier="on_demand")
    assert cal.usd_per_gpu_hour == pytest.approx(0.35) and cal.instance == "1x RTX4090"
    assert "(listing 20101)" in cal.source


def test_quotes_are_dated_the_day_they_were_fetched(imported):
    quotes = [q for imp in imported.values() for qs in imp.result.quotes.values() for q in qs]
    assert quotes and all(q.as_of == DAY1 and q.retrieved == DAY1 for q in quotes)
    (p5,) = _quotes(imported, "h100-sxm-80gb", instance="p5.48xlarge", tier="on_demand")
    assert p5.source == "gpuhunt 0.1.34 (aws catalog) fetched 2030-01-01 row p5.48xlarge us-east-1"


def test_broken_unmapped_and_non_rental_offers_are_counted_not_crashing(imported):
    aws = imported["aws"].result
    assert aws.unmapped[pc.BAD_ROW] == 2  # a negative price; an item with no instance_name
    bad = "\n".join(aws.examples[pc.BAD_ROW])
    assert "gpuhunt:aws line 8: Price: got '-0.8048'" in bad and "instance_name: got None" in bad
    assert aws.rows_read == 10 and aws.gpu_rows == 9  # the CPU-only instance is read, not a GPU row
    assert imported["lambdalabs"].result.unmapped[pc.NO_PRICE] == 1  # gpu_1x_a10 with no price
    vast = imported["vastai"].result
    assert vast.unmapped[pc.NO_RULE] == 1 and "RTX5090" in vast.examples[pc.NO_RULE][0]
    assert vast.unmapped[pc.EXCLUDED] == 1 and "A100" in vast.examples[pc.EXCLUDED][0]
    assert imported["gcp"].not_offers == {pr.NOT_OFFERS["gcp-dws-calendar-mode"]: 1}  # and its TPU: no GPU row
    assert imported["gcp"].result.gpu_rows == 3
    assert imported["runpod"].not_offers == {pr.NOT_OFFERS["runpod-cluster"]: 1}
    for imp in imported.values():
        r = imp.result
        assert r.mapped + sum(r.unmapped.values()) == r.gpu_rows


# ---------------------------------------------------------------- what changed

def _q(price, provider="aws", instance="p5.48xlarge", region="us-east-1", tier="on_demand", day=DAY1,
       source=None) -> PriceQuote:
    return PriceQuote(provider, instance, 8, price, tier, 1, region, day,
                      source or f"gpuhunt 0.1.34 ({provider} catalog) fetched {day}", retrieved=day)


def test_only_moves_above_the_threshold_are_changes():
    assert PRICE_CHANGE_REPORT_FRACTION == 0.10
    before = {"h100-sxm-80gb": [_q(10.0), _q(10.0, region="us-west-2"), _q(10.0, region="eu-west-1"),
                                _q(10.0, tier="spot")]}
    after = {"h100-sxm-80gb": [_q(10.5, day=DAY2), _q(11.0, region="us-west-2", day=DAY2),
                               _q(11.2, region="eu-west-1", day=DAY2), _q(8.0, tier="spot", day=DAY2)]}
    diff = pr.compare_quotes(before, after, ["aws"])
    # 5% and exactly 10% are not reported; +12% and -20% are, the largest move first
    assert [(c.region, c.tier, round(c.change or 0, 3)) for c in diff.changed] == [
        ("us-east-1", "spot", -0.2), ("eu-west-1", "on_demand", 0.12)]
    assert diff.unchanged == 2 and diff.added == () and diff.removed == ()


def test_added_and_removed_offers():
    hand = _q(9.0, instance="p4d.24xlarge", day=dt.date(2026, 11, 9), source="datareceipts (hand-collected)")
    older = _q(4.0, instance="g6.12xlarge", day=dt.date(2029, 12, 1))   # gone since an earlier refresh
    before = {"h100-sxm-80gb": [_q(10.0), hand, _q(3.0, provider="gcp", instance="a3-highgpu-8g")],
              "l4-24gb": [_q(1.0, instance="g6.xlarge"), older]}
    after = {"h100-sxm-80gb": [_q(10.0, day=DAY2), _q(10.0, region="sa-east-1", day=DAY2)]}
    diff = pr.compare_quotes(before, after, ["aws"])
    assert [(c.profile, c.region, c.old_usd_per_gpu_hour, c.new_usd_per_gpu_hour) for c in diff.added] == [
        ("h100-sxm-80gb", "sa-east-1", None, 10.0)]
    # removed: the last aws refresh's g6.xlarge; not the hand-collected p4d, not gcp (not refreshed now), not the
    # offer already gone before the last refresh
    assert [(c.profile, c.instance, c.old_usd_per_gpu_hour, c.new_usd_per_gpu_hour) for c in diff.removed] == [
        ("l4-24gb", "g6.xlarge", 1.0, None)]
    assert diff.unchanged == 1


# ---------------------------------------------------------------- the refresh: store, reload, re-run

def _day2(items: list[dict]) -> list[dict]:
    items = [o for o in items if o["instance_name"] != "p4de.24xlarge"]               # removed
    for o in items:
        if o["instance_name"] == "p5.48xlarge" and not o["spot"]:
            o["price"] = round(o["price"] * 1.2, 4)                                     # +20%: reported
        if o["instance_name"] == "g5.xlarge" and o["location"] == "us-east-1" and not o["spot"]:
            o["price"] = round(o["price"] * 1.05, 4)                                    # +5%: not reported
    added = {**items[0], "instance_name": "g6e.xlarge", "location": "sa-east-1", "price": 2.7, "gpu_count": 1,
             "gpu_name": "L40S", "gpu_memory": 48.0, "spot": False}
    return [*items, added]


def test_refresh_stores_dated_snapshots_that_plans_load(home):
    outcome = pr.refresh(fetcher=recorded(), today=DAY1)
    folder = user_profiles_dir() / pc.CATALOG_DIRNAME
    assert folder == home / "gpu_profiles" / "catalog"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"gpuhunt-2030-01-01-{p}.yaml" for p in ("aws", "gcp", "lambdalabs", "runpod", "vastai"))
    assert outcome.failed == {p: "no offers (its catalog is empty or was not downloaded)"
                              for p in ("azure", "nebius", "oci", "verda", "cloudrift")}
    inputs = load_inputs()
    assert not inputs.profile_problems
    p5 = [q for q in inputs.profiles["h100-sxm-80gb"].prices if q.instance == "p5.48xlarge" and q.as_of == DAY1]
    assert {(q.tier, q.usd_per_gpu_hour) for q in p5} == {("on_demand", 6.88), ("spot", 3.44)}
    assert all(q.source.startswith("gpuhunt 0.1.34 (aws catalog)") for q in p5)
    vast = [q for q in inputs.profiles["rtx4090-24gb"].prices if q.provider == "vast" and q.as_of == DAY1]
    assert len(vast) == 3


def test_a_second_refresh_reports_what_changed_and_keeps_history(home):
    pr.refresh(fetcher=recorded(), today=DAY1)
    day1 = _catalog_bytes(home)
    outcome = pr.refresh(fetcher=recorded(_day2), today=DAY2)
    diff = outcome.diff
    assert [(c.instance, c.region, c.tier) for c in diff.changed] == [("p5.48xlarge", "us-east-1", "on_demand")]
    assert diff.changed[0].change == pytest.approx(0.2)
    assert [(c.profile, c.instance, c.region) for c in diff.added] == [("l40s-48gb", "g6e.xlarge", "sa-east-1")]
    assert [(c.profile, c.instance) for c in diff.removed] == [("a100-sxm-80gb", "p4de.24xlarge")]
    after = _catalog_bytes(home)
    assert {k: after[k] for k in day1} == day1 and len(after) == 2 * len(day1)  # day 1 stays as history
    text = "\n".join(pr.outcome_lines(outcome))
    assert "1 added, 1 removed, 1 changed by more than 10%" in text
    assert "p5.48xlarge us-east-1 on_demand (8 GPU)  $6.8800 -> $8.2560/GPU-h (+20.0%)" in text
    # the same day again replaces that day's files: nothing changed since
    again = pr.refresh(fetcher=recorded(_day2), today=DAY2)
    assert _catalog_bytes(home) == after
    assert (again.diff.added, again.diff.removed, again.diff.changed) == ((), (), ())


def test_a_provider_that_fails_is_reported_and_the_others_are_stored(home):
    outcome = pr.refresh(providers=("aws", "vastai"), fetcher=recorded(failed={"vastai": "ConnectionError: x"}),
                         today=DAY1)
    assert outcome.failed == {"vastai": "ConnectionError: x"}
    assert list(_catalog_bytes(home)) == ["gpuhunt-2030-01-01-aws.yaml"]


# ---------------------------------------------------------------- offline, timed out, not installed

def test_offline_leaves_the_catalog_folder_unchanged(home, capsys):
    pr.refresh(fetcher=recorded(), today=DAY1)
    before = _catalog_bytes(home)
    assert before
    for exc in (OSError(101, "Network is unreachable"), TimeoutError("timed out")):
        with pytest.raises(pr.RefreshError) as err:
            pr.refresh(fetcher=failing(exc), today=DAY2)
        assert err.value.kind == pr.FETCH_FAILED and "check the internet connection" in str(err.value)
        assert _catalog_bytes(home) == before
    assert _run_prices(["refresh"], fetcher=failing(OSError(101, "Network is unreachable"))) == 2
    out = capsys.readouterr()
    assert out.err.startswith("error: could not fetch prices through gpuhunt (OSError: [Errno 101] Network is "
                              "unreachable)") and "nothing was written" in out.err and out.out == ""
    assert _catalog_bytes(home) == before


def test_a_fetch_past_the_timeout_is_abandoned(home):
    release = threading.Event()

    def hangs(providers):
        release.wait(10)
        return recorded()(providers)

    try:
        with pytest.raises(pr.RefreshError) as err:
            pr.refresh(fetcher=hangs, timeout_s=0.2, today=DAY1)
    finally:
        release.set()
    assert err.value.kind == pr.TIMEOUT and "within 0.2 s" in str(err.value)
    assert _catalog_bytes(home) == {}


def test_no_offers_at_all_writes_nothing(home):
    with pytest.raises(pr.RefreshError) as err:
        pr.refresh(providers=("aws",), fetcher=recorded(lambda items: []), today=DAY1)
    assert err.value.kind == pr.NO_OFFERS and "aws: no offers" in str(err.value)
    assert _catalog_bytes(home) == {}


def test_gpuhunt_not_installed_is_one_clear_message(home, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gpuhunt", None)  # `import gpuhunt` now fails, installed or not
    assert _run_prices(["refresh", "--timeout", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: gpuhunt is not installed: pip install gpuhunt==0.1.34")
    assert "requirements-prices.txt" in err and "Traceback" not in err
    assert not home.exists()
    assert "gpuhunt==0.1.34" in (ROOT / "requirements-prices.txt").read_text(encoding="utf-8").split()
    for name in ("requirements.txt", "requirements-dev.txt"):
        path = ROOT / name
        assert not path.exists() or "gpuhunt" not in path.read_text(encoding="utf-8")


def test_the_planner_does_not_import_gpuhunt():
    code = ("import sys, planner, planner.cli, planner.inputs.price_refresh, planner.inputs.folders; "
            "planner.cli.build_prices_parser(); print(sorted(m for m in sys.modules if m.startswith('gpuhunt')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- gpuhunt's own API, faked at the module boundary

class _Vendor(str, enum.Enum):  # noqa: UP042 - as gpuhunt declares AcceleratorVendor
    NVIDIA = "nvidia"


@dataclasses.dataclass
class _Item:  # gpuhunt's CatalogItem fields (gpuhunt/_internal/models.py, 0.1.34)
    provider: str
    instance_name: str
    location: str
    price: float
    cpu: int
    memory: float
    gpu_count: int
    gpu_name: str | None
    gpu_memory: float | None
    spot: bool
    disk_size: float | None
    gpu_vendor: _Vendor | None = None
    flags: list = dataclasses.field(default_factory=list)
    provider_data: dict = dataclasses.field(default_factory=dict)


def _fake_gpuhunt(monkeypatch, load_error: Exception | None = None, query_errors: dict | None = None) -> list:
    calls: list = []

    class Catalog:
        def __init__(self, balance_resources=True, auto_reload=True):
            calls.append(("init", balance_resources, auto_reload))

        def load(self, version=None):
            calls.append(("load",))
            if load_error:
                raise load_error

        def query(self, *, provider=None, min_gpu_count=None, **kw):
            calls.append(("query", provider, min_gpu_count))
            if provider in (query_errors or {}):
                raise query_errors[provider]
            return [_Item(provider, "p5.48xlarge", "us-east-1", 55.04, 192, 2048.0, 8, "H100", 80.0, False, None,
                          _Vendor.NVIDIA)]

    module = types.ModuleType("gpuhunt")
    module.Catalog = Catalog  # type: ignore[attr-defined]
    module.__version__ = "0.1.34"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpuhunt", module)
    return calls


def test_gpuhunt_fetch_queries_each_provider_and_reports_the_one_that_fails(monkeypatch):
    calls = _fake_gpuhunt(monkeypatch, query_errors={"gcp": ValueError("Unknown provider: gcp")})
    fetched = pr.gpuhunt_fetch(["aws", "gcp"])
    assert calls == [("init", False, False), ("load",), ("query", "aws", 1), ("query", "gcp", 1)]
    (item,) = fetched.offers["aws"]
    assert item["gpu_vendor"] == "nvidia" and item["instance_name"] == "p5.48xlarge" and item["spot"] is False
    assert fetched.failed == {"gcp": "ValueError: Unknown provider: gcp"}


def test_gpuhunt_failing_to_download_any_catalog_is_offline(monkeypatch, home):
    _fake_gpuhunt(monkeypatch, load_error=RuntimeError("Failed to load catalogs of all providers"))
    with pytest.raises(pr.RefreshError) as err:
        pr.refresh(providers=("aws",), today=DAY1)  # the default fetcher: gpuhunt_fetch
    assert err.value.kind == pr.FETCH_FAILED and "Failed to load catalogs of all providers" in str(err.value)
    assert _catalog_bytes(home) == {}


# ---------------------------------------------------------------- the command

def test_refresh_dry_run_prints_the_diff_and_writes_nothing(home, capsys):
    assert _run_prices(["refresh", "--dry-run", "--providers", "aws,gcp", "--show", "2"], fetcher=recorded()) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"gpuhunt 0.1.34: offers of 2 provider(s) fetched {dt.date.today()}")
    assert "quotes (dry run, not written): 9 for 4 GPU profiles" in out and "dry run: nothing written" in out
    assert "would write " + str(home / "gpu_profiles" / "catalog" / f"gpuhunt-{dt.date.today()}-aws.yaml") in out
    assert "what changed since the prices the planner had:" in out and "unreadable row" in out
    assert "lambda" not in out.split("what changed")[0]  # only the providers asked for
    assert _catalog_bytes(home) == {}


def test_refresh_arguments_are_checked(capsys):
    assert _run_prices(["refresh", "--providers", "aws,nosuch"], fetcher=recorded()) == 2
    assert "--providers: got 'nosuch'; expected gpuhunt provider names from aws, azure" in capsys.readouterr().err
    assert _run_prices(["refresh", "--timeout", "0"], fetcher=recorded()) == 2
    assert "--timeout" in capsys.readouterr().err


def test_prices_help_describes_refresh(capsys):
    with pytest.raises(SystemExit) as done:
        _run_prices(["--help"])
    assert done.value.code == 0
    assert "refresh" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        _run_prices(["refresh", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "gpuhunt" in text and "--dry-run" in text and "--timeout" in text and "--providers" in text
    assert "more than 10%" in text and "nothing is written" in text


# ---------------------------------------------------------------- the app's button

def _gpus_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "ui" / "gpus_page.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _click_refresh(at):
    at.button(key="gpus_refresh").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_refresh_button_saves_the_prices_and_shows_what_changed(home, monkeypatch):
    monkeypatch.setattr(pr, "gpuhunt_fetch", recorded())
    at = _gpus_page()
    assert any("Needs an internet connection and the optional gpuhunt package" in c.value for c in at.caption)
    assert not at.success and not _catalog_bytes(home)
    _click_refresh(at)
    today = dt.date.today()
    assert sorted(_catalog_bytes(home)) == sorted(f"gpuhunt-{today}-{p}.yaml"
                                                  for p in ("aws", "gcp", "lambdalabs", "runpod", "vastai"))
    (done,) = at.success
    assert done.value.startswith("Saved 16 quotes for 5 GPUs from aws, gcp, lambdalabs, runpod, vastai")
    assert any(w.value.startswith("No new prices from: azure: no offers") for w in at.warning)
    counts = "\n".join(m.value for m in at.markdown)
    assert "What changed since the prices the planner had:" in counts
    tables = [d.value for d in at.dataframe]
    added = [t for t in tables if "Now, USD per GPU-hour" in t.columns and "Before, USD per GPU-hour" not in t.columns]
    assert len(added) == 1 and "sa-east-1" in set(added[0]["Region"])
    # the page reloaded its inputs: a GPU's own quote list shows the refreshed prices
    at.selectbox(key="price_gpu").set_value("a100-sxm-80gb")
    at.run()
    quotes = [t for t in at.dataframe if "Where the price comes from" in t.value.columns]
    assert len(quotes) == 1
    assert any(s.startswith(f"gpuhunt 0.1.34 (gcp catalog) fetched {today}") for s in quotes[0].value[
        "Where the price comes from"])


def test_the_refresh_button_offline_warns_and_changes_nothing(home, monkeypatch):
    monkeypatch.setattr(pr, "gpuhunt_fetch", failing(OSError(101, "Network is unreachable")))
    at = _click_refresh(_gpus_page())
    (warning,) = [w.value for w in at.warning if "Prices not refreshed" in w.value]
    assert "could not be fetched" in warning and "Network is unreachable" in warning
    assert "current prices stay" in warning
    assert not at.success and _catalog_bytes(home) == {}


def test_the_refresh_button_without_gpuhunt_says_how_to_install_it(home, monkeypatch):
    monkeypatch.setitem(sys.modules, "gpuhunt", None)
    at = _click_refresh(_gpus_page())
    (warning,) = [w.value for w in at.warning if "Prices not refreshed" in w.value]
    assert "gpuhunt is not installed" in warning and "pip install gpuhunt==0.1.34" in warning
    assert _catalog_bytes(home) == {}
