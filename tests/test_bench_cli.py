"""`python -m bench`: a tiny sweep end to end, bad input (exit 2), Ctrl-C (partial file), OOM mid-sweep,
custom models, max batch and --batch auto through the sweep with a fake GPU."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from bench import cli_run
from bench.__main__ import main as bench_main
from bench.cli_progress import summary_table
from bench.maxbatch import safe_batch_size
from bench.sweep import Sweep
from bench.testing import FakeMemory
from planner.inputs.bench_events import EventReader, read_events
from planner.inputs.resultfile import read_result_file, scan_results
from tests.test_bench_harness import FakeClock, FakeDevice, MiB, fake_workload, sgd

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TRAINPLAN_HOME": "/nonexistent-trainplan-home"}


def bench(*args, **kw):
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=240, **kw)


def only_file(root: Path, device_dir: str = "cpu") -> Path:
    files = sorted((root / device_dir).glob("*.json"))
    assert len(files) == 1, files
    return files[0]


# ------------------------------------------------------------------ custom workloads used by the tests

def tiny_workload():
    """A user model as the README describes: (model, make_batch(batch_size, device), loss_fn(model, batch))."""
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    def make_batch(batch_size, device):
        return torch.randn(batch_size, 8, device=device), torch.randint(0, 2, (batch_size,), device=device)

    def loss_fn(m, batch):
        x, y = batch
        return nn.functional.cross_entropy(m(x), y)

    return model, make_batch, loss_fn


def oom_workload():
    """Like tiny_workload, but batches of 16 or more fail the way CPU allocation failures do."""
    model, make_batch, loss_fn = tiny_workload()

    def failing_loss(m, batch):
        if batch[0].shape[0] >= 16:
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory")
        return loss_fn(m, batch)

    return model, make_batch, failing_loss


def broken_workload():
    raise RuntimeError("my model is broken")


# ------------------------------------------------------------------ end to end

def test_tiny_sweep_end_to_end_writes_a_valid_file(tmp_path):
    r = bench("run", "--model", "mlp", "--precision", "fp32,bf16,fp16", "--batch", "4,8", "--steps", "3",
              "--warmup", "1", "--phase-steps", "1", "--max-batch", "--dataloader", "--dataloader-workers", "0,2",
              "--dataloader-batches", "2", "--dataloader-batch", "4", "--cpu-cost-ms", "0.1", "--out",
              str(tmp_path), "--events", "json")
    assert r.returncode == 0, r.stderr
    events, problem = read_events(r.stdout.splitlines())
    assert problem is None and r.stdout.splitlines()[0] == '{"protocol": "trainplan.bench-events/1"}'

    progress = [e for e in events if e["event"] == "progress"]
    assert [e["done"] for e in progress] == [1, 2, 3, 4, 5, 6] and progress[0]["total"] == 6
    assert {"precision", "batch", "status"} <= set(progress[0])
    assert events[-1]["event"] == "done"
    path = only_file(tmp_path)
    assert events[-1]["path"] == str(path) and path.name.startswith("mlp-")
    rf = read_result_file(path)
    assert not rf.partial and rf.device == "cpu" and rf.model["params"] == 669_706
    assert [(m.precision, m.batch_size, m.status) for m in rf.measurements] == [
        ("fp32", 4, "ok"), ("fp32", 8, "ok"), ("bf16", 4, "ok"), ("bf16", 8, "ok"), ("fp16", 4, "ok"),
        ("fp16", 8, "ok")]
    m = rf.measurements[0]
    assert m.step_time_s.n == 3 and m.achieved_tflops > 0 and m.loss_finite
    assert m.peak_allocated_bytes is None and "peak_allocated_bytes" in m.unmeasured
    assert m.mfu is None and m.power_w is None and m.unmeasured["power_w"]
    assert [mb["max_batch"] for mb in rf.max_batch] == [None] * 3 and rf.max_batch[0]["reason"]
    assert [(d["num_workers"], d["pin_memory"]) for d in rf.dataloader] == [(0, False), (0, True), (2, False),
                                                                             (2, True)]
    assert rf.dataloader[0]["samples_per_s"] > 0 and rf.dataloader[1]["samples_per_s"] is None
    # every reason is written as keys (the text beside them is a courtesy): none of them a problem to the reader
    assert rf.problems == ()
    keys = {f: [p.key for p in parts] for f, parts in m.unmeasured_parts.items()}
    assert keys["peak_allocated_bytes"] == ["cpu_memory"] and keys["power_w"] == ["no_gpu_nvml"]
    assert keys["mfu"] == ["no_profile_cpu"] and keys["grad_scaler_skips"] == ["no_grad_scaler"]
    assert all(parts and all(p.key for p in parts) for parts in m.unmeasured_parts.values())
    assert [[p.key for p in parts] for parts in rf.max_batch_reasons] == [["cpu_no_memory_limit"]] * 3
    assert [[p.key for p in parts] for parts in rf.dataloader_reasons] == [[], ["pin_memory_cpu"], [], ["pin_memory_cpu"]]
    assert all([p.key for p in parts] == ["noisy_steps"] for parts in rf.warning_parts)
    assert rf.environment["fp32_precision"]["fp32"]
    # schema /2: the software, the command and the requested sweep; nothing missing in a complete file
    assert rf.schema == "trainplan.bench/2" and rf.missing == ()
    assert all("noisy step times" in w for w in rf.warnings)  # 3 CPU steps may well be noisy; nothing else warns
    assert len(rf.warnings) == sum(m.noisy for m in rf.measurements)
    env = rf.environment
    assert env["trainplan_version"] and env["cpu_threads"]["torch_num_threads"] >= 1
    assert env["cudnn"] is not None or "cudnn" in env["unmeasured"]
    command = rf.settings["command"]
    assert command[1:6] == ["-m", "bench", "run", "--model", "mlp"] and command[-2:] == ["--events", "json"]
    assert rf.settings["requested"] == {"precisions": ["fp32", "bf16", "fp16"], "batch_sizes": [4, 8], "steps": 3,
                                        "warmup": 1, "max_batch": True, "dataloader": True}
    assert len(m.step_time_s.raw) == 3 and all(isinstance(x.noisy, bool) for x in rf.measurements)
    assert rf.max_batch[0]["safe_batch"] is None and rf.max_batch[0]["safe_confirmed"] is False
    good, problems = scan_results(tmp_path)
    assert len(good) == 1 and not problems
    assert "No GPU used" in r.stderr and "results:" in r.stderr
    assert "precision  batch" in r.stderr  # the table goes to stderr when stdout carries JSON


def test_bad_input_exits_2_with_one_clear_message_in_a_subprocess(tmp_path):
    r = bench("run", "--model", "mlp", "--batch", "0", "--out", str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.strip() == "bench run: --batch: got 0; expected an integer >= 1"
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("args, words", [
    (["--precision", "fp64"], ["--precision", "fp64", "fp32, tf32, fp16, bf16"]),
    (["--batch", "8,x"], ["--batch", "'x'"]),
    (["--batch", "-4"], ["--batch", "-4"]),
    (["--steps", "0"], ["--steps"]),
    (["--model", "resnet9000"], ["--model", "resnet9000", "resnet50", "package.module:callable"]),
    (["--model", "no_such_pkg.mod:build"], ["--model", "no_such_pkg", "Custom models"]),
    (["--model", "tests.test_bench_cli:broken_workload"], ["my model is broken"]),
    (["--model", "gpt2", "--model-option", "seq_len=99999"], ["--model-option", "seq_len"]),
])
def test_bad_input_names_the_problem(tmp_path, capsys, args, words):
    argv = ["run", "--model", "mlp", "--out", str(tmp_path), "--quiet", *args]
    assert bench_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bench run: ") and len(err.splitlines()) == 1
    for word in words:
        assert word in err


def test_unwritable_out_exits_2(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert bench_main(["run", "--model", "mlp", "--out", str(blocker / "sub"), "--quiet"]) == 2
    assert "--out" in capsys.readouterr().err


def test_sigint_keeps_a_partial_valid_file(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "run", "--model", "mlp", "--precision", "fp32,bf16",
         "--batch", ",".join(map(str, range(1, 41))), "--steps", "200", "--warmup", "1", "--phase-steps", "0",
         "--out", str(tmp_path), "--progress-json", "--quiet"],  # the older flag: the same stream
        cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = EventReader()
    try:
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            event = reader.feed(line)
            assert reader.problem is None, line
            if event is not None and event["event"] == "progress":
                break
            assert time.monotonic() < deadline
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
    finally:
        proc.kill()
    stderr = proc.stderr.read()
    assert rc == 130, stderr
    assert "interrupted" in stderr and "partial" in stderr
    rf = read_result_file(only_file(tmp_path))
    assert rf.partial
    assert 1 <= len(rf.measurements) < 80 and all(m.status == "ok" for m in rf.measurements)
    # The file names every requested point it has no row for, and why.
    done = {(m.precision, m.batch_size) for m in rf.measurements}
    assert {(x.precision, x.batch_size) for x in rf.missing} == {
        (p, b) for p in ("fp32", "bf16") for b in range(1, 41)} - done
    assert all([p.key for p in x.reason_parts] == ["interrupted"] for x in rf.missing)


# ------------------------------------------------------------------ in-process runs

def test_oom_mid_sweep_never_ends_it_and_custom_models_work(tmp_path, capsys):
    argv = ["run", "--model", "tests.test_bench_cli:oom_workload", "--precision", "fp32,bf16", "--batch",
            "4,16,32", "--steps", "2", "--warmup", "1", "--phase-steps", "1", "--out", str(tmp_path)]
    assert bench_main(argv) == 0
    rf = read_result_file(only_file(tmp_path))
    assert [m.status for m in rf.measurements] == ["ok", "oom", "oom", "ok", "oom", "oom"]
    (why,) = rf.measurements[1].reason_parts
    assert why.key == "step_failed" and "can't allocate memory" in why.params["error"]
    assert rf.model["family"] == "custom" and rf.model["params"] == 8 * 16 + 16 + 16 * 2 + 2
    assert rf.model["flops_per_sample"] > 0 and "8 float32" in rf.model["input_desc"]
    out = capsys.readouterr()
    assert "oom" in out.out and "continuing" in out.err


def test_list_and_detect(capsys):
    assert bench_main(["list"]) == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "25,557,032" in out and "Custom models" in out
    assert bench_main(["detect", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["device"] in ("cpu", "cuda") and "nvml_available" in facts


def test_unknown_subcommand_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_main(["frobnicate"])
    assert exc.value.code == 2
    assert "run" in capsys.readouterr().err


# ------------------------------------------------------------------ sweep with a fake GPU

def fake_gpu_sweep(tmp_path, batches: str, max_batch: bool):
    parser = argparse.ArgumentParser()
    cli_run.add_arguments(parser)
    args = parser.parse_args(["--model", "mlp", "--precision", "fp32", "--batch", batches, "--steps", "3",
                              "--warmup", "1", "--phase-steps", "1", "--out", str(tmp_path), "--quiet"]
                             + (["--max-batch"] if max_batch else []))
    sweep = Sweep(args, cli_run.validate(args))
    sweep.prepare()
    clock = FakeClock()
    mem = FakeMemory(500 * MiB, 40 * MiB, 16 * 1024 * MiB, step_bytes=600 * MiB)
    dev = FakeDevice(clock, mem)
    sweep.device, sweep.workload, sweep.make_optimizer = dev, fake_workload(clock, dev, memory=mem), sgd
    sweep.snapshot = {k: v.clone() for k, v in sweep.workload.model.state_dict().items()}
    return sweep, mem


def test_max_batch_through_the_sweep_uses_the_sweep_points(tmp_path):
    sweep, mem = fake_gpu_sweep(tmp_path, "64,128,256", max_batch=True)
    sweep.run()
    sweep.save(partial=False)
    rf = read_result_file(sweep.path)
    entry = rf.max_batch[0]
    assert entry["known_sizes"] == [64, 128, 256]
    assert mem.true_max() * 0.99 - 1 <= entry["max_batch"] <= mem.true_max()
    assert 1 <= len(entry["trials"]) <= 3 and entry["converged"]
    assert all(set(t) == {"batch_size", "status"} for t in entry["trials"])
    assert [m.peak_allocated_bytes for m in rf.measurements] == [mem.peak(b) for b in (64, 128, 256)]


def test_max_batch_reports_a_safe_batch_below_the_largest_confirmed_by_a_repeat_run(tmp_path):
    sweep, mem = fake_gpu_sweep(tmp_path, "64,128", max_batch=True)
    sweep.run()
    sweep.save(partial=False)
    entry = read_result_file(sweep.path).max_batch[0]
    largest, safe = entry["max_batch"], entry["safe_batch"]
    assert safe == safe_batch_size(largest) < largest and safe % 8 == 0 and entry["safe_confirmed"] is True
    assert entry["safe_trials"] == [{"batch_size": safe, "status": "ok"}] and "repeat run" in entry["safe_method"]
    assert "safe" in summary_table(sweep.doc["measurements"], sweep.doc["max_batch"])


def test_batch_auto_sweeps_up_to_the_safe_batch(tmp_path):
    sweep, mem = fake_gpu_sweep(tmp_path, "auto", max_batch=False)
    (point,) = sweep.missing()
    assert (point["precision"], point["batch_size"]) == ("fp32", None)
    assert point["reason_keys"] == [{"key": "batch_not_chosen", "params": {}}, {"key": "in_progress", "params": {}}]
    sweep.run()
    entry = sweep.data["max_batch"][0]
    safe = entry["safe_batch"]
    assert entry["safe_confirmed"] and safe < entry["max_batch"]
    assert [m["batch_size"] for m in sweep.data["measurements"]] == [safe // 8, safe // 4, safe // 2, safe]
    assert all(m["status"] == "ok" for m in sweep.data["measurements"])
    assert sweep.data["settings"]["requested"]["batch_sizes"] == "auto" and sweep.missing() == []


def test_a_partial_file_says_what_is_missing_while_running_and_after_a_crash(tmp_path, monkeypatch):
    sweep, _ = fake_gpu_sweep(tmp_path, "16,32,64", max_batch=False)
    rf = read_result_file(sweep.path)  # as written by prepare(): nothing measured yet
    assert rf.partial and [(x.precision, x.batch_size) for x in rf.missing] == [("fp32", 16), ("fp32", 32),
                                                                                   ("fp32", 64)]
    assert [p.key for p in rf.missing[0].reason_parts] == ["in_progress"]
    measure = Sweep.measure

    def crash_after_one(self, precision, batch):
        if self.doc["measurements"]:
            raise RuntimeError("device lost")
        return measure(self, precision, batch)

    monkeypatch.setattr(Sweep, "measure", crash_after_one)
    monkeypatch.setattr(cli_run, "validate", lambda args: sweep.cfg)
    monkeypatch.setattr("bench.sweep.Sweep.prepare", lambda self: _adopt(self, sweep))
    assert cli_run.main(sweep.args) == 1
    rf = read_result_file(sweep.path)
    assert rf.partial and [m.batch_size for m in rf.measurements] == [16]
    assert [(x.batch_size, [(p.key, dict(p.params)) for p in x.reason_parts]) for x in rf.missing] == [
        (b, [("run_failed", {"error": "RuntimeError: device lost"})]) for b in (32, 64)]
    assert rf.problems == ()


def _adopt(new: Sweep, prepared: Sweep) -> None:
    """Give the Sweep that cli_run.main builds the fake GPU and the file of one prepared by fake_gpu_sweep."""
    new.__dict__.update({k: v for k, v in prepared.__dict__.items() if k not in ("args", "cfg")})


def test_list_does_not_import_torch():
    """`bench list` reads the committed zoo catalog: torch (seconds to import, absent without the bench extra) stays
    out of the process, and the listing is the zoo's own."""
    code = ("import runpy, sys; sys.argv = ['bench', 'list']\n"
            "try:\n    runpy.run_module('bench', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as done:\n    assert not done.code, done.code\n"
            "assert 'torch' not in sys.modules, 'bench list imported torch'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert "resnet50" in out.stdout and "25,557,032" in out.stdout


def test_a_cpu_run_without_out_writes_under_trainplan_home_not_results(tmp_path):
    """A CPU run is a smoke test of this machine: its file goes to $TRAINPLAN_HOME/results/cpu/, never into the
    repository's results/ (REAL GPU data only, committed); an explicit --out still wins."""
    before = {p for p in (ROOT / "results").rglob("*") if p.is_file()}
    env = {**ENV, "TRAINPLAN_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "-m", "bench", "run", "--model", "mlp", "--cpu-only", "--precision", "fp32",
                        "--batch", "4", "--steps", "1", "--warmup", "1", "--phase-steps", "0", "--quiet"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    written = only_file(tmp_path / "home" / "results")
    assert read_result_file(written).measurements[0].status == "ok"
    assert {p for p in (ROOT / "results").rglob("*") if p.is_file()} == before
    assert str(tmp_path / "home" / "results") in r.stderr  # the notice says where the file goes


def test_the_default_out_of_a_cpu_run_is_the_user_home(tmp_path, monkeypatch):
    from planner.inputs import shipped

    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path))
    assert shipped.bench_out_dir(cpu=True) == tmp_path / "results"
    assert shipped.bench_out_dir() == (shipped.RESULTS_DIR if shipped.IN_CHECKOUT else tmp_path / "results")
    assert cli_run.default_root(cpu=True) == tmp_path / "results" and (tmp_path / "results").is_dir()
    from bench import ddp  # a gloo (CPU) data-parallel run likewise

    assert ddp.default_root("cpu") == tmp_path / "results"
