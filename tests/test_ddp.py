"""bench ddp: a real 2-process gloo run on CPU, a killed worker, a taken port, and which plans use a ddp section.

No timing thresholds (shared 2-core machines): the runs check the file's shape and the fault handling only.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest
import torch

from bench import ddp
from bench.__main__ import main as bench_main
from bench.ddp_worker import slowest_per_step
from planner.engine import scaling
from planner.engine.plan import build_plan
from planner.inputs.atomic import atomic_write
from planner.inputs.folders import load_inputs
from planner.inputs.resultfile import parse_result, read_result_file
from planner.inputs.scenario import load_scenario_text
from tests.fixtures.make_fixtures import result
from tests.notes_support import detail_en

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_RESULTS = ROOT / "tests" / "fixtures" / "results"
DDP_KEYS = ("backend", "nnodes", "nproc_per_node", "gpu_profile_id", "step_time_1_s", "step_time_n_s",
            "efficiency", "exposed_comm_s", "busbw")
SIZES = "4K,64K"
# Small and quick: mlp, batch 8, few steps, a tiny bandwidth budget (the 25 MiB bucket size is always measured).
QUICK = ["--model", "mlp", "--nproc", "2", "--backend", "gloo", "--precision", "fp32", "--batch", "8",
         "--steps", "4", "--warmup", "2", "--optimizer", "sgd", "--busbw-sizes", SIZES, "--busbw-budget-s", "0.02"]


@pytest.fixture(autouse=True)
def _private_tmp(tmp_path, monkeypatch):
    # Failed runs keep their worker logs in a temp folder: keep them inside the test's tmp_path.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def run_bench(*argv: str) -> tuple[int, float]:
    t0 = time.monotonic()
    rc = bench_main(["ddp", *argv])
    return rc, time.monotonic() - t0


# ---------------------------------------------------------------- pure helpers

def test_message_sizes_include_gradient_and_bucket_sizes():
    grads, bucket = 2_678_824, 25 * 2**20
    auto = ddp.message_sizes([], grads, bucket)
    assert grads in auto and bucket in auto and auto == sorted(set(auto))
    assert auto[0] == 4096 and all(s % 4 == 0 for s in auto)  # fp32 elements
    assert ddp.message_sizes([1000, 4096], 10, bucket) == [12, 1000, 4096, bucket]  # 10 B rounds up to 3 floats


def test_bus_bandwidth_is_nccl_tests_convention():
    # nccl-tests PERFORMANCE.md: algbw = S / t; all-reduce busbw = algbw × 2(n−1)/n. 1 GB in 1 s on 8 ranks: 1.75.
    assert ddp.bus_bandwidth_gb_s(10**9, 1.0, 8) == (1.0, 1.75)
    assert ddp.bus_bandwidth_gb_s(10**9, 0.5, 2) == (2.0, 2.0)
    assert ddp.bus_bandwidth_gb_s(10**9, 1.0, 1) == (1.0, None)  # one rank moves nothing across a link


def test_sizes_and_endpoint_parsing():
    assert ddp.parse_sizes("4K, 1M,25MiB,1g") == [4096, 2**20, 25 * 2**20, 2**30]
    assert ddp.parse_sizes("auto") == []
    assert ddp.parse_endpoint("node001:29500") == ("node001", 29500)
    for bad in ("node001", "node001:0", "node001:http", ":29500"):
        with pytest.raises(ValueError, match="rdzv-endpoint"):
            ddp.parse_endpoint(bad)
    with pytest.raises(ValueError, match="busbw-sizes"):
        ddp.parse_sizes("12 parsecs")


def test_step_time_is_the_slowest_rank_per_step():
    assert slowest_per_step([[1.0, 5.0, 2.0], [3.0, 1.0, 2.5]]) == [3.0, 5.0, 2.5]


# ---------------------------------------------------------------- real runs (torchrun, gloo, 2 processes)

@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    previous = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("runs"))
    try:
        rc, _ = run_bench(*QUICK, "--out", str(out), "--timeout-s", "120")
    finally:
        tempfile.tempdir = previous
    return rc, out


def test_gloo_run_writes_one_complete_valid_file(gloo_run):
    rc, out = gloo_run
    assert rc == 0
    files = list(out.rglob("*.json"))
    assert [f.parent.name for f in files] == ["cpu"]
    rf = read_result_file(files[0])  # the schema module's validating reader
    assert rf.partial is False and rf.device == "cpu" and rf.model_name == "mlp"
    assert rf.settings["sync_method"] == "ddp"
    d = rf.ddp
    assert all(key in d for key in DDP_KEYS)
    assert (d["backend"], d["nnodes"], d["nproc_per_node"], d["world_size"]) == ("gloo", 1, 2, 2)
    assert d["gpu_profile_id"] is None and rf.environment["gpu_profile_id"] is None
    assert math.isfinite(d["efficiency"]) and d["efficiency"] > 0
    assert d["efficiency"] == pytest.approx(d["step_time_1_s"] / d["step_time_n_s"])
    assert d["exposed_comm_s"] >= 0 and d["step_time_1_s"] > 0 and d["step_time_n_s"] > 0
    expected = ddp.message_sizes(ddp.parse_sizes(SIZES), d["grad_bytes"], 25 * 2**20)
    assert [row["bytes"] for row in d["busbw"]] == expected  # one row per size, gradient and bucket included
    assert d["grad_bytes"] == 4 * rf.model["trainable_params"]
    assert all(row["gb_per_s"] > 0 and math.isfinite(row["gb_per_s"]) for row in d["busbw"])
    (m,) = rf.measurements
    assert m.ok and m.batch_size == 8 and m.precision == "fp32"
    assert m.step_time_s.median == pytest.approx(d["step_time_n_s"]) and m.step_time_s.n == 4
    # schema /2: the slowest rank's per-step times, the noise flag, the command, the requested point
    assert rf.schema == "trainplan.bench/2" and len(m.step_time_s.raw) == 4 and isinstance(m.noisy, bool)
    assert len(rf.warnings) == int(m.noisy) and rf.missing == ()
    assert rf.settings["command"][1:4] == ["-m", "bench", "ddp"] and "--nproc" in rf.settings["command"]
    assert rf.settings["requested"] == {"precisions": ["fp32"], "batch_sizes": [8], "steps": 4, "warmup": 2}
    assert rf.environment["trainplan_version"] and "cpu_threads" in rf.environment


def test_worker_files_are_written_atomically(tmp_path, monkeypatch):
    from bench import ddp_worker

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    seen = []
    monkeypatch.setattr(ddp_worker, "atomic_write", lambda path, data: seen.append((path, json.loads(data))))
    ddp_worker._write_json(run_dir / "report.json", {"a": 1})
    assert seen == [(run_dir / "report.json", {"a": 1})]  # the project's one atomic writer (fsync, unique temp)
    monkeypatch.setattr(ddp_worker, "atomic_write", atomic_write)
    ddp_worker._write_json(run_dir / "report.json", {"b": 2})
    assert json.loads((run_dir / "report.json").read_text()) == {"b": 2}
    assert [p.name for p in run_dir.iterdir()] == ["report.json"]  # no fixed-name .tmp left behind


def test_cpu_gloo_result_never_applies_to_a_gpu_plan(gloo_run):
    _, out = gloo_run
    rf = read_result_file(next(out.rglob("*.json")))
    for gpu_id in ("h100-sxm-80gb", "a100-sxm-80gb"):
        for n, per_node in ((2, 8), (2, 2), (8, 8)):
            assert scaling.select_measured_ddp([(rf.label, dict(rf.ddp))], gpu_id, n, per_node) is None


def test_a_killed_worker_ends_the_run_with_its_error_and_no_complete_file(tmp_path, capfd):
    out = tmp_path / "results"
    rc, elapsed = run_bench(*QUICK, "--out", str(out), "--timeout-s", "60", "--fault-inject", "rank1-exit")
    assert rc == 1 and elapsed < 60
    err = capfd.readouterr().err
    assert "worker rank 1" in err and "exited with code 3" in err
    assert "fault injection: rank 1 exits with code 3" in err  # the failing rank's own stderr
    assert "no result file written" in err
    for path in out.rglob("*.json"):
        assert json.loads(path.read_text())["partial"] is True


def test_a_rank_that_stops_answering_ends_at_the_process_group_timeout(tmp_path, capfd):
    out = tmp_path / "results"
    rc, elapsed = run_bench(*QUICK, "--out", str(out), "--timeout-s", "60", "--pg-timeout-s", "4",
                            "--fault-inject", "rank1-hang")
    assert rc == 1 and elapsed < 60
    err = capfd.readouterr().err
    assert "worker rank 0" in err and "collective timed out" in err  # rank 0's gloo recv gave up after 4 s
    assert not list(out.rglob("*.json"))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def test_the_launcher_timeout_stops_torchrun_and_every_worker(tmp_path, capfd):
    out = tmp_path / "results"
    rc, elapsed = run_bench(*QUICK, "--out", str(out), "--timeout-s", "8", "--pg-timeout-s", "300",
                            "--fault-inject", "rank1-hang")
    assert rc == 1 and elapsed < 8 + ddp.TERM_GRACE_S + 10
    assert "timed out after" in capfd.readouterr().err
    pids = [int(p.read_text()) for p in Path(tempfile.tempdir).glob("trainplan-ddp-*/pids/*.pid")]
    assert not [pid for pid in pids if _alive(pid)]
    assert not list(out.rglob("*.json"))


def test_a_port_in_use_is_a_clear_input_error(tmp_path, capfd):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc, _ = run_bench(*QUICK, "--out", str(tmp_path), "--rdzv-endpoint", f"127.0.0.1:{port}")
    assert rc == 2
    err = capfd.readouterr().err
    assert f"port {port} on this machine is already in use" in err
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_nccl_without_cuda_fails_cleanly(tmp_path, capfd):
    rc, _ = run_bench("--model", "mlp", "--nproc", "1", "--backend", "nccl", "--out", str(tmp_path))
    assert rc == 2
    err = capfd.readouterr().err
    assert "nccl" in err and "CUDA" in err and "--backend gloo" in err


# ---------------------------------------------------------------- the planner: only a matching GPU/backend/layout

def nccl_section(**overrides) -> dict:
    """A synthetic 8 x H100 NCCL section (NOT a measurement)."""
    section = {"backend": "nccl", "nnodes": 1, "nproc_per_node": 8, "gpu_profile_id": "h100-sxm-80gb",
               "step_time_1_s": 0.100, "step_time_n_s": 0.110, "efficiency": 0.909, "exposed_comm_s": 0.010,
               "busbw": [{"bytes": 26214400, "gb_per_s": 300.0}, {"bytes": 102228128, "gb_per_s": 350.0}]}
    section.update(overrides)
    return section


def ddp_file(section: dict, created: str = "2026-11-21T10:00:00Z") -> dict:
    data = result("resnet50", section.get("gpu_profile_id"), [], created=created)
    data["settings"]["sync_method"] = "ddp"
    data["ddp"] = section
    return data


def test_select_measured_ddp_matches_gpu_backend_and_layout_only():
    good = ddp_file(nccl_section())
    rf = parse_result(good, "h100-ddp.json")  # the synthetic section is a valid result file
    sections = [
        ("gloo.json", nccl_section(backend="gloo")),
        ("a100.json", nccl_section(gpu_profile_id="a100-sxm-80gb")),
        ("2x4.json", nccl_section(nnodes=2, nproc_per_node=4)),
        ("h100-ddp.json", dict(rf.ddp)),
    ]
    assert scaling.select_measured_ddp(sections, "h100-sxm-80gb", 8, 8)[0] == "h100-ddp.json"
    assert scaling.select_measured_ddp(sections[:3], "h100-sxm-80gb", 8, 8) is None
    assert scaling.select_measured_ddp(sections, "h100-sxm-80gb", 16, 8) is None  # 2 x 8: not measured
    assert scaling.select_measured_ddp(sections, "h100-sxm-80gb", 4, 8) is None
    assert scaling.select_measured_ddp(sections, "a100-sxm-80gb", 8, 8)[0] == "a100.json"  # its own GPU


def test_plan_uses_measured_scaling_only_for_the_measured_gpu(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(FIXTURE_RESULTS, results)
    (results / "h100-sxm-80gb" / "resnet50-ddp.json").write_text(json.dumps(ddp_file(nccl_section())))
    gloo = ddp_file(nccl_section(backend="gloo", gpu_profile_id="a100-sxm-80gb"), "2026-11-22T10:00:00Z")
    (results / "a100-sxm-80gb").mkdir()
    (results / "a100-sxm-80gb" / "resnet50-gloo.json").write_text(json.dumps(gloo))
    inputs = load_inputs([results], include_user_data=False)
    assert not inputs.problems
    text = (ROOT / "scenarios" / "resnet50-imagenet.yaml").read_text(encoding="utf-8")
    text = text.replace("gpus: all", "gpus: [h100-sxm-80gb, a100-sxm-80gb]")
    plan = build_plan(load_scenario_text(text, known_gpu_ids=inputs.profiles), inputs)
    by_id = {o.id: o for o in plan.options}
    h100 = by_id["h100-sxm-80gb-x8-bf16"].scaling
    assert h100.source.kind == "measured" and "resnet50-ddp.json" in detail_en(h100.source)
    assert h100.exposed_comm_s == pytest.approx(0.010)
    assert h100.formula_step_time_s is not None  # the formula stays alongside, so both can be shown
    assert by_id["a100-sxm-80gb-x8-bf16"].scaling.source.kind == "analytic"  # gloo file: never used
