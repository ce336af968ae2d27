"""The model zoo: named training workloads (model, synthetic batch, real loss), their catalog and FLOPs."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn

from bench import models_cnn, models_transformer
from planner.inputs.zoo_catalog import ALIASES, canonical_id

CATALOG_PATH = Path(__file__).resolve().parent.parent / "planner" / "inputs" / "zoo_catalog.json"
SEED = 0
MASK_TOKEN_ID = 103  # [MASK] in the bert-base-uncased vocabulary
PALM_CONVENTION = "6*N + 12*L*h*s per token (PaLM, Chowdhery et al. 2022, App. B) x seq_len {seq_len}"
COUNTER_CONVENTION = (
    "FlopCounterMode fwd+bwd (torch.utils.flop_counter: matmul/conv/attention, 2 FLOPs per multiply-add)"
)


@dataclass(frozen=True)
class ZooEntry:
    """Catalog data about one zoo model; plain values only, so it serialises to planner/inputs/zoo_catalog.json."""

    id: str
    family: str  # cnn | vit | encoder | decoder | rnn | mlp
    description: str
    params: int
    input_desc: str
    seq_len: int | None
    # {layers, hidden, heads, kv_heads, seq_len, vocab, mlp: gelu|swiglu, ffn, tie_embeddings, dropout, norm}
    transformer: dict | None
    flops_per_sample: float  # model FLOPs, forward+backward, 2 per multiply-add
    flop_convention: str
    largest_layer_params: int
    activation_precision: str = "input dtype"


@dataclass(frozen=True)
class Workload:
    """What bench runs: `loss_fn(model, make_batch(batch_size, device))` is a real, differentiable loss."""

    model: nn.Module
    make_batch: Callable[[int, torch.device], tuple]
    loss_fn: Callable[[nn.Module, tuple], torch.Tensor]


class UnknownModelError(KeyError, ValueError):
    """A model id that is not in the zoo; the message lists the valid ids."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class _Built:
    workload: Workload
    description: str
    input_desc: str
    seq_len: int | None = None
    transformer: dict | None = None
    palm_flops: bool = False  # model FLOPs by the PaLM formula instead of the counter


# --- construction helpers ------------------------------------------------------------------------------------
@runtime_checkable
class _SelfInitialising(Protocol):
    """A zoo model with its own initialisation (the papers' schemes); others get each layer's default."""

    def init_weights(self) -> None: ...


@runtime_checkable
class _Resettable(Protocol):
    def reset_parameters(self) -> None: ...


def _materialize(factory: Callable[[], nn.Module], device) -> nn.Module:
    """Build on the meta device, then allocate on `device` and initialise once (no double init, and "meta"
    stays free: describing LLaMA-7B allocates nothing)."""
    device = torch.device(device if device is not None else "cpu")
    with torch.device("meta"):
        model = factory()
    if device.type == "meta":
        return model
    model = model.to_empty(device=device)
    with torch.no_grad():
        if isinstance(model, _SelfInitialising):
            model.init_weights()
        else:
            for m in model.modules():
                if isinstance(m, _Resettable):
                    m.reset_parameters()
    return model


def _generator(device: torch.device) -> torch.Generator | None:
    device = torch.device(device)
    if device.type == "meta":
        return None
    return torch.Generator(device=device).manual_seed(SEED)


def _image_batch(channels: int, size: int, classes: int, flat: bool = False):
    def make_batch(batch_size: int, device: torch.device) -> tuple:
        g = _generator(device)
        shape = (batch_size, channels * size * size) if flat else (batch_size, channels, size, size)
        images = torch.randn(shape, generator=g, device=device)
        labels = torch.randint(0, classes, (batch_size,), generator=g, device=device)
        return images, labels

    return make_batch


def _classify_loss(model: nn.Module, batch: tuple) -> torch.Tensor:
    inputs, labels = batch
    return F.cross_entropy(model(inputs), labels)


def _next_token_batch(vocab: int, seq_len: int):
    def make_batch(batch_size: int, device: torch.device) -> tuple:
        tokens = torch.randint(0, vocab, (batch_size, seq_len + 1), generator=_generator(device), device=device)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    return make_batch


def _next_token_loss(model: nn.Module, batch: tuple) -> torch.Tensor:
    tokens, targets = batch
    logits = model(tokens)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _check_seq_len(model_id: str, seq_len: int, limit: int | None) -> None:
    if not isinstance(seq_len, int) or seq_len < 1 or (limit is not None and seq_len > limit):
        raise ValueError(f"{model_id}: seq_len {seq_len!r} must be an integer in 1..{limit or 'any'}")


# --- the models ------------------------------------------------------------------------------------------------
def _resnet(depth: int):
    factory = {18: models_cnn.resnet18, 50: models_cnn.resnet50, 101: models_cnn.resnet101,
               152: models_cnn.resnet152}[depth]

    def build(*, image_size: int = 224, device=None) -> _Built:
        return _Built(
            Workload(_materialize(factory, device), _image_batch(3, image_size, 1000), _classify_loss),
            f"ResNet-{depth} (He et al. 2016), torchvision architecture",
            f"3x{image_size}x{image_size} image, 1000 classes",
        )

    return build


def _vit_b16(*, dropout: float = 0.0, device=None) -> _Built:
    model = _materialize(lambda: models_transformer.VisionTransformer(dropout=dropout), device)
    return _Built(
        Workload(model, _image_batch(3, 224, 1000), _classify_loss),
        "ViT-B/16 (Dosovitskiy et al. 2021), torchvision layout: class token, learned positions",
        "3x224x224 image, 1000 classes",
        seq_len=197,
        transformer={"layers": 12, "hidden": 768, "heads": 12, "kv_heads": 12, "seq_len": 197, "vocab": None,
                     "mlp": "gelu", "ffn": 3072, "tie_embeddings": False,
                     "dropout": dropout, "norm": "layernorm"},
    )


def _bert(name: str, layers: int, hidden: int, heads: int):
    def build(*, seq_len: int = 128, dropout: float = 0.1, device=None) -> _Built:
        _check_seq_len(name, seq_len, 512)
        vocab = 30522
        model = _materialize(lambda: models_transformer.Bert(layers, hidden, heads, vocab, dropout=dropout), device)

        def make_batch(batch_size: int, device: torch.device) -> tuple:
            g = _generator(device)
            ids = torch.randint(0, vocab, (batch_size, seq_len), generator=g, device=device)
            types = (torch.arange(seq_len, device=device) >= seq_len // 2).long().expand(batch_size, -1)
            masked = torch.rand((batch_size, seq_len), generator=g, device=device) < 0.15
            masked[:, 0] = True  # at least one prediction per sequence, so the loss is never 0/0
            mlm_labels = torch.where(masked, ids, torch.full_like(ids, -100))
            nsp_labels = torch.randint(0, 2, (batch_size,), generator=g, device=device)
            inputs = torch.where(masked, torch.full_like(ids, MASK_TOKEN_ID), ids)
            return inputs, types.contiguous(), mlm_labels, nsp_labels

        def loss_fn(model: nn.Module, batch: tuple) -> torch.Tensor:
            ids, types, mlm_labels, nsp_labels = batch
            logits, pooled = model(ids, types)
            mlm = F.cross_entropy(logits.reshape(-1, vocab), mlm_labels.reshape(-1), ignore_index=-100)
            # Parameter-free stand-in for the 2-way NSP classifier (first two pooled features as logits): the
            # pooler gets a gradient (DDP needs every parameter used) and the count stays the published one.
            return mlm + F.cross_entropy(pooled[:, :2], nsp_labels)

        return _Built(
            Workload(model, make_batch, loss_fn),
            f"{name.upper().replace('_', '-')} (Devlin et al. 2019) encoder + pooler; loss: masked-LM through the "
            "tied word embeddings (no bias) + a parameter-free next-sentence term",
            f"{seq_len} token ids (vocab {vocab}, 2 segments), 15% masked",
            seq_len=seq_len,
            transformer={"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads, "seq_len": seq_len,
                         "vocab": vocab, "mlp": "gelu", "ffn": 4 * hidden, "tie_embeddings": True,
                         "dropout": dropout, "norm": "layernorm"},
            palm_flops=True,
        )

    return build


def _gpt2(name: str, size: str, layers: int, hidden: int, heads: int):
    def build(*, seq_len: int = 1024, dropout: float = 0.1, device=None) -> _Built:
        _check_seq_len(name, seq_len, 1024)
        vocab = 50257
        model = _materialize(lambda: models_transformer.GPT2(layers, hidden, heads, vocab, dropout=dropout), device)
        return _Built(
            Workload(model, _next_token_batch(vocab, seq_len), _next_token_loss),
            f"GPT-2 {size} (Radford et al. 2019): {layers} layers, {hidden} hidden, tied embeddings, 1024 context",
            f"{seq_len} token ids (vocab {vocab}), next-token loss",
            seq_len=seq_len,
            transformer={"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads, "seq_len": seq_len,
                         "vocab": vocab, "mlp": "gelu", "ffn": 4 * hidden, "tie_embeddings": True,
                         "dropout": dropout, "norm": "layernorm"},
            palm_flops=True,
        )

    return build


LLAMA_PRESETS = {
    # llama_60m's shapes. LLaMA's FFN width: 2/3 of 4h rounded up to a multiple of 256 (Touvron et al. 2023 / Meta's
    # reference code). "small" (the default, 60,039,680 parameters) is a toy for quick runs; "7b" and "13b" are the
    # original LLaMA-1 shapes, kept for the saved commands that reached them as `--model llama --model-option
    # preset=7b` (Llama-2-7B is the same network: use llama2_7b, whose default context is Llama-2's 4096).
    "small": {"layers": 8, "hidden": 512, "heads": 8, "ffn": 1536, "vocab": 32000, "seq_len": 512},
    "7b": {"layers": 32, "hidden": 4096, "heads": 32, "ffn": 11008, "vocab": 32000, "seq_len": 2048},
    "13b": {"layers": 40, "hidden": 5120, "heads": 40, "ffn": 13824, "vocab": 32000, "seq_len": 2048},
}
_SHAPE_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")


@dataclass(frozen=True)
class DecoderSpec:
    """A released LLaMA-family checkpoint, as its Hugging Face config.json gives it (field: config key)."""

    name: str
    repo: str  # the Hugging Face repository whose config.json this is
    paper: str
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads (< heads: grouped-query attention)
    ffn: int  # intermediate_size (SwiGLU)
    vocab: int  # vocab_size
    tie_embeddings: bool  # tie_word_embeddings
    rope_base: float  # rope_theta
    norm_eps: float  # rms_norm_eps
    max_seq_len: int  # max_position_embeddings: the longest seq_len the builder accepts
    seq_len: int  # the default: a sensible training context (see DECODERS)
    qkv_bias: bool = False  # biases on the q, k and v projections (Qwen2 family; "attention_bias" elsewhere)
    caveat: str = ""


# Default seq_len: the context each model was pre-trained at before any long-context stage. Llama-2: 4096 (its
# max_position_embeddings). Llama-3-8B: 8192. Llama-3.2: 8192, the rope_scaling original_max_position_embeddings
# (the 131072 maximum comes from a long-context extension). Mistral-7B-v0.1: 4096, its sliding window, the longest
# sequence for which full causal attention (what the zoo runs) is the model's own attention. Qwen2.5-7B: 4096, the
# pre-training context before its 32K long-context stage (Qwen2.5 technical report, 2024).
DECODERS: dict[str, DecoderSpec] = {
    "llama2_7b": DecoderSpec("Llama-2-7B", "meta-llama/Llama-2-7b-hf", "Touvron et al. 2023b", layers=32,
                             hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, tie_embeddings=False,
                             rope_base=10000.0, norm_eps=1e-5, max_seq_len=4096, seq_len=4096),
    "llama3_8b": DecoderSpec("Llama-3-8B", "meta-llama/Meta-Llama-3-8B", "Llama Team, AI @ Meta 2024", layers=32,
                             hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, tie_embeddings=False,
                             rope_base=500000.0, norm_eps=1e-5, max_seq_len=8192, seq_len=8192),
    "llama3_2_1b": DecoderSpec("Llama-3.2-1B", "meta-llama/Llama-3.2-1B", "Meta 2024", layers=16, hidden=2048,
                               heads=32, kv_heads=8, ffn=8192, vocab=128256, tie_embeddings=True,
                               rope_base=500000.0, norm_eps=1e-5, max_seq_len=131072, seq_len=8192),
    "llama3_2_3b": DecoderSpec("Llama-3.2-3B", "meta-llama/Llama-3.2-3B", "Meta 2024", layers=28, hidden=3072,
                               heads=24, kv_heads=8, ffn=8192, vocab=128256, tie_embeddings=True,
                               rope_base=500000.0, norm_eps=1e-5, max_seq_len=131072, seq_len=8192),
    "mistral_7b": DecoderSpec("Mistral-7B-v0.1", "mistralai/Mistral-7B-v0.1", "Jiang et al. 2023", layers=32,
                              hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, tie_embeddings=False,
                              rope_base=10000.0, norm_eps=1e-5, max_seq_len=32768, seq_len=4096,
                              caveat="; its 4096-token sliding window is run as full causal attention (the same "
                                     "up to 4096 tokens, more attention FLOPs beyond)"),
    "qwen2_5_7b": DecoderSpec("Qwen2.5-7B", "Qwen/Qwen2.5-7B", "Qwen Team 2024", layers=28, hidden=3584, heads=28,
                              kv_heads=4, ffn=18944, vocab=152064, tie_embeddings=False, rope_base=1000000.0,
                              norm_eps=1e-6, max_seq_len=131072, seq_len=4096, qkv_bias=True),
}


def _decoder_shape(model_id: str, base: dict, given: dict) -> dict:
    cfg = {**base, **{k: v for k, v in given.items() if v is not None}}
    if cfg.get("kv_heads") is None:
        cfg["kv_heads"] = cfg["heads"]  # multi-head attention unless told otherwise
    for key, value in cfg.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{model_id}: {key} {value!r} must be a positive integer")
    return cfg


def _decoder_built(cfg: dict, description: str, *, tie_embeddings: bool = False, qkv_bias: bool = False,
                   rope_base: float = 10000.0, norm_eps: float = 1e-6, device=None) -> _Built:
    shape = {k: cfg[k] for k in _SHAPE_KEYS}
    model = _materialize(lambda: models_transformer.Llama(
        **shape, tie_embeddings=tie_embeddings, qkv_bias=qkv_bias, rope_base=rope_base, norm_eps=norm_eps), device)
    s = cfg["seq_len"]
    return _Built(
        Workload(model, _next_token_batch(cfg["vocab"], s), _next_token_loss),
        description,
        f"{s} token ids (vocab {cfg['vocab']}), next-token loss",
        seq_len=s,
        transformer={"layers": cfg["layers"], "hidden": cfg["hidden"], "heads": cfg["heads"],
                     "kv_heads": cfg["kv_heads"], "seq_len": s, "vocab": cfg["vocab"], "mlp": "swiglu",
                     "ffn": cfg["ffn"], "tie_embeddings": tie_embeddings, "dropout": 0.0,
                     "norm": "rmsnorm"},
        palm_flops=True,
    )


def _attention_words(heads: int, kv_heads: int) -> str:
    if kv_heads == heads:
        return f"{heads} heads"
    return f"{heads} heads with {kv_heads} key/value heads (grouped-query)"


def _llama(*, preset: str = "small", layers: int | None = None, hidden: int | None = None,
           heads: int | None = None, kv_heads: int | None = None, ffn: int | None = None, vocab: int | None = None,
           seq_len: int | None = None, device=None) -> _Built:
    """llama_60m (formerly `llama`): the toy LLaMA-style decoder; presets 7b/13b are LLaMA-1's shapes."""
    if preset not in LLAMA_PRESETS:
        raise ValueError(f"llama_60m: preset {preset!r} is not one of {sorted(LLAMA_PRESETS)}")
    given = {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "ffn": ffn, "vocab": vocab,
             "seq_len": seq_len}
    cfg = _decoder_shape("llama_60m", LLAMA_PRESETS[preset], given)
    what = ("Toy LLaMA-style decoder for quick runs" if preset == "small"
            else f"LLaMA-{preset.upper()} shape (Touvron et al. 2023)")
    return _decoder_built(cfg, (
        f"{what} (preset {preset}): {cfg['layers']} layers, {cfg['hidden']} hidden, "
        f"{_attention_words(cfg['heads'], cfg['kv_heads'])}, SwiGLU {cfg['ffn']}, RMSNorm, rotary, untied head"),
        device=device)


def _decoder(model_id: str):
    spec = DECODERS[model_id]

    def build(*, seq_len: int = spec.seq_len, layers: int | None = None, hidden: int | None = None,
              heads: int | None = None, kv_heads: int | None = None, ffn: int | None = None,
              vocab: int | None = None, device=None) -> _Built:
        _check_seq_len(model_id, seq_len, spec.max_seq_len)
        base = {k: getattr(spec, k) for k in _SHAPE_KEYS}
        given = {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "ffn": ffn,
                 "vocab": vocab}
        cfg = {**_decoder_shape(model_id, base, given), "seq_len": seq_len}
        resized = "" if cfg == {**base, "seq_len": seq_len} else " (resized by options)"
        description = (
            f"{spec.name} ({spec.paper}; {spec.repo} config){resized}: {cfg['layers']} layers, {cfg['hidden']} "
            f"hidden, {_attention_words(cfg['heads'], cfg['kv_heads'])}, SwiGLU {cfg['ffn']}, vocab {cfg['vocab']}, "
            f"RMSNorm, rotary (theta {spec.rope_base:.0f}), {'qkv biases, ' if spec.qkv_bias else ''}"
            f"{'tied' if spec.tie_embeddings else 'untied'} head; context up to {spec.max_seq_len}{spec.caveat}"
        )
        return _decoder_built(cfg, description, tie_embeddings=spec.tie_embeddings, qkv_bias=spec.qkv_bias,
                              rope_base=spec.rope_base, norm_eps=spec.norm_eps, device=device)

    return build


def _lstm_lm(*, seq_len: int = 35, dropout: float = 0.5, device=None) -> _Built:
    _check_seq_len("lstm_lm", seq_len, None)
    model = _materialize(lambda: models_cnn.LSTMLanguageModel(dropout=dropout), device)
    return _Built(
        Workload(model, _next_token_batch(10000, seq_len), _next_token_loss),
        "2-layer LSTM language model, Zaremba et al. 2014 'medium' (650 units, untied, dropout 0.5)",
        f"{seq_len} token ids (vocab 10000, PTB-sized), next-token loss",
        seq_len=seq_len,
    )


def _mlp(*, device=None) -> _Built:
    return _Built(
        Workload(_materialize(models_cnn.MLP, device), _image_batch(1, 28, 10, flat=True), _classify_loss),
        "MLP 784-512-512-10 (ReLU): quick runs",
        "784 features (flattened 28x28), 10 classes",
    )


def _small_cnn(*, device=None) -> _Built:
    return _Built(
        Workload(_materialize(models_cnn.SmallCNN, device), _image_batch(3, 32, 10), _classify_loss),
        "Small CNN (2 conv + 2 linear layers): quick runs",
        "3x32x32 image, 10 classes",
    )


_REGISTRY: dict[str, tuple[str, Callable[..., _Built]]] = {
    "resnet18": ("cnn", _resnet(18)),
    "resnet50": ("cnn", _resnet(50)),
    "resnet101": ("cnn", _resnet(101)),
    "resnet152": ("cnn", _resnet(152)),
    "vit_b16": ("vit", _vit_b16),
    "bert_base": ("encoder", _bert("bert_base", 12, 768, 12)),
    "bert_large": ("encoder", _bert("bert_large", 24, 1024, 16)),
    "gpt2": ("decoder", _gpt2("gpt2", "small", 12, 768, 12)),
    "gpt2_medium": ("decoder", _gpt2("gpt2_medium", "medium", 24, 1024, 16)),
    "gpt2_large": ("decoder", _gpt2("gpt2_large", "large", 36, 1280, 20)),
    "gpt2_xl": ("decoder", _gpt2("gpt2_xl", "XL", 48, 1600, 25)),
    "llama_60m": ("decoder", _llama),
    **{model_id: ("decoder", _decoder(model_id)) for model_id in DECODERS},
    "lstm_lm": ("rnn", _lstm_lm),
    "mlp": ("mlp", _mlp),
    "small_cnn": ("cnn", _small_cnn),
}


# --- public API ------------------------------------------------------------------------------------------------
def list_models() -> list[str]:
    """The zoo's ids; aliases (ALIASES: an old id and the id it now means) are accepted too but not listed."""
    return list(_REGISTRY)


def resolve_id(model_id: str) -> str:
    """The zoo id `model_id` names (itself, or what an alias means); UnknownModelError lists the valid ids."""
    resolved, _message = canonical_id(model_id)
    if resolved not in _REGISTRY:
        aliases = ", ".join(f"{old} (now {new})" for old, new in ALIASES.items())
        raise UnknownModelError(f"unknown model {model_id!r}; valid ids: {', '.join(_REGISTRY)}; "
                                f"old names still accepted: {aliases}")
    return resolved


def _build(model_id: str, options: dict) -> tuple[str, _Built]:
    model_id = resolve_id(model_id)
    family, builder = _REGISTRY[model_id]
    try:
        inspect.signature(builder).bind(**options)
    except TypeError:
        valid = [p for p in inspect.signature(builder).parameters]
        raise ValueError(f"{model_id}: unknown option(s) {sorted(options)}; valid options: {valid}") from None
    return family, builder(**options)


def build(model_id: str, **options) -> Workload:
    """The workload for a zoo model (an id or an alias); options: `device` for all (default cpu), `seq_len` for
    token models, `image_size` for ResNets, `dropout`, and the LLaMA-family shape (layers, hidden, heads, kv_heads,
    ffn, vocab; llama_60m also `preset`)."""
    return _build(model_id, options)[1].workload


def load_custom(spec: str) -> Workload:
    """A user workload from "pkg.module:callable"; the callable returns a Workload or (model, make_batch, loss_fn)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"custom model {spec!r}: expected 'package.module:callable'")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"custom model {spec!r}: cannot load it ({type(exc).__name__}: {exc})") from exc
    if not callable(target):
        raise ValueError(f"custom model {spec!r}: {attr} is not callable")
    result = target()
    if isinstance(result, Workload):
        return result
    if (isinstance(result, tuple) and len(result) == 3 and isinstance(result[0], nn.Module)
            and callable(result[1]) and callable(result[2])):
        return Workload(*result)
    raise ValueError(
        f"custom model {spec!r}: returned {type(result).__name__}; expected a Workload or a tuple "
        "(torch.nn.Module, make_batch(batch_size, device), loss_fn(model, batch))"
    )


def _sdpa_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    # QK^T and PV: 2 FLOPs per multiply-add; causal masking not discounted (as torch's CUDA SDPA formulas).
    return 2 * math.prod(query[:-2]) * query[-2] * key[-2] * (query[-1] + value[-1])


def _sdpa_backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return 2 * _sdpa_flops(query, key, value)  # dV, dP, dQ, dK: twice the forward


def _cpu_sdpa_mapping() -> dict:
    """FLOP formulas for CPU's fused SDPA kernels, which FlopCounterMode counts as 0 (docs/methods.md#step-time); meta
    and CUDA tensors already go through counted ops."""
    names = {"_scaled_dot_product_flash_attention_for_cpu": _sdpa_flops,
             "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward_flops}
    return {getattr(torch.ops.aten, n): f for n, f in names.items() if hasattr(torch.ops.aten, n)}


def count_flops_per_sample(workload: Workload, batch_size: int = 2) -> float:
    """FlopCounterMode over forward + backward at `batch_size`, divided by it. Runs on the model's device (meta
    costs nothing); gradients are returned, not accumulated into the model's .grad."""
    from torch.utils.flop_counter import FlopCounterMode

    param = next(workload.model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    batch = workload.make_batch(batch_size, device)
    params = [p for p in workload.model.parameters() if p.requires_grad]
    with FlopCounterMode(display=False, custom_mapping=_cpu_sdpa_mapping()) as counter:
        loss = workload.loss_fn(workload.model, batch)
        if params:
            torch.autograd.grad(loss, params, allow_unused=True)
    return counter.get_total_flops() / batch_size


def largest_layer_params(model: nn.Module) -> int:
    """DeepSpeed's estimator definition: the most parameters held directly by one module."""
    return max((sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules()), default=0)


def describe(model_id: str, **options) -> ZooEntry:
    """Catalog entry for a zoo model (an alias gives its id's entry); builds on the meta device: allocates nothing."""
    model_id = resolve_id(model_id)
    family, built = _build(model_id, {**options, "device": "meta"})
    model = built.workload.model
    params = sum(p.numel() for p in model.parameters())
    if built.palm_flops:
        t, s = built.transformer, built.seq_len
        if t is None or s is None:
            raise ValueError(f"{model_id}: the PaLM FLOPs formula needs the transformer shape and sequence length")
        flops = float((6 * params + 12 * t["layers"] * t["hidden"] * s) * s)
        convention = PALM_CONVENTION.format(seq_len=s)
    else:
        flops = count_flops_per_sample(built.workload)
        convention = COUNTER_CONVENTION
    return ZooEntry(
        id=model_id, family=family, description=built.description, params=params, input_desc=built.input_desc,
        seq_len=built.seq_len, transformer=built.transformer, flops_per_sample=flops, flop_convention=convention,
        largest_layer_params=largest_layer_params(model),
    )


def catalog() -> list[dict]:
    return [asdict(describe(model_id)) for model_id in list_models()]


def write_catalog(path: str | Path = CATALOG_PATH) -> Path:
    path = Path(path)
    path.write_text(json.dumps(catalog(), indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.zoo", description=__doc__)
    parser.add_argument("--write-catalog", nargs="?", const=str(CATALOG_PATH), metavar="PATH",
                        help=f"write the torch-free catalog (default {CATALOG_PATH})")
    args = parser.parse_args(argv)
    if args.write_catalog:
        print(f"wrote {write_catalog(args.write_catalog)}")
        return 0
    for entry in map(describe, list_models()):
        print(f"{entry.id:12} {entry.params:>13,} params  {entry.flops_per_sample:10.3e} FLOPs/sample  "
              f"{entry.input_desc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
