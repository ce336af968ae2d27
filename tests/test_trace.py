"""bench trace: traced result files, hand-checked peaks, CUDA behaviours, untraceable models, no real memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench import trace
from bench.trace_core import CUDA_BLOCK_BYTES
from planner.inputs.resultfile import read_result_file

ROOT = Path(__file__).resolve().parent.parent
MLP_PARAMS = 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10  # 669,706


def _doc(*argv: str) -> dict:
    """Trace in-process and return the result document (nothing written)."""
    args = trace.build_parser().parse_args([*argv, "--out", "-"])
    doc, code = trace.run_traces(args)
    assert code == 0
    return doc


def _row(doc: dict, precision: str | None = None, batch: int | None = None) -> dict:
    rows = [m for m in doc["measurements"]
            if (precision is None or m["precision"] == precision) and (batch is None or m["batch_size"] == batch)]
    assert len(rows) == 1
    return rows[0]


def _rounded(n: int) -> int:
    return -(-n // CUDA_BLOCK_BYTES) * CUDA_BLOCK_BYTES


# --- custom workloads for the CLI tests (loaded by the tracer as tests.test_trace:...) -------------------------
class _ValueGate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        if h.mean() > 0:  # data-dependent control flow: fake tensors have no values
            h = self.b(h)
        return h


def data_dependent_workload():
    def make_batch(n, device):
        return torch.randn(n, 8, device=device), torch.randint(0, 8, (n,), device=device)

    return _ValueGate(), make_batch, lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1])


# --- the result file ------------------------------------------------------------------------------------------
def test_traced_file_is_valid_and_says_what_it_is(tmp_path, capsys):
    argv = ["--model", "mlp", "--precision", "fp32,bf16", "--batch", "2,64", "--out", str(tmp_path)]
    assert trace.cli(argv) == 0
    files = list((tmp_path / "traced").glob("mlp-*.json"))
    assert len(files) == 1 and "wrote" in capsys.readouterr().out
    result = read_result_file(files[0])  # the planner's validating reader
    assert result.is_traced and result.device == "cpu" and result.settings["emulates"] == "cuda"
    assert result.schema == "trainplan.bench/2" and not result.partial and result.missing == ()
    assert result.settings["requested"] == {"precisions": ["fp32", "bf16"], "batch_sizes": [2, 64], "steps": 1,
                                            "warmup": 0}
    assert result.settings["command"][1:] == ["-m", "bench.trace", *argv] and result.environment["trainplan_version"]
    assert result.environment["cudnn"] is not None or result.environment["unmeasured"]["cudnn"]
    assert result.model["params"] == MLP_PARAMS
    # FLOPs by hand: forward 2*(784*512 + 512*512 + 512*10) = 1,337,344; backward = weight grads (same) + input
    # grads of layers 2 and 3, 2*(512*512 + 512*10) = 534,528 (the first layer's input needs no gradient).
    assert result.model["flops_per_sample"] == 2 * 1_337_344 + 534_528
    assert {(m.precision, m.batch_size) for m in result.measurements} == {
        ("fp32", 2), ("fp32", 64), ("bf16", 2), ("bf16", 64)}
    for m in result.measurements:
        assert m.source == "traced" and m.status == "ok" and m.step_time_s is None
        assert "step_time_s" in m.unmeasured and m.peak_allocated_bytes > m.static_bytes > 0
        assert set(m.memory_breakdown_bytes) == {"weights", "grads", "optimizer", "activations", "transients"}
        # the split of the peak (harness definitions): static + max(activations, grads) + transients
        parts = m.memory_breakdown_bytes
        assert m.static_bytes + max(parts["activations"], parts["grads"]) + parts["transients"] == \
            pytest.approx(m.peak_allocated_bytes)


def test_mlp_peak_equals_states_temporary_and_activations_by_hand():
    """Hand computation (docs/methods.md#memory), fp32, AdamW foreach, b=256: the peak is optimizer.step() holding
    weights 4P + grads 4P + exp_avg/exp_avg_sq 8P + the foreach sqrt(v) temporary 4P, plus the batch; the
    activations are what forward keeps: Linear1/ReLU (in place) and Linear2/ReLU outputs (b x 512 each) and the
    log-softmax (b x 10), fp32."""
    b = 256
    row = _row(_doc("--model", "mlp", "--precision", "fp32", "--batch", str(b)))
    batch_bytes = b * 784 * 4 + b * 8
    assert row["peak_allocated_bytes"] == pytest.approx(20 * MLP_PARAMS + batch_bytes, rel=0.02)
    assert row["static_bytes"] == pytest.approx(12 * MLP_PARAMS + batch_bytes, rel=0.02)
    parts = row["memory_breakdown_bytes"]
    assert parts["weights"] == pytest.approx(4 * MLP_PARAMS, rel=0.01)
    assert parts["grads"] == pytest.approx(4 * MLP_PARAMS, rel=0.01)
    assert parts["optimizer"] == pytest.approx(8 * MLP_PARAMS, rel=0.01)
    assert parts["transients"] == pytest.approx(4 * MLP_PARAMS, rel=0.02)
    assert parts["activations"] == pytest.approx(b * (512 + 512 + 10) * 4, rel=0.02)


def test_bf16_activations_are_smaller_than_fp32():
    doc = _doc("--model", "gpt2", "--seq-len", "256", "--precision", "fp32,bf16", "--batch", "16")
    fp32 = _row(doc, "fp32")["memory_breakdown_bytes"]["activations"]
    bf16 = _row(doc, "bf16")["memory_breakdown_bytes"]["activations"]
    assert bf16 < 0.92 * fp32


def test_checkpointing_lowers_activation_memory():
    """fp32 GPT-2: 12 blocks x 66 sbh + the loss's 4 s b V without checkpointing; with it each block keeps only
    its input (4 sbh) and the loss part stays: about a third."""
    args = ("--model", "gpt2", "--seq-len", "128", "--precision", "fp32", "--batch", "8")
    plain_doc, ckpt_doc = _doc(*args), _doc(*args, "--checkpointing")
    plain, ckpt = _row(plain_doc), _row(ckpt_doc)
    assert ckpt_doc["settings"]["activation_checkpointing"] is True
    assert ckpt["memory_breakdown_bytes"]["activations"] < 0.4 * plain["memory_breakdown_bytes"]["activations"]
    assert ckpt["peak_allocated_bytes"] < plain["peak_allocated_bytes"]
    # model FLOPs leave the recomputation out
    assert ckpt_doc["model"]["flops_per_sample"] == pytest.approx(plain_doc["model"]["flops_per_sample"])


def test_sdpa_runs_as_cuda_fused_kernel_without_score_matrix():
    """GPT-2 trains with attention dropout; CPU would take SDPA's math path (s x s scores and mask). The CUDA
    emulation keeps activations linear in s; per layer Korthikanti's fp32 SDPA-with-dropout 66 s*b*h."""
    def acts(seq: int, emulate: str) -> int:
        doc = _doc("--model", "gpt2", "--seq-len", str(seq), "--precision", "fp32", "--batch", "2",
                   "--emulate", emulate)
        return _row(doc)["memory_breakdown_bytes"]["activations"]

    assert acts(256, "cuda") / acts(128, "cuda") == pytest.approx(2.0, rel=0.01)
    assert acts(256, "cpu") / acts(128, "cpu") > 2.1
    # activations(s) = 12 layers x 66 sbh + fp32 log-softmax 4 s b V + embedding output and final LN (~9 sbh)
    s, b, h, vocab = 128, 2, 768, 50257
    assert acts(128, "cuda") == pytest.approx((12 * 66 + 9) * s * b * h + 4 * s * b * vocab, rel=0.02)


def test_eager_attention_keeps_the_score_matrix_as_the_formula_says():
    """--attention eager: explicit softmax(QK^T)V keeps s x s scores; fp32 with dropout, Korthikanti's unfused
    66 sbh + 9 a s^2 b per layer (softmax output, dropout mask and dropped probabilities) over the fused 66 sbh."""
    def acts(attention: str) -> tuple[int, str]:
        doc = _doc("--model", "gpt2", "--seq-len", "128", "--precision", "fp32", "--batch", "2",
                   "--attention", attention)
        return _row(doc)["memory_breakdown_bytes"]["activations"], doc["settings"]["attention"]

    (eager, said), (fused, _) = acts("eager"), acts("sdpa")
    s, b, a = 128, 2, 12
    assert said == "eager"
    assert eager - fused == pytest.approx(12 * 9 * a * s * s * b, rel=0.03)


def test_lora_trains_only_the_adapters():
    row_doc = _doc("--model", "gpt2", "--seq-len", "64", "--precision", "bf16", "--batch", "1",
                   "--adapter", "lora:16")
    # r * (d_in + d_out) per adapted matrix (docs/methods.md#memory): qkv 768->2304 and out 768->768, 12 layers
    assert row_doc["model"]["trainable_params"] == 12 * 16 * ((768 + 2304) + (768 + 768))
    assert row_doc["settings"]["adapter"] == {"kind": "lora", "rank": 16, "targets": "attention",
                                              "base_dtype": "bf16"}
    assert _row(row_doc)["memory_breakdown_bytes"]["optimizer"] < 0.02 * 8 * 124_439_808


def test_cuda_autocast_table_covers_this_torch_build_and_is_undone():
    from bench.trace_cuda import cuda_policy_table, registered_autocast_ops

    cuda_ops, _ = registered_autocast_ops()
    assert not cuda_ops - set(cuda_policy_table())  # every CUDA autocast op has a known policy
    _doc("--model", "mlp", "--precision", "bf16", "--batch", "2")
    with torch.autocast("cpu", dtype=torch.bfloat16):  # CPU's own lists are back: layer_norm stays bf16
        out = torch.nn.functional.layer_norm(torch.randn(2, 4, dtype=torch.bfloat16), (4,))
    assert out.dtype == torch.bfloat16
    functional = torch.nn.functional
    assert functional.scaled_dot_product_attention is torch._C._nn.scaled_dot_product_attention
    assert functional.dropout.__module__ == "torch.nn.functional"


def test_the_app_can_call_the_tracer_without_torch():
    """The app runs the tracer through trace_in_subprocess and must not import torch itself (DESIGN.md)."""
    code = ("import sys; sys.modules['torch'] = None; from bench import trace; "
            "trace.build_parser().parse_args(['--model', 'gpt2']); print(trace.trace_in_subprocess.__name__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and "trace_in_subprocess" in proc.stdout, proc.stderr


# --- bad input and faults ---------------------------------------------------------------------------------------
def test_data_dependent_model_gets_a_clear_message_and_exit_2(tmp_path):
    code, out, err = trace.trace_in_subprocess(
        ["--model", "tests.test_trace:data_dependent_workload", "--batch", "2", "--out", str(tmp_path)],
        timeout_s=120)
    assert code == 2, err
    assert "needs tensor values" in err and "aten._local_scalar_dense" in err
    assert "test_trace.py" in err and "if h.mean() > 0" in err
    assert "python -m bench run --model tests.test_trace:data_dependent_workload" in err
    assert not (tmp_path / "traced").exists()


@pytest.mark.parametrize("argv, field", [
    (["--model", "gpt2", "--precision", "fp8"], "--precision"),
    (["--model", "nosuch"], "--model"),
    (["--model", "gpt2", "--optimizer", "adam8bit"], "--optimizer"),
    (["--model", "gpt2", "--adapter", "lora:x"], "--adapter"),
    (["--model", "mlp", "--checkpointing", "--batch", "2"], "--checkpointing"),
    (["--model", "mlp", "--emulate", "cpu", "--out", str(ROOT / "results")], "--out"),
    (["--model", "resnet18", "--attention", "eager", "--batch", "2"], "--attention"),
])
def test_bad_input_exits_2_naming_the_field(argv, field, capsys):
    argv = argv if "--out" in argv else [*argv, "--out", "-"]
    assert trace.main(trace.build_parser().parse_args(argv)) == 2
    assert field in capsys.readouterr().err


def test_subprocess_helper_survives_a_hang():
    code, _out, err = trace.trace_in_subprocess(["--model", "mlp", "--batch", "1", "--out", "-"], timeout_s=0.2)
    assert code == 124 and "timed out" in err


def test_7b_is_traced_without_real_memory():
    """The full LLaMA-7B shape (32 layers, hidden 4096) at a short sequence: a >100 GiB step in a small process."""
    # The child's own peak resident memory: VmHWM belongs to its address space (exec starts a new one), whereas
    # getrusage's ru_maxrss can carry over the forking parent's (a large pytest process) on Linux.
    code = ("import json, re, sys; from bench import trace; "
            "args = trace.build_parser().parse_args(sys.argv[1:]); doc, rc = trace.run_traces(args); "
            "hwm = int(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)); "
            "print(json.dumps({'rc': rc, 'peak': doc['measurements'][0]['peak_allocated_bytes'], "
            "'params': doc['model']['params'], 'rss_kib': hwm}))")
    proc = subprocess.run([sys.executable, "-c", code, "--model", "llama", "--model-option", "preset=7b",
                           "--seq-len", "64", "--precision", "bf16", "--batch", "1", "--out", "-"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["params"] == 6_738_415_616
    # AdamW foreach step: 4 + 4 + 8 + 4 bytes per parameter (docs/methods.md#memory: 20 B/param at step())
    assert got["peak"] == pytest.approx(20 * got["params"], rel=0.01)
    assert got["rss_kib"] * 1024 < 2 * 2**30


def test_the_planner_reads_eager_traces_for_eager_scenarios_only():
    from planner.engine.measurements import index_measurements
    from planner.engine.models import resolve_model
    from planner.inputs.resultfile import parse_result
    from planner.inputs.scenario import ModelSpec, TrainingSetup

    files = [parse_result(_doc("--model", "gpt2", "--precision", "fp32", "--batch", "2,4",
                               "--attention", attention), f"{attention}.json") for attention in ("eager", "sdpa")]
    for wanted, expected in ((None, "sdpa.json"), ("sdpa", "sdpa.json"), ("eager", "eager.json")):
        model = resolve_model(ModelSpec(name="gpt2", attention=wanted))
        idx = index_measurements(files, model, TrainingSetup(global_batch=8))
        labels = {p.label for p in idx.peaks[("traced", "fp32")]}
        assert labels and all(expected in label for label in labels), (wanted, labels)


def test_the_trace_counts_kernel_launching_aten_ops_per_phase():
    """The launch floor's kernel count (issue 15): the MLP's forward is 3 linears (addmm; their t() views do not
    count), 2 ReLUs and a log-softmax + nll_loss; the count does not depend on the batch, and 16-bit autocast adds
    its casts. A foreach optimizer op would count once (on CPU fake tensors torch takes the per-parameter path)."""
    doc = _doc("--model", "mlp", "--precision", "fp32,bf16", "--batch", "8,64")
    fp32 = [_row(doc, "fp32", b)["aten_ops"] for b in (8, 64)]
    assert fp32[0] == fp32[1]
    assert set(fp32[0]) == {"forward", "backward", "optimizer"}
    assert 6 <= fp32[0]["forward"] <= 12 and fp32[0]["backward"] > fp32[0]["forward"] and fp32[0]["optimizer"] > 0
    bf16 = _row(doc, "bf16", 8)["aten_ops"]
    assert bf16["forward"] > fp32[0]["forward"]


def test_the_shipped_traces_carry_op_counts_and_the_planner_reads_them():
    from planner.engine.measurements import index_measurements
    from planner.engine.models import resolve_model
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import parse_scenario
    from planner.present.notes import english

    # the shipped traces, plus the earlier /1 resnet50 trace they replaced (kept as a fixture)
    inputs = load_inputs([ROOT / "results" / "traced", ROOT / "tests" / "fixtures" / "traced_v1"],
                         include_user_data=False)
    for rf in inputs.results:
        if rf.schema.endswith("/2"):  # bench trace writes /2; the /1 resnet50 trace predates the count
            assert all(m.aten_ops.get("forward") for m in rf.measurements if m.ok), rf.path
    scenario = parse_scenario({"schema": "trainplan.scenario/1", "name": "t", "model": {"name": "resnet50"},
                               "training": {"global_batch": 32, "optimizer": "sgd_momentum"},
                               "workload": {"dataset_samples": 1000, "epochs": 1}}, "t")
    model = resolve_model(scenario.model, inputs.results, "t")
    idx = index_measurements(inputs.results, model, scenario.training)
    ops, _, label = idx.aten_ops["fp32"]
    assert ops == 408 and label.startswith("resnet50-20261202T")
    # the newer trace supersedes the older one of the same configuration (peaks included)
    assert any(n.params["why"].key == "file_superseded" and ": not used (superseded by the newer trace " in english(n)
               for n in idx.skipped), [english(n) for n in idx.skipped]
    assert all(pt.label.startswith("resnet50-20261202T") for pt in idx.peaks[("traced", "fp32")])


def test_the_trace_splits_forward_and_backward_by_operator_class():
    """Issue 15's roofline by operator class: FLOPs, bytes moved and kernel-launching ops per class. The MLP's
    matmuls carry all of its FLOPs; ReLU, the optimizer-free elementwise ops and the loss carry none; bytes double
    with the batch for activations-only classes and halve for matmuls' activations at 16 bits; the classes' ops add
    up to the forward + backward aten ops (no attention kernel in an MLP)."""
    doc = _doc("--model", "mlp", "--precision", "fp32,bf16", "--batch", "8,64")
    small, large = (_row(doc, "fp32", b) for b in (8, 64))
    for row in (small, large):
        classes = row["op_classes"]
        assert set(classes) == {"matmul", "attention", "elementwise", "embedding_loss"}
        assert classes["matmul"]["flops"] > 0 and classes["attention"] == {"flops": 0, "bytes": 0, "ops": 0}
        assert classes["elementwise"]["flops"] == 0 and classes["embedding_loss"]["flops"] == 0
        assert classes["embedding_loss"]["ops"] >= 2  # log-softmax + nll_loss forward and their backward
        total_ops = sum(c["ops"] for c in classes.values())
        assert total_ops == row["aten_ops"]["forward"] + row["aten_ops"]["backward"]
    # the matmul FLOPs are the model's FLOPs (no recompute), linear in the batch
    assert large["op_classes"]["matmul"]["flops"] == 8 * small["op_classes"]["matmul"]["flops"]
    # elementwise bytes grow with the batch (activations), not with the weights
    assert large["op_classes"]["elementwise"]["bytes"] > 4 * small["op_classes"]["elementwise"]["bytes"]


def test_fused_attention_is_its_own_class_with_the_sdpa_flops():
    """GPT-2 at fp16 on the emulated CUDA path: the fused SDPA kernel is one attention op per call (forward and
    backward: 12 layers -> 24), carrying 3x the forward attention FLOPs, and the matmuls the rest."""
    doc = _doc("--model", "gpt2", "--precision", "fp16", "--batch", "1")
    row = _row(doc, "fp16", 1)
    att = row["op_classes"]["attention"]
    assert att["ops"] == 24 and att["flops"] > 0 and att["bytes"] > 0
    total = sum(c["flops"] for c in row["op_classes"].values())
    assert 0.05 < att["flops"] / total < 0.3


def test_the_shipped_traces_carry_operator_classes():
    inputs_dir = ROOT / "results" / "traced"
    for path in sorted(inputs_dir.glob("*.json")):
        rf = read_result_file(path)
        for m in rf.measurements:
            if m.ok:
                assert set(m.op_classes) == {"matmul", "attention", "elementwise", "embedding_loss"}, path
                assert m.op_classes["matmul"]["flops"] > 0, path


@pytest.mark.parametrize("value, field", [
    ({"conv": {"flops": 1}}, "op_classes.conv"),
    ({"matmul": {"flops": -1}}, "op_classes.matmul.flops"),
    ({"matmul": [1, 2]}, "op_classes.matmul"),
    ([1], "op_classes"),
])
def test_a_bad_op_classes_field_names_itself(tmp_path, value, field):
    from planner.inputs.errors import InputError

    doc = _doc("--model", "mlp", "--precision", "fp32", "--batch", "8")
    doc["measurements"][0]["op_classes"] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_result_file(path)
    assert field in str(exc.value)


def test_a_trace_at_another_sequence_length_neither_supersedes_nor_sizes_the_model():
    """The shipped BERT-large traces at 128 and 384 tokens: a scenario at the zoo's 128 takes its FLOPs and memory
    from the 128 trace (the newer 384 one used to supersede it and lend its FLOPs: 3x the step), a scenario at
    384 from the 384 trace."""
    from planner.engine.measurements import index_measurements
    from planner.engine.models import resolve_model
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import parse_scenario
    from planner.present.notes import english

    inputs = load_inputs([ROOT / "results" / "traced"], include_user_data=False)
    seqs = {(rf.model.get("transformer") or {}).get("seq_len") for rf in inputs.results if rf.model_name == "bert_large"}
    assert {128, 384} <= seqs
    flops = {}
    for seq in (128, 384):
        model = {"name": "bert_large"} if seq == 128 else {
            "name": "bert_large", "transformer": {"layers": 24, "hidden": 1024, "heads": 16, "seq_len": 384,
                                                  "vocab": 30522, "mlp": "gelu", "ffn": 4096}}
        scenario = parse_scenario({"schema": "trainplan.scenario/1", "name": "t", "model": model,
                                   "training": {"global_batch": 32}, "workload": {"dataset_samples": 10, "epochs": 1}},
                                  "t")
        resolved = resolve_model(scenario.model, inputs.results, "t")
        flops[seq] = resolved.flops_per_sample
        idx = index_measurements(inputs.results, resolved, scenario.training)
        used = {pt.label for pts in idx.peaks.values() for pt in pts}
        assert used and all(str(seq) in _trace_seq(inputs, label) for label in used), (seq, used)
        assert not any(n.params["why"].key == "file_superseded" for n in idx.skipped), idx.skipped
        assert not any("superseded" in english(n) for n in idx.skipped), idx.skipped
        assert idx.op_classes["fp16"].at("matmul.flops", 1) > 0
    assert 2.8 < flops[384] / flops[128] < 3.6  # ~3x the tokens (+ attention's s^2)


def _trace_seq(inputs, label: str) -> str:
    rf = next(r for r in inputs.results if r.label == label)
    return str((rf.model.get("transformer") or {}).get("seq_len"))
