"""AppTest of the Compare, Benchmarks and GPUs & prices pages: each widget by key -> the output it must change."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.engine.cost import choose_quote
from planner.engine.plan import build_plan
from planner.engine.recommend import costed
from planner.inputs.folders import load_inputs
from planner.inputs.resultfile import read_result_file
from planner.inputs.scenario import load_scenario_file, scenario_to_dict
from planner.inputs.userdata import DEFAULT_SCENARIO, SHIPPED_PROFILES_DIR
from planner.present import fmt
from tests.fixtures.make_fixtures import measurement, resnet50_h100, result
from ui import bench_runner

ROOT = Path(__file__).resolve().parent.parent
FULL_APP = ROOT / "app.py"  # the real app, with every page in its navigation
CURRENT = "__current__"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Every test gets its own $TRAINPLAN_HOME; the developer's own user data is never read."""
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(bench_runner.PYTHON_ENV, raising=False)
    return tmp_path / "home"


def page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "ui" / f"{name}_page.py"), default_timeout=120)
    return run(at)


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# Tables by a column (or row) only they have: AppTest does not expose a dataframe's key.
TABLES = {"cmp_summary": "Fits in GPU memory", "cmp_frontier": "Recommended", "cmp_scaling_table": "Speed-up (×)",
          "bench_measurements": "Status", "bench_gpus": "Compute capability",
          "gpus_table": "bf16 peak (TFLOPS)", "price_effect": "Price source (id)",
          "pub_table": "Value (in the published unit)"}


def frame(at: AppTest, key: str):
    marker = TABLES[key]
    found = [d.value for d in at.dataframe if marker in d.value.columns or marker in d.value.index]
    assert len(found) == 1, (key, len(found))
    return found[0]


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    parts += [i.value for i in at.info] + [s.value for s in at.success] + [c.value for c in at.caption]
    return "\n".join(parts).replace("\\", "")


def charts(at: AppTest) -> list[tuple[dict, list[dict]]]:
    """(Vega-Lite spec, data rows) of each chart; Streamlit ships a chart's data beside the spec, as Arrow."""
    import pyarrow as pa

    out = []
    for c in at.get("vega_lite_chart"):
        raw = c.proto.data.data
        rows = pa.ipc.open_stream(raw).read_all().to_pylist() if raw else []
        out.append((json.loads(c.proto.spec), rows))
    return out


def chart(at: AppTest, title: str) -> list[dict]:
    """The data rows of the chart with this title."""
    found = [rows for spec, rows in charts(at) if spec.get("title") == title]
    assert len(found) == 1, (title, [spec.get("title") for spec, _ in charts(at)])
    return found[0]


def tree_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


# ================================================================ Compare

def test_compare_save_and_compare_round_trip(home):
    at = page("compare")
    assert "default example" in texts(at)
    at.text_input(key="cmp_save_name").set_value("Round trip")
    at.button(key="cmp_save").click()
    run(at)
    path = home / "scenarios" / "round-trip.yaml"
    assert path.exists() and str(path) in texts(at)
    assert at.multiselect(key="cmp_pick").value == [CURRENT, str(path)]
    assert load_scenario_file(path) == dataclasses.replace(load_scenario_file(DEFAULT_SCENARIO), name="Round trip")
    summary = frame(at, "cmp_summary")
    assert list(summary.columns) == ["Current scenario (unsaved)", "Round trip"]
    # the same scenario saved and reloaded plans to the same numbers, side by side
    assert (summary.iloc[:, 0] == summary.iloc[:, 1]).all()
    plan = build_plan(load_scenario_file(DEFAULT_SCENARIO), load_inputs())
    primary = plan.option(plan.recommendation.primary)
    assert summary.loc["Cost (USD)", "Round trip"] == fmt.money(primary.cost.usd, "USD", "en")
    assert summary.loc["Time to train", "Round trip"] == fmt.hours(primary.cost.hours, "en")
    assert summary.loc["GPU-hours", "Round trip"] == fmt.number(primary.cost.gpu_hours, "en", 1)
    assert summary.loc["Fits in GPU memory", "Round trip"].startswith("Yes")

    # a fresh session lists the saved scenario and compares it by default
    again = page("compare")
    assert str(path) in again.multiselect(key="cmp_pick").value


def test_compare_takes_the_plan_pages_scenario_and_pareto_points_are_the_non_dominated_options(home):
    at = run(AppTest.from_file(str(FULL_APP), default_timeout=120))
    at.checkbox(key="gpus_all").uncheck()
    run(at)
    at.multiselect(key="gpus").set_value(["h100-sxm-80gb", "l4-24gb", "a100-sxm-80gb"])
    at.multiselect(key="precisions").set_value(["bf16", "fp32"])
    run(at)
    at.switch_page("ui/compare_page.py")
    run(at)
    assert "as set on the Plan page" in texts(at)
    at.text_input(key="cmp_save_name").set_value("Three GPUs")
    at.button(key="cmp_save").click()
    run(at)
    saved = load_scenario_file(home / "scenarios" / "three-gpus.yaml")
    assert saved.hardware.gpus == ("h100-sxm-80gb", "l4-24gb", "a100-sxm-80gb")

    # compare it with the shipped default (saved as a second scenario)
    from planner.present.compare import save_scenario

    other = save_scenario(load_scenario_file(DEFAULT_SCENARIO), "Everything")
    run(at)
    at.multiselect(key="cmp_pick").set_value([str(home / "scenarios" / "three-gpus.yaml"), str(other)])
    run(at)
    inputs = load_inputs()
    plans = {"Three GPUs": build_plan(saved, inputs), "Everything": build_plan(load_scenario_file(other), inputs)}
    pool = [(label, o) for label, p in plans.items() for o in costed(p.options)]
    # one frontier per scenario (issue 19): an option is on it when no option of the same scenario beats it
    non_dominated = {(label, o.id) for label, o in pool if not any(
        x.cost.hours <= o.cost.hours and x.cost.usd <= o.cost.usd and (x.cost.hours < o.cost.hours or
                                                                        x.cost.usd < o.cost.usd)
        for other, x in pool if other == label)}
    shown = frame(at, "cmp_frontier")
    assert set(zip(shown["Scenario"], shown["Option id"], strict=True)) == non_dominated
    for label in plans:
        hours = list(shown[shown["Scenario"] == label]["Hours (h)"])
        assert hours == sorted(hours), label
    points = next(rows for spec, rows in charts(at) if "layer" in spec)
    assert len(points) == len(pool)
    assert {(v["scenario"], v["option_id"]) for v in points if v["frontier"] == "Pareto frontier"} == non_dominated


def test_compare_scaling_follows_the_gpu_and_precision_picked(home):
    at = page("compare")
    plan = build_plan(load_scenario_file(DEFAULT_SCENARIO), load_inputs())
    primary = plan.option(plan.recommendation.primary)
    assert (at.selectbox(key="cmp_gpu").value, at.selectbox(key="cmp_precision").value) == (
        primary.gpu_id, primary.precision)
    for gpu, precision in (("h100-sxm-80gb", "bf16"), ("h100-sxm-80gb", "fp32"), ("l4-24gb", "fp16")):
        at.selectbox(key="cmp_gpu").set_value(gpu)
        at.selectbox(key="cmp_precision").set_value(precision)
        run(at)
        table = frame(at, "cmp_scaling_table")
        expected = sorted((o for o in plan.options if o.gpu_id == gpu and o.precision == precision),
                          key=lambda o: o.n_gpus)
        assert list(table["GPUs"]) == [o.n_gpus for o in expected]
        assert list(table["Hours (h)"]) == [round(o.cost.hours, 2) for o in expected]
        one, eight = expected[0].cost, expected[-1].cost
        assert table["Speed-up (×)"].iloc[-1] == round(one.hours / eight.hours, 2)
        assert table["Scaling efficiency (%)"].iloc[-1] == round(100 * one.hours / eight.hours / 8, 1)
        name = expected[-1].gpu_name
        assert f"8 × {name} is" in texts(at)
        # faster or slower, said the way it is: never "0.013× faster"
        word = "slower" if eight.hours > one.hours else "faster"
        assert f"8 × {name} is" in texts(at) and f"× {word} than 1 for" in texts(at)
    # separate RTX 4090 rentals over a slow network: eight are slower than one, and the sentence says so
    at.selectbox(key="cmp_gpu").set_value("rtx4090-24gb")
    at.selectbox(key="cmp_precision").set_value("bf16")
    run(at)
    four = sorted((o for o in plan.options if o.gpu_id == "rtx4090-24gb" and o.precision == "bf16"),
                  key=lambda o: o.n_gpus)
    assert four[-1].cost.hours > four[0].cost.hours  # the default scenario's 8 separate pods
    from planner.present import fmt

    ratio = fmt.sig(four[-1].cost.hours / four[0].cost.hours, "en", 2)
    assert f"is {ratio}× slower than 1 for" in texts(at).replace("\\", ""), texts(at)


def test_compare_delete_and_a_bad_saved_file(home):
    from planner.present.compare import save_scenario

    keep = save_scenario(load_scenario_file(DEFAULT_SCENARIO), "Keep")
    gone = save_scenario(load_scenario_file(DEFAULT_SCENARIO), "Gone")
    (home / "scenarios" / "broken.yaml").write_text("schema: trainplan.scenario/1\nmodel: {}\n")
    at = page("compare")
    assert "broken.yaml" in "\n".join(w.value for w in at.warning)
    assert set(at.multiselect(key="cmp_pick").options) >= {"Keep", "Gone"}
    at.selectbox(key="cmp_delete_pick").set_value(str(gone))
    run(at)
    at.button(key="cmp_delete").click()
    run(at)
    assert not gone.exists() and keep.exists()
    assert str(gone) not in at.multiselect(key="cmp_pick").value
    assert "Gone" not in at.multiselect(key="cmp_pick").options


# ================================================================ Benchmarks

def _put(home: Path, data: dict, device_dir: str, name: str) -> Path:
    path = home / "results" / device_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _mlp_cpu() -> dict:
    ms = [measurement("fp32", b, 0.01 * b, None) for b in (8, 16)]
    for m in ms:
        m["unmeasured"] = {"peak_allocated_bytes": "CPU: torch keeps allocator peak statistics for CUDA only"}
    data = result("mlp", None, ms, created="2026-11-25T09:00:00Z", device="cpu")
    data["environment"]["cpu"] = "Test CPU"
    return data


def test_benchmarks_browse_filters_and_shows_one_file(home):
    h100 = _put(home, resnet50_h100(), "h100-sxm-80gb", "resnet50-20261120T100000Z.json")
    cpu = _put(home, _mlp_cpu(), "cpu", "mlp-20261125T090000Z.json")
    (home / "results" / "cpu" / "broken.json").write_text("{\"schema\": \"trainplan.bench/1\"")
    at = page("benchmarks")  # the shipped results/ are listed too; these tests pick their own files
    assert "broken.json" in "\n".join(w.value for w in at.warning)
    labels = at.selectbox(key="bench_file").options
    assert "mlp · CPU: Test CPU · 2026-11-25 09:00 UTC · yours" in labels
    assert "resnet50 · h100-sxm-80gb · 2026-11-20 10:00 UTC · yours" in labels

    at.selectbox(key="bench_file").set_value(str(cpu))
    run(at)
    assert len(frame(at, "bench_measurements")) == 2
    assert "No peak memory measured: CPU: torch keeps allocator peak statistics" in texts(at)
    at.selectbox(key="bench_file").set_value(str(h100))
    run(at)
    table = frame(at, "bench_measurements")
    assert len(table) == 12
    assert "**resnet50** on **h100-sxm-80gb**, measured 2026-11-20 10:00 UTC" in "\n".join(
        m.value for m in at.markdown).replace("\\", "")
    assert set(table["Precision"]) == {"fp32", "tf32", "fp16", "bf16"}
    first = read_result_file(h100).measurements[0]
    row = table.iloc[0]
    assert row["Time per step (ms, median)"] == pytest.approx(first.step_time_s.median * 1000)
    assert row["Peak memory (GiB)"] == pytest.approx(first.peak_allocated_bytes / 2**30)
    throughput = chart(at, "Throughput (samples/s)")
    assert sorted(r["samples_per_s"] for r in throughput) == sorted(table["Samples per second"])
    peak = chart(at, "Peak memory (GiB)")
    assert {r["precision"] for r in peak} == {"fp32", "tf32", "fp16", "bf16"} and len(peak) == 12
    assert len(chart(at, "Where a step's time goes")) == 12 * 3

    at.selectbox(key="bench_model").set_value("resnet50")
    run(at)
    assert all(label.startswith("resnet50 · ") for label in at.selectbox(key="bench_file").options)
    at.selectbox(key="bench_model").set_value("__all__")
    at.selectbox(key="bench_gpu").set_value("cpu")
    run(at)
    assert all(" · CPU: " in label for label in at.selectbox(key="bench_file").options)
    assert at.selectbox(key="bench_file").value == str(cpu)
    assert len(frame(at, "bench_measurements")) == 2


def test_benchmarks_show_benchs_reasons_in_spanish_and_a_teammates_words_as_written(home):
    from tests.test_spanish_everywhere import en_numbers, english_in, missing_shown_as_words, page_texts

    data = _mlp_cpu()
    data["measurements"][1]["unmeasured"]["power_w"] = "sensor unplugged on the shared box"
    data["dataloader"] = [{"num_workers": 0, "pin_memory": False, "samples_per_s": 1234.56, "per_sample_cpu_s": 0.0081},
                          {"num_workers": 4, "pin_memory": True, "samples_per_s": None, "per_sample_cpu_s": None,
                           "reason": "pin_memory only matters for copies to a CUDA device"}]
    cpu = _put(home, data, "cpu", "mlp-20261125T090000Z.json")
    at = AppTest.from_file(str(ROOT / "ui" / "benchmarks_page.py"), default_timeout=120)
    at.session_state["_locale"] = "es-AR"
    run(at)
    at.selectbox(key="bench_file").set_value(str(cpu))
    run(at)
    cpu_memory = "CPU: torch lleva estadísticas de memoria pico del asignador solo para CUDA"
    assert f"No se midió la memoria pico: {cpu_memory}" in texts(at)
    unmeasured = next(d.value for d in at.dataframe if "Campo" in d.value.columns)
    reasons = dict(zip(unmeasured["Campo"], unmeasured["Motivo"], strict=True))
    assert reasons["peak_allocated_bytes"] == cpu_memory
    assert reasons["power_w"] == "sensor unplugged on the shared box"  # not bench's sentence: as the file has it
    loader = next(d.value for d in at.dataframe if "Procesos de carga (num_workers)" in d.value.columns)
    assert list(loader["Motivo"]) == ["", "pin_memory solo importa en las copias a un dispositivo CUDA"]
    texts_shown, tables = page_texts(at)
    assert "1.234,6" in texts_shown  # the loader's throughput in es-AR, not the browser's 1234.56
    assert not english_in(texts_shown) + en_numbers(texts_shown) + tables + missing_shown_as_words(at)


def test_benchmarks_published_tab_lists_the_corpus_with_citations_and_filters(home):
    at = page("benchmarks")
    table = frame(at, "pub_table")
    shipped = [m for r in load_inputs().results for m in r.measurements if m.source == "published"]
    assert len(table) == len(shipped) >= 150
    # Published files are not in the Browse list (their own tab shows them).
    assert not any("· published" in o or "nvidia-dle" in o for o in at.selectbox(key="bench_file").options)
    dle = table[(table["Source"] == "nvidia-dle-resnet50-pytorch") & (table["GPU"] == "a100-sxm-80gb")
                & (table["GPUs"] == 1) & (table["Precision"] == "fp16")]
    (row,) = dle.to_dict("records")
    assert row["Value (in the published unit)"] == 2470 and row["Unit"] == "samples_per_s" and row["Batch per GPU"] == 256
    assert row["Micro-step per GPU (ms)"] == pytest.approx(256 / 2470 * 1000)
    assert row["Used as a step time"] and row["Citation"].startswith(
        "https://github.com/NVIDIA/DeepLearningExamples/blob/729963dd47e7c8bd462ad10bfac7a7b0b604e6dd/")
    assert row["Citation"].endswith("README.md#L598")
    at.selectbox(key="pub_gpu").set_value("v100-sxm2-16gb")
    at.selectbox(key="pub_source").set_value("nvidia-dle-resnet50-pytorch")
    run(at)
    table = frame(at, "pub_table")
    assert len(table) == 4 and set(table["GPU"]) == {"v100-sxm2-16gb"}
    assert not table[table["GPUs"] == 8]["Used as a step time"].any()  # multi-GPU rows are scaling data
    at.selectbox(key="pub_model").set_value("bert_large_squad")
    run(at)
    assert "No published measurement matches these filters." in [i.value for i in at.info]


def test_benchmarks_import_a_good_file_then_a_bad_one(home):
    at = page("benchmarks")
    at.file_uploader(key="import_file").set_value(("teammate.json", json.dumps(resnet50_h100()).encode(),
                                                   "application/json"))
    run(at)
    landed = home / "results" / "h100-sxm-80gb" / "resnet50-20261120T100000Z.json"
    assert landed.exists()
    assert "Imported teammate.json" in texts(at)
    assert at.selectbox(key="bench_file").value == str(landed)
    assert len(frame(at, "bench_measurements")) == 12

    before = tree_hash(home)
    bad = resnet50_h100()
    bad["measurements"][2]["precision"] = "fp64"
    at.file_uploader(key="import_file").set_value(("broken-by-hand.json", json.dumps(bad).encode(),
                                                   "application/json"))
    run(at)
    error = "\n".join(e.value for e in at.error).replace("\\", "")
    assert "Not imported: broken-by-hand.json: measurements[2].precision" in error
    assert "fp64" in error
    assert tree_hash(home) == before


def test_benchmarks_run_here_end_to_end_through_the_real_subprocess(home):
    at = page("benchmarks")
    assert "No CUDA GPU here" in texts(at) or "GPU(s) found" in texts(at)
    at.selectbox(key="run_model").set_value("mlp")
    at.multiselect(key="run_precisions").set_value(["fp32"])
    at.text_input(key="run_batches").set_value("4,8")
    at.number_input(key="run_steps").set_value(2)
    at.number_input(key="run_warmup").set_value(1)
    at.button(key="run_start").click()
    run(at)
    live = at.session_state["_bench_run"]
    assert [p.text for p in at.get("progress")][0].startswith("0 of")
    deadline = time.monotonic() + 180
    while live.progress()[0] < 1 and live.running and time.monotonic() < deadline:
        time.sleep(0.3)
    run(at)
    bar = at.get("progress")[0]  # the second configuration may have finished too by now
    assert bar.value in (50, 100)
    assert re.match(r"[12] of 2 configurations measured · \d+ s · last: fp32, batch [48]: ok, [0-9.,]+ ms per step",
                    bar.text), bar.text
    assert live.wait(180) == 0
    run(at)
    assert at.get("progress")[0].value == 100
    [landed] = list((home / "results" / "cpu").glob("mlp-*.json"))
    assert f"Done: 2 configuration(s) measured, saved to {landed}" in texts(at)
    assert at.selectbox(key="bench_file").value == str(landed)
    table = frame(at, "bench_measurements")
    assert list(table["Batch"]) == [4, 8] and list(table["Status"]) == ["ok", "ok"]
    written = read_result_file(landed)
    assert (written.model_name, written.settings["steps"], written.settings["warmup"]) == ("mlp", 2, 1)
    assert {m.precision for m in written.measurements} == {"fp32"}


def test_benchmarks_cancel_keeps_what_was_measured(home):
    at = page("benchmarks")
    at.text_input(key="run_batches").set_value("2,4,8,16,32,64")
    at.number_input(key="run_steps").set_value(400)  # long enough to cancel half-way on a fast or loaded CPU
    at.number_input(key="run_warmup").set_value(1)
    at.button(key="run_start").click()
    run(at)
    live = at.session_state["_bench_run"]
    try:
        deadline = time.monotonic() + 180
        while live.progress()[0] < 1 and live.running and time.monotonic() < deadline:
            time.sleep(0.3)
        run(at)
        at.button(key="run_cancel").click()
        run(at)
        assert live.wait(120) is not None
    finally:
        if live.running:
            live.proc.kill()
    run(at)
    kept = read_result_file(live.path)
    assert kept.partial and 1 <= sum(m.ok for m in kept.measurements) < 6
    assert "Cancelled:" in texts(at) and "(marked partial)" in texts(at)
    assert at.selectbox(key="bench_file").value == live.path
    assert "This file is partial" in texts(at)


def test_benchmarks_explain_how_to_get_torch(home, monkeypatch, tmp_path):
    venv = tmp_path / "notorch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    monkeypatch.setenv(bench_runner.PYTHON_ENV, python)
    at = page("benchmarks")
    error = "\n".join(e.value for e in at.error)
    assert "torch is not installed" in error and python in error
    assert any(c.value.startswith(f"{python} -m pip install torch==") for c in at.code)
    assert at.button(key="run_start").disabled
    assert at.button(key="trace_start").disabled  # the trace tab says the same: tracing needs torch, not a GPU
    assert sum("torch is not installed" in e.value for e in at.error) == 2


def _pick_trace(at: AppTest, model: str, precisions: list[str], batches: str) -> None:
    at.selectbox(key="trace_model").set_value(model)
    run(at)  # the custom-model box and the sequence length follow the model
    at.multiselect(key="trace_precisions").set_value(precisions)
    at.text_input(key="trace_batches").set_value(batches)


def test_benchmarks_trace_mlp_through_the_real_subprocess_lands_in_the_browser(home):
    at = page("benchmarks")
    _pick_trace(at, "mlp", ["fp32"], "4,8")
    at.number_input(key="trace_frozen").set_value(0.25)
    at.selectbox(key="trace_optimizer").set_value("sgd_momentum")
    at.radio(key="trace_impl").set_value("fused")
    at.button(key="trace_start").click()
    run(at)
    [landed] = list((home / "results" / "traced").glob("mlp-*.json"))
    assert re.search(rf"Traced in [0-9.]+ s and saved to {re.escape(str(landed))}\.", texts(at)), texts(at)
    assert not at.error
    assert "fp32 batch    4: peak" in "\n".join(c.value for c in at.code)  # the tracer's own summary
    # the browser tab lists and shows the new file, as after "run here"
    assert at.selectbox(key="bench_file").value == str(landed)
    assert any(label.startswith("mlp · traced without a GPU (as on cuda) · ") and label.endswith(" · yours")
               for label in at.selectbox(key="bench_file").options)
    table = frame(at, "bench_measurements")
    assert list(table["Batch"]) == [4, 8] and list(table["Status"]) == ["ok", "ok"]
    assert (table["Peak memory (GiB)"] > 0).all()
    written = read_result_file(landed)
    assert written.is_traced and written.settings["emulates"] == "cuda"
    assert (written.settings["optimizer"], written.settings["optimizer_impl"]) == ("sgd_momentum", "fused")
    assert written.settings["frozen_fraction"] == 0.25
    assert written.model["trainable_params"] < written.model["params"]
    assert [(m.precision, m.batch_size, m.source) for m in written.measurements] == [
        ("fp32", 4, "traced"), ("fp32", 8, "traced")]


def _no_trace(request, *args, **kwargs):
    raise AssertionError(f"no trace should start: {request}")


def test_benchmarks_trace_refuses_bad_batch_sizes_before_any_subprocess(home, monkeypatch):
    monkeypatch.setattr(bench_runner, "trace", _no_trace)
    at = page("benchmarks")
    _pick_trace(at, "mlp", ["fp32"], "0,abc")
    at.button(key="trace_start").click()
    run(at)
    error = "\n".join(e.value for e in at.error).replace("\\", "")
    assert "Not traced: trace: batch sizes: got '0,abc'; expected positive whole numbers" in error
    assert "(not: 0, abc)" in error
    assert "_trace_outcome" not in at.session_state
    assert not (home / "results").exists()


def test_benchmarks_trace_an_unknown_custom_model_shows_the_tracers_message(home):
    at = page("benchmarks")
    assert at.text_input(key="trace_custom").disabled  # a zoo model is picked
    _pick_trace(at, "__custom__", ["fp32"], "2")
    assert at.number_input(key="trace_seq_len").disabled  # a custom callable sets its own length
    at.text_input(key="trace_custom").set_value("nope.mod:build")
    at.button(key="trace_start").click()
    run(at)
    outcome = at.session_state["_trace_outcome"]
    assert (outcome.status, outcome.code, outcome.path) == ("bad_input", 2, None)
    [error] = [e.value.replace("\\", "") for e in at.error]
    assert error.startswith("**Not traced.** The tracer said: bench trace: --model: got 'nope.mod:build'; expected "
                            "a loadable package.module:callable")
    assert "`python -m bench run`" in error
    assert "Traceback" not in texts(at) and not at.success
    assert not list(home.rglob("*.json"))


def test_benchmarks_trace_passes_every_widget_to_bench_trace(home, monkeypatch):
    asked: list[list[str]] = []

    def fake(request, *args, **kwargs):
        asked.append(request.args())
        return bench_runner.TraceOutcome("bad_input", sys.executable, 2, message="bench trace: stub")

    monkeypatch.setattr(bench_runner, "trace", fake)
    at = page("benchmarks")
    assert at.selectbox(key="trace_model").value == "gpt2"
    assert at.number_input(key="trace_seq_len").proto.placeholder == "the model's default: 1024"
    _pick_trace(at, "gpt2", ["bf16", "fp16"], "16, 2")
    at.number_input(key="trace_seq_len").set_value(256)
    at.checkbox(key="trace_checkpointing").check()
    at.number_input(key="trace_lora").set_value(8)
    at.button(key="trace_start").click()
    run(at)
    out = str(home / "results")
    assert asked[-1] == ["--model", "gpt2", "--precision", "fp16,bf16", "--batch", "2,16", "--optimizer", "adamw",
                         "--optimizer-impl", "foreach", "--frozen-fraction", "0.0", "--checkpointing", "--adapter",
                         "lora:8", "--seq-len", "256", "--out", out]
    assert "The tracer said: bench trace: stub" in texts(at)

    at.number_input(key="trace_lora").set_value(0)
    at.checkbox(key="trace_checkpointing").uncheck()
    at.number_input(key="trace_frozen").set_value(0.5)
    at.selectbox(key="trace_optimizer").set_value("adafactor")
    at.button(key="trace_start").click()
    run(at)
    assert asked[-1] == ["--model", "gpt2", "--precision", "fp16,bf16", "--batch", "2,16", "--optimizer",
                         "adafactor", "--optimizer-impl", "foreach", "--frozen-fraction", "0.5", "--seq-len", "256",
                         "--out", out]

    at.selectbox(key="trace_model").set_value("resnet18")
    run(at)
    assert at.number_input(key="trace_seq_len").disabled  # images have no sequence: the 256 is not sent
    at.button(key="trace_start").click()
    run(at)
    assert "--seq-len" not in asked[-1] and asked[-1][:2] == ["--model", "resnet18"]

    at.radio(key="trace_impl").set_value("fused")  # Adafactor has no fused kernel: refused here, nothing started
    at.button(key="trace_start").click()
    run(at)
    assert len(asked) == 3
    assert "Not traced: trace: optimizer implementation: got 'fused'" in texts(at)

    at.radio(key="trace_impl").set_value("foreach")
    at.number_input(key="trace_lora").set_value(4)  # with frozen 0.5: LoRA already freezes the base
    at.button(key="trace_start").click()
    run(at)
    assert len(asked) == 3 and "Not traced: trace: frozen fraction: got 0.5; expected 0 with LoRA" in texts(at)


def test_benchmarks_trace_without_torch_explains_how_to_get_it(home, monkeypatch, tmp_path):
    venv = tmp_path / "notorch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    request = bench_runner.make_trace_request("mlp", ["mlp"], ["fp32"], "2", out=tmp_path / "out")
    said = bench_runner.trace(request, python=python)  # the real `python -m bench trace` of a Python without torch
    assert (said.status, said.missing, said.path) == ("no_torch", "torch", None)
    assert "this Python has no torch" in said.message
    # the page: `bench detect` found torch, yet the trace's Python had none (it was uninstalled since)
    monkeypatch.setattr(bench_runner, "trace", lambda request, *a, **k: said)
    at = page("benchmarks")
    at.button(key="trace_start").click()
    run(at)
    error = "\n".join(e.value for e in at.error)
    assert "torch is not installed" in error and python in error
    assert any(c.value.startswith(f"{python} -m pip install torch==") for c in at.code)
    assert "Traceback" not in texts(at)


# ================================================================ GPUs & prices

def test_gpus_table_lists_every_profile_and_the_tier_changes_the_prices(home):
    at = page("gpus")
    table = frame(at, "gpus_table")
    shipped = load_inputs().profiles
    assert set(table["Profile id"]) == set(shipped)
    l4 = shipped["l4-24gb"]
    on_demand = table.set_index("Profile id").loc["l4-24gb", "USD per GPU-hour"]
    assert on_demand == min(q.usd_per_gpu_hour for q in l4.prices if q.tier == "on_demand")
    row = table.set_index("Profile id").loc["l4-24gb"]
    assert row["Memory (GiB)"] == l4.memory_gib and row["bf16 peak (TFLOPS)"] == l4.peak_tflops["bf16"]
    assert row["Stale"]  # its quotes are from early 2025
    # Published points per GPU: the DLE + Lambda ResNet-50/BERT rows for the A100 SXM 80GB, none for the L4.
    points = table.set_index("Profile id")
    a100 = [m for r in load_inputs().results if r.gpu_profile_id == "a100-sxm-80gb" for m in r.measurements
            if m.source == "published"]
    assert points.loc["a100-sxm-80gb", "Published points"] == len(a100) > 0
    assert points.loc["l4-24gb", "Published points"] == 0
    # Latin America: the T4's cheapest Sao Paulo quote (shipped catalog), and a plain "no LatAm quote" for the L4.
    t4 = choose_quote(shipped["t4-16gb"].prices, "on_demand", today=dt.date.today(), region_group="latam")
    assert points.loc["t4-16gb", "Latin America, USD per GPU-hour"] == t4.usd_per_gpu_hour
    assert points.loc["t4-16gb", "Latin America: provider · instance · region"].endswith(t4.region)
    assert points.loc["l4-24gb", "Latin America: provider · instance · region"] == "no LatAm quote"
    at.selectbox(key="gpus_tier").set_value("spot")
    run(at)
    spot = frame(at, "gpus_table").set_index("Profile id").loc["l4-24gb", "USD per GPU-hour"]
    assert spot == min(q.usd_per_gpu_hour for q in l4.prices if q.tier == "spot") != on_demand


def test_a_price_override_changes_the_plans_cost_and_its_source_becomes_user(home):
    shipped_before = tree_hash(SHIPPED_PROFILES_DIR)
    app = run(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120))
    cost_before = next(m.value for m in app.metric if m.label == "Cost")

    at = page("gpus")
    scenario = load_scenario_file(DEFAULT_SCENARIO)
    plan = build_plan(scenario, load_inputs())
    primary = plan.option(plan.recommendation.primary)
    assert at.selectbox(key="price_gpu").value == primary.gpu_id
    effect = frame(at, "price_effect").set_index("Option id")
    assert effect.loc[primary.id, "Price source (id)"] == "published"
    old_price = primary.cost.price
    new_usd = round(old_price.usd_per_gpu_hour / 2, 3)
    # the form starts from the cheapest quote: typing a price replaces that offer with yours
    assert (at.text_input(key="ov_provider").value, at.text_input(key="ov_instance").value) == (
        old_price.provider, old_price.instance)
    at.number_input(key="ov_price").set_value(new_usd)
    at.text_input(key="ov_source").set_value("our contract")
    at.button(key="ov_save").click()
    run(at)
    assert "Saved your price" in texts(at)
    effect = frame(at, "price_effect").set_index("Option id")
    assert effect.loc[primary.id, "Price source (id)"] == "user"
    assert effect.loc[primary.id, "Price source"] == "your price override"
    assert effect.loc[primary.id, "USD per GPU-hour"] == new_usd
    assert effect.loc[primary.id, "Cost (USD)"] < round(primary.cost.usd, 2)
    quotes = next(d.value for d in at.dataframe if "Replaced by your price" in d.value.columns)
    replaced = quotes[quotes["Replaced by your price"]]
    assert set(replaced["Provider · instance"]) == {f"{old_price.provider} · {old_price.instance}"}
    assert list(replaced["Price source"].unique()) == ["published quote"]

    after = build_plan(scenario, load_inputs())
    mine = after.option(primary.id)
    assert mine.cost.price.origin == "user" and mine.cost.price.usd_per_gpu_hour == new_usd
    # the GPU part scales with the price; the data line (storage and egress of the default scenario's dataset) does not
    assert mine.cost.usd - mine.cost.data_usd == pytest.approx(
        (primary.cost.usd - primary.cost.data_usd) * new_usd / old_price.usd_per_gpu_hour, rel=0.02)
    assert effect.loc[primary.id, "Cost (USD)"] == round(mine.cost.usd, 2)
    row = frame(at, "gpus_table").set_index("Profile id").loc[primary.gpu_id]
    assert (row["USD per GPU-hour"], row["Price source"], row["Stale"]) == (new_usd, "your price override", False)

    app = run(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120))  # the Plan page bills at it too
    cost_after = next(m.value for m in app.metric if m.label == "Cost")
    assert cost_after != cost_before
    assert tree_hash(SHIPPED_PROFILES_DIR) == shipped_before  # never edits the shipped profiles

    at.button(key=f"ov_remove_{primary.gpu_id}_0").click()  # removing it brings the published quote back
    run(at)
    effect = frame(at, "price_effect").set_index("Option id")
    assert effect.loc[primary.id, "Price source (id)"] == "published"
    assert build_plan(scenario, load_inputs()).option(primary.id).cost.price.origin == "published"


def test_a_bad_price_is_refused_and_nothing_is_saved(home):
    at = page("gpus")
    at.number_input(key="ov_price").set_value(500.0)
    at.button(key="ov_save").click()
    run(at)
    error = "\n".join(e.value for e in at.error)
    assert "Not saved" in error and "usd_per_gpu_hour" in error.replace("\\", "")
    assert not (home / "price_overrides.yaml").exists()


PROFILE = {"pf_id": "rtx5090-32gb", "pf_name": "NVIDIA GeForce RTX 5090", "pf_nvml": "NVIDIA GeForce RTX 5090",
           "pf_memory": 31.36, "pf_bandwidth": 1792.0, "pf_tdp": 575.0, "pf_fp32": 104.8, "pf_bf16": 209.5,
           "pf_sources": "https://example.invalid/rtx5090"}


def _fill(at: AppTest, values: dict) -> None:
    for key, value in values.items():
        widget = at.get_by_key(key)
        widget.set_value(value)


def test_add_a_gpu_profile_from_the_form(home):
    at = page("gpus")
    _fill(at, PROFILE)
    at.selectbox(key="pf_memory_source").set_value("driver")
    at.button(key="pf_save").click()
    run(at)
    saved = home / "gpu_profiles" / "rtx5090-32gb.yaml"
    assert saved.exists()
    assert "Saved the profile rtx5090-32gb" in texts(at)
    row = frame(at, "gpus_table").set_index("Profile id").loc["rtx5090-32gb"]
    assert row["Added by you"] and row["Memory (GiB)"] == 31.36 and row["bf16 peak (TFLOPS)"] == 209.5
    assert "rtx5090-32gb" in load_inputs().profiles


@pytest.mark.parametrize("changes, box, words", [
    ({"pf_fp32": None}, "fp32 peak (TFLOPS, required)", "an fp32 peak"),
    ({"pf_id": "h100-sxm-80gb"}, "Profile id", "not already used"),
    ({"pf_id": "My GPU"}, "Profile id", "lower-case"),
    ({"pf_bandwidth": 10.0}, "Memory bandwidth (GB/s)", "between 50 and 20000"),
    ({"pf_sources": ""}, "Sources (one per line)", "at least one source"),
])
def test_add_profile_validation_names_the_box_and_saves_nothing(changes, box, words, home):
    at = page("gpus")
    _fill(at, {**PROFILE, **changes})
    at.button(key="pf_save").click()
    run(at)
    error = "\n".join(e.value for e in at.error).replace("\\", "")
    assert f"Fix **{box}**" in error and words in error
    assert not (home / "gpu_profiles").exists()


DETECTED = {"hostname": "gpubox", "device": "cuda", "torch": "2.13.0", "cuda": "13.0", "cuda_available": True,
            "nvml_available": True, "nvml_gpus": [], "profile_problems": [],
            "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "total_memory_bytes": 33_670_000_000,
                      "capability": "12.0", "profile_id": None, "device_dir": "unknown-nvidia-geforce-rtx-5090",
                      "nvml": {"name": "NVIDIA GeForce RTX 5090", "memory_total_bytes": 34_190_000_000,
                               "power_limit_w": 575.0}}]}


def test_add_profile_from_the_detected_gpu(home, monkeypatch, tmp_path):
    monkeypatch.setenv(bench_runner.PYTHON_ENV, _fake_python(tmp_path / "fake-python", DETECTED))
    at = page("gpus")
    at.button(key="profile_prefill").click()
    run(at)
    assert "Filled in from the detected NVIDIA GeForce RTX 5090" in texts(at)
    assert at.text_input(key="pf_name").value == "NVIDIA GeForce RTX 5090"
    assert at.text_input(key="pf_id").value == "rtx-5090-32gb"
    assert at.number_input(key="pf_memory").value == round(34_190_000_000 / 2**30, 2)
    assert at.selectbox(key="pf_memory_source").value == "driver"
    _fill(at, {"pf_fp32": 104.8, "pf_bandwidth": 1792.0})
    at.button(key="pf_save").click()
    run(at)
    saved = home / "gpu_profiles" / "rtx-5090-32gb.yaml"
    assert saved.exists() and "bench detect on gpubox" in saved.read_text()

    # the Benchmarks page shows the same detected GPU, with no profile matched
    bench = page("benchmarks")
    assert "1 GPU(s) found" in texts(bench)
    assert list(frame(bench, "bench_gpus")["GPU"]) == ["NVIDIA GeForce RTX 5090"]


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(_has_gpu(), reason="this machine has a GPU: the no-GPU message cannot show")
def test_prefill_on_a_machine_without_a_gpu_says_so(home):
    at = page("gpus")
    at.button(key="profile_prefill").click()
    run(at)
    found = bench_runner.detect()
    assert found.device != "cuda", found
    assert "No GPU detected on this machine" in texts(at)
    assert at.text_input(key="pf_name").value == ""


def test_pages_speak_spanish(home):
    for name, title in (("compare", "Comparar escenarios"), ("gpus", "GPUs y precios"), ("benchmarks", "Mediciones")):
        at = AppTest.from_file(str(ROOT / "ui" / f"{name}_page.py"), default_timeout=120)
        at.session_state["_locale"] = "es-AR"
        at.session_state["_base"] = scenario_to_dict(load_scenario_file(DEFAULT_SCENARIO))
        run(at)
        assert at.title[0].value == title
        if name == "benchmarks":
            assert "Trazar la memoria sin GPU" in [tab.label for tab in at.tabs]
            assert at.button(key="trace_start").label == "Trazar"
    at = AppTest.from_file(str(ROOT / "ui" / "compare_page.py"), default_timeout=120)
    at.session_state["_locale"] = "es-AR"
    run(at)
    summary = at.dataframe[0].value
    assert "Costo (USD)" in summary.index
    assert "," in summary.loc["Tiempo de entrenamiento"].iloc[0]  # es-AR writes 20,4 h


def _fake_python(path: Path, facts: dict) -> str:
    """An 'interpreter' that answers `-m bench detect --events json` with these facts (a GPU machine, in a test)."""
    stream = [{"protocol": "trainplan.bench-events/1"}, {"event": "done", "facts": facts}]
    path.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(map(json.dumps, stream)) + "\nEOF\n")
    path.chmod(0o755)
    return str(path)


def test_benchmarks_detect_again_runs_detect_anew(home, monkeypatch, tmp_path):
    cpu = {"hostname": "box", "device": "cpu", "torch": "2.13.0", "cuda": None, "gpus": [], "nvml_gpus": [],
           "cuda_reason": "torch.cuda.is_available() is False", "nvml_reason": "NVML unavailable", "cpu": "Test CPU"}
    fake = tmp_path / "fake-python"
    monkeypatch.setenv(bench_runner.PYTHON_ENV, _fake_python(fake, cpu))
    at = page("benchmarks")
    assert "No CUDA GPU here" in texts(at) and "Test CPU" in texts(at)
    _fake_python(fake, DETECTED)  # the machine now has a GPU (a driver was installed)
    run(at)
    assert "No CUDA GPU here" in texts(at)  # remembered: detect is not re-run on every click
    at.button(key="bench_detect").click()
    run(at)
    assert "1 GPU(s) found (torch 2.13.0, CUDA 13.0)" in texts(at)
    assert list(frame(at, "bench_gpus")["GPU profile"]) == ["none: add one on the GPUs & prices page"]


def test_gpus_picking_a_gpu_shows_its_quotes_and_its_options(home):
    at = page("gpus")
    at.selectbox(key="price_gpu").set_value("h100-sxm-80gb")
    run(at)
    h100 = load_inputs().profiles["h100-sxm-80gb"]
    quotes = next(d.value for d in at.dataframe if "Where the price comes from" in d.value.columns)
    assert len(quotes) == len(h100.prices)
    # Catalog rows say when the catalog was read; hand-collected quotes say so.
    read = {f"price catalog (read {fmt.date(q.retrieved, 'en')})" for q in h100.prices if q.retrieved}
    assert set(quotes["Quote from"]) == read | {"collected by hand"}
    effect = frame(at, "price_effect")
    assert set(effect["Option id"]) == {o.id for o in build_plan(load_scenario_file(DEFAULT_SCENARIO),
                                                                  load_inputs()).options if o.gpu_id == h100.id}
    billed = choose_quote(h100.prices, "on_demand", "cheapest", [], dt.date.today())
    assert at.number_input(key="ov_price").value == billed.usd_per_gpu_hour
    assert at.text_input(key="ov_instance").value == billed.instance
    at.selectbox(key="gpus_tier").set_value("spot")  # the form follows the tier the table shows
    run(at)
    spot = choose_quote(h100.prices, "spot", "cheapest", [], dt.date.today())
    assert (at.number_input(key="ov_price").value, at.selectbox(key="ov_tier").value) == (spot.usd_per_gpu_hour,
                                                                                           "spot")


def test_every_field_of_the_price_form_is_saved(home):
    at = page("gpus")
    at.selectbox(key="price_gpu").set_value("l4-24gb")
    run(at)
    for key, value in (("ov_provider", "mycloud"), ("ov_instance", "l4-box"), ("ov_region", "sa-east-1"),
                       ("ov_price", 0.37), ("ov_gpus", 4), ("ov_source", "quote by email")):
        at.get_by_key(key).set_value(value)
    at.selectbox(key="ov_tier").set_value("reserved_1y")
    at.selectbox(key="ov_billing").set_value(60)
    at.date_input(key="ov_as_of").set_value(dt.date(2026, 11, 2))
    at.button(key="ov_save").click()
    run(at)
    from planner.inputs.userdata import load_price_overrides

    [q] = load_price_overrides()["l4-24gb"]
    assert (q.provider, q.instance, q.region, q.usd_per_gpu_hour, q.gpus_per_instance, q.source, q.tier,
            q.billing_increment_s, q.as_of, q.origin) == (
        "mycloud", "l4-box", "sa-east-1", 0.37, 4, "quote by email", "reserved_1y", 60, dt.date(2026, 11, 2), "user")
    at.selectbox(key="gpus_tier").set_value("reserved_1y")
    run(at)
    row = frame(at, "gpus_table").set_index("Profile id").loc["l4-24gb"]
    assert (row["USD per GPU-hour"], row["Provider · instance · region"]) == (0.37, "mycloud · l4-box · sa-east-1")


def test_every_field_of_the_profile_form_is_saved(home):
    at = page("gpus")
    _fill(at, {**PROFILE, "pf_architecture": "Blackwell", "pf_cc": "12.0", "pf_ic_kind": "pcie5", "pf_ic_bw": 128.0,
               "pf_pcie": 5, "pf_tf32": 104.8, "pf_fp16": 209.5, "pf_fp8": 419.0, "pf_notes": "our lab's card",
               "pf_sources": "https://example.invalid/a\nhttps://example.invalid/b"})
    at.selectbox(key="pf_vendor").set_value("nvidia")
    at.selectbox(key="pf_memory_source").set_value("driver")
    at.button(key="pf_save").click()
    run(at)
    p = load_inputs().profiles["rtx5090-32gb"]
    assert (p.architecture, p.compute_capability, p.interconnect.kind, p.interconnect.bidirectional_gb_per_s,
            p.pcie_gen, p.notes, p.memory_gib_source, p.tdp_w, p.memory_bandwidth_gb_per_s) == (
        "Blackwell", "12.0", "pcie5", 128.0, 5, "our lab's card", "driver", 575.0, 1792.0)
    assert dict(p.peak_tflops) == {"fp32": 104.8, "tf32": 104.8, "fp16": 209.5, "bf16": 209.5, "fp8": 419.0}
    assert p.sources == ("https://example.invalid/a", "https://example.invalid/b")
    assert p.nvml_names == ("NVIDIA GeForce RTX 5090",)


def test_leaving_a_page_and_coming_back_refills_its_forms(home):
    at = run(AppTest.from_file(str(FULL_APP), default_timeout=120))
    for page_path in ("ui/compare_page.py", "ui/gpus_page.py", "ui/plan_page.py",
                      "ui/compare_page.py", "ui/gpus_page.py"):
        at.switch_page(page_path)
        run(at)
    assert at.title[0].value == "GPUs & prices"
    assert at.text_input(key="ov_provider").value  # refilled from the billed quote, not left blank
    assert at.number_input(key="ov_price").value > 0
    at.switch_page("ui/compare_page.py")
    run(at)
    assert at.text_input(key="cmp_save_name").value == load_scenario_file(DEFAULT_SCENARIO).name
