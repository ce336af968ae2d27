"""Tests for bench.zoo: published parameter counts, CPU training steps, FLOPs, catalog and custom loader."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest
import torch

from bench import zoo
from planner.inputs.zoo_catalog import CATALOG_PATH, load_catalog

TORCHVISION = "torchvision.models docs, weights meta 'num_params' (pytorch.org/vision/stable/models.html)"
HF = "Hugging Face transformers {cls}.from_pretrained('{repo}').num_parameters()"

# (model id, options, exact parameter count, source)
PUBLISHED_PARAMS = [
    ("resnet18", {}, 11_689_512, f"{TORCHVISION}: ResNet18_Weights.IMAGENET1K_V1"),
    ("resnet50", {}, 25_557_032, f"{TORCHVISION}: ResNet50_Weights.IMAGENET1K_V1"),
    ("vit_b16", {}, 86_567_656, f"{TORCHVISION}: ViT_B_16_Weights.IMAGENET1K_V1"),
    ("bert_base", {}, 109_482_240, HF.format(cls="BertModel", repo="bert-base-uncased") + " (encoder + pooler)"),
    ("bert_large", {}, 335_141_888, HF.format(cls="BertModel", repo="bert-large-uncased") + " (encoder + pooler)"),
    ("gpt2", {}, 124_439_808, HF.format(cls="GPT2LMHeadModel", repo="gpt2") + " (tied head)"),
    ("gpt2_medium", {}, 354_823_168, HF.format(cls="GPT2LMHeadModel", repo="gpt2-medium") + " (tied head)"),
    ("llama", {"preset": "7b"}, 6_738_415_616, HF.format(cls="LlamaForCausalLM", repo="huggyllama/llama-7b")),
    ("llama", {"preset": "13b"}, 13_015_864_320, HF.format(cls="LlamaForCausalLM", repo="huggyllama/llama-13b")),
    # Zaremba et al. 2014 "medium" (650 units, 2 layers, PTB vocab 10k, untied); the paper gives no count.
    # Derived: embedding 10000*650 + 2 layers x (4*650*(650+650) weights + 2*4*650 biases; PyTorch keeps b_ih
    # and b_hh) + decoder 650*10000 + 10000.
    ("lstm_lm", {}, 10000 * 650 + 2 * (4 * 650 * 1300 + 2 * 4 * 650) + 650 * 10000 + 10000, "derived, see comment"),
    # Our own quick-run models: counts derived from their layer shapes.
    ("mlp", {}, (784 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10), "derived: 784-512-512-10"),
    ("small_cnn", {}, (3 * 32 * 9 + 32) + (32 * 64 * 9 + 64) + (4096 * 128 + 128) + (128 * 10 + 10),
     "derived: conv3-32, conv32-64, fc4096-128, fc128-10"),
]

# Small shapes so every model's CPU step is quick (whole file well under a minute on 2 cores).
FAST_OPTIONS = {
    "resnet18": {"image_size": 64},
    "resnet50": {"image_size": 64},
    "bert_base": {"seq_len": 16},
    "bert_large": {"seq_len": 16},
    "gpt2": {"seq_len": 16},
    "gpt2_medium": {"seq_len": 16},
    "llama": {"seq_len": 32},
    "lstm_lm": {"seq_len": 8},
}


def test_zoo_ids_are_the_design_ids():
    assert zoo.list_models() == ["resnet18", "resnet50", "vit_b16", "bert_base", "bert_large", "gpt2",
                                 "gpt2_medium", "llama", "lstm_lm", "mlp", "small_cnn"]


@pytest.mark.parametrize(("model_id", "options", "params", "source"), PUBLISHED_PARAMS,
                         ids=[f"{m}-{o.get('preset', 'default')}" for m, o, _, _ in PUBLISHED_PARAMS])
def test_param_count_equals_published(model_id, options, params, source):
    assert zoo.describe(model_id, **options).params == params, source


def llama_param_count(layers: int, hidden: int, ffn: int, vocab: int) -> int:
    """Embedding + untied head (2Vh) + per layer 4h² attention, 3hf SwiGLU, 2h RMSNorm + final RMSNorm h
    (no biases, no grouped KV, so the head count does not change the count)."""
    return 2 * vocab * hidden + layers * (4 * hidden * hidden + 3 * hidden * ffn + 2 * hidden) + hidden


def test_llama_analytic_count_matches_built_model():
    for preset, shape in zoo.LLAMA_PRESETS.items():
        args = {k: shape[k] for k in ("layers", "hidden", "ffn", "vocab")}
        assert zoo.describe("llama", preset=preset).params == llama_param_count(**args), preset
    custom = {"layers": 3, "hidden": 256, "ffn": 704, "vocab": 1000}
    assert zoo.describe("llama", heads=4, **custom).params == llama_param_count(**custom)


def test_describe_llama_7b_uses_meta_and_palm_flops():
    entry = zoo.describe("llama", preset="7b")
    assert entry.params == 6_738_415_616  # LLaMA-7B, HF LlamaForCausalLM.num_parameters()
    assert entry.transformer == {"layers": 32, "hidden": 4096, "heads": 32, "seq_len": 2048, "vocab": 32000,
                                 "mlp": "swiglu", "ffn": 11008}
    assert entry.flops_per_sample == (6 * entry.params + 12 * 32 * 4096 * 2048) * 2048
    assert entry.largest_layer_params == 32000 * 4096


@pytest.mark.parametrize("model_id", zoo.list_models())
def test_forward_backward_on_cpu_gives_finite_loss(model_id):
    workload = zoo.build(model_id, **FAST_OPTIONS.get(model_id, {}))
    model = workload.model
    assert sum(p.numel() for p in model.parameters()) == zoo.describe(model_id).params
    batch = workload.make_batch(2, torch.device("cpu"))
    loss = workload.loss_fn(model, batch)
    assert loss.ndim == 0 and math.isfinite(loss.item())
    loss.backward()
    # Every parameter takes part in the loss (DDP would otherwise fail) and nothing was left uninitialised.
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p).all() and torch.isfinite(p.grad).all(), name
    for name, buffer in model.named_buffers():
        assert torch.isfinite(buffer.float()).all(), name


def test_make_batch_is_seeded():
    workload = zoo.build("gpt2", seq_len=8, device="meta")
    a, b = (zoo.build("gpt2", seq_len=8).make_batch(2, torch.device("cpu")) for _ in range(2))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    x, y = a
    assert x.shape == y.shape == (2, 8) and torch.equal(x[:, 1:], y[:, :-1])
    assert workload.make_batch(2, torch.device("meta"))[0].device.type == "meta"


def test_flops_counter_matches_published_cnn_and_vit_figures():
    # torchvision's "GFLOPS" column counts multiply-adds: ResNet-50 4.09, ViT-B/16 17.56 (forward, 224x224);
    # model FLOPs = 2 per multiply-add, x3 for forward + backward (ESTIMATION.md §2: ResNet-50 ≈ 2.46e10).
    # The counter skips the first layer's input gradient and non-matmul ops, hence the tolerance.
    assert zoo.describe("resnet50").flops_per_sample == pytest.approx(4.09e9 * 2 * 3, rel=0.02)
    assert zoo.describe("vit_b16").flops_per_sample == pytest.approx(17.56e9 * 2 * 3, rel=0.01)


def test_gpt2_flops_use_palm_formula():
    entry = zoo.describe("gpt2")
    n, layers, hidden, s = 124_439_808, 12, 768, 1024
    assert entry.flops_per_sample == (6 * n + 12 * layers * hidden * s) * s
    assert "PaLM" in entry.flop_convention


def test_cpu_sdpa_is_counted_like_meta():
    # CPU's fused SDPA kernel counts 0 in FlopCounterMode unless we map it (ESTIMATION.md §2); meta runs the
    # math path through counted bmm ops, and the two must agree.
    cpu = zoo.count_flops_per_sample(zoo.build("gpt2", seq_len=16, dropout=0.0))
    meta = zoo.count_flops_per_sample(zoo.build("gpt2", seq_len=16, dropout=0.0, device="meta"))
    assert cpu == meta


def test_cpu_sdpa_flops_exact():
    from bench.models_transformer import Attention

    s, h, heads = 16, 32, 4
    attention = Attention(h, heads, bias=False, fused=True)
    workload = zoo.Workload(attention, lambda b, device: (torch.randn(b, s, h, device=device),),
                            lambda model, batch: model(batch[0]).square().mean())
    mac = 2  # FLOPs per multiply-add
    qkv, out, sdpa = mac * s * h * 3 * h, mac * s * h * h, mac * heads * s * s * (h // heads) * 2
    # backward: weight gradients of both projections, the input gradient of `out` only (x needs none), and
    # twice the attention forward (dQ, dK, dV, dP)
    expected = (qkv + out + sdpa) + (qkv + out) + out + 2 * sdpa
    assert zoo.count_flops_per_sample(workload) == expected


def test_count_flops_leaves_no_gradients():
    workload = zoo.build("mlp")
    assert zoo.count_flops_per_sample(workload) > 0
    assert all(p.grad is None for p in workload.model.parameters())


def test_committed_catalog_is_fresh():
    # Regenerate with: python -m bench.zoo --write-catalog
    committed = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    assert committed == zoo.catalog(), "planner/inputs/zoo_catalog.json is stale: run python -m bench.zoo --write-catalog"


def test_load_catalog_is_torch_free_and_keyed_by_id():
    code = ("import sys; from planner.inputs.zoo_catalog import load_catalog; c = load_catalog(); "
            "assert 'torch' not in sys.modules; print(list(c))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(zoo.list_models())
    assert load_catalog()["resnet50"]["params"] == 25_557_032


def test_write_catalog(tmp_path):
    path = zoo.write_catalog(tmp_path / "catalog.json")
    assert list(load_catalog(path)) == zoo.list_models()


def test_unknown_model_lists_valid_ids():
    with pytest.raises(zoo.UnknownModelError) as info:
        zoo.build("resnet101")
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    assert "resnet101" in str(info.value) and "resnet50" in str(info.value) and "small_cnn" in str(info.value)
    with pytest.raises(zoo.UnknownModelError):
        zoo.describe("gpt3")


def test_bad_options_are_value_errors():
    with pytest.raises(ValueError, match="unknown option.*colour"):
        zoo.build("gpt2", colour="red")
    with pytest.raises(ValueError, match="seq_len"):
        zoo.build("gpt2", seq_len=2048, device="meta")
    with pytest.raises(ValueError, match="preset"):
        zoo.build("llama", preset="70b")
    with pytest.raises(ValueError, match="divisible"):
        zoo.build("llama", hidden=100, heads=3, device="meta")


@pytest.fixture
def custom_module(tmp_path, monkeypatch):
    (tmp_path / "my_workloads.py").write_text(textwrap.dedent("""
        import torch
        from bench.zoo import Workload

        def _batch(batch_size, device):
            return torch.ones(batch_size, 4, device=device), torch.zeros(batch_size, dtype=torch.long, device=device)

        def _loss(model, batch):
            return torch.nn.functional.cross_entropy(model(batch[0]), batch[1])

        def as_tuple():
            return torch.nn.Linear(4, 3), _batch, _loss

        def as_workload():
            return Workload(torch.nn.Linear(4, 3), _batch, _loss)

        def wrong_shape():
            return torch.nn.Linear(4, 3)

        not_callable = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_workloads"
    sys.modules.pop("my_workloads", None)


@pytest.mark.parametrize("attr", ["as_tuple", "as_workload"])
def test_load_custom_good_specs(custom_module, attr):
    workload = zoo.load_custom(f"{custom_module}:{attr}")
    loss = workload.loss_fn(workload.model, workload.make_batch(2, torch.device("cpu")))
    assert math.isfinite(loss.item())
    # 2 FLOPs per multiply-add of the 4x3 matmul, forward + weight gradient (the input needs no gradient)
    assert zoo.count_flops_per_sample(workload) == 2 * 4 * 3 * 2


@pytest.mark.parametrize(("spec", "match"), [
    ("my_workloads", "expected 'package.module:callable'"),
    ("no_such_module_xyz:f", "cannot load"),
    ("my_workloads:missing", "cannot load"),
    ("my_workloads:not_callable", "not callable"),
    ("my_workloads:wrong_shape", "expected a Workload or a tuple"),
])
def test_load_custom_bad_specs(custom_module, spec, match):
    with pytest.raises(ValueError, match=match) as info:
        zoo.load_custom(spec)
    assert spec in str(info.value)
