"""Activation memory per GPU (ESTIMATION.md §1): transformer formulas, measured/traced lines, user figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.engine.estimates import ActivationLine, ResolvedModel, Source
from planner.inputs.errors import CannotEstimate, InputError
from planner.vocab import PRECISIONS, STATE_LAYOUTS

if TYPE_CHECKING:
    from planner.inputs.scenario import TransformerShape

ATTENTIONS = ("sdpa", "manual")  # flash/memory-efficient SDPA | explicit softmax(QK^T)V

MASK_BYTES = 1  # dropout masks are torch.bool on CUDA (Korthikanti et al. 2022 §4.1: "1 byte")
LOGSUMEXP_BYTES = 4  # flash / memory-efficient SDPA keep an fp32 logsumexp per head and token for backward
LOG_SOFTMAX_BYTES = 4  # cross_entropy runs in fp32 (autocast fp32 op list): saved log-softmax, 4 B per logit
# Dropout in the analytic fallback: GPT-2/BERT train with it; for dropout-free LLMs it overstates by 2sbh of
# ~36sbh per layer (≈5%), the conservative side of a fit check.
ASSUME_DROPOUT = True
# Fraction of activations kept under checkpointing when no transformer shape says better: Chen et al. 2016
# ("Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174) keep ≈ 2/√n of n blocks' activations
# with √n segments; 0.5 is n = 16 (ResNet-50's bottlenecks) and conservative for deeper nets.
CHECKPOINTED_ACTIVATION_FRACTION = 0.5
# Per-element bytes used to rescale a user figure between precisions. Under torch AMP LayerNorm/softmax inputs
# stay fp32, so 16-bit activations are ≈ 38/66 of fp32 ones (Korthikanti coefficients below), not 1/2.
FP32_ACTIVATION_ELEMENT_BYTES = 4.0
HALF_ACTIVATION_ELEMENT_BYTES = 2.0
AMP_ACTIVATION_ELEMENT_BYTES = 4.0 * 38 / 66


def _check(value: str, allowed: tuple[str, ...], field: str) -> None:
    if value not in allowed:
        raise InputError(None, field, value, "one of " + ", ".join(allowed))


def activation_kind(precision: str, layout: str) -> str:
    """'fp32' (fp32/tf32 tensors), 'amp' (torch autocast: 16-bit matmuls, fp32 residual/LN/softmax), 'half'."""
    _check(precision, PRECISIONS, "precision")
    _check(layout, STATE_LAYOUTS, "training.state_layout")
    if precision in ("fp32", "tf32"):
        return "fp32"
    return "amp" if layout == "torch_amp" else "half"


def _tensor_bytes(kind: str) -> int:
    return 4 if kind == "fp32" else 2


def _residual_bytes(kind: str) -> int:
    # Under autocast the fp32 parameters make the residual stream (and so LayerNorm inputs) fp32.
    return 2 if kind == "half" else 4


def mlp_activation_coefficient(shape: TransformerShape, tensor_bytes: int) -> float:
    """MLP bytes per s·b·h without dropout mask (Korthikanti §4.1: 18 at 16-bit for the 4h GeLU MLP).

    GeLU, width f: input of the first linear (t·sbh) + GeLU input and output (2·t·sbf) = t(1 + 2f/h).
    SwiGLU, width f (derived here): the shared input of gate and up projections (t·sbh); SiLU saves its input,
    the gate output (t·sbf); the product saves both factors, SiLU output and up output (2·t·sbf); the down
    projection saves its input, the product (t·sbf): t(1 + 4f/h), i.e. 2 + 8f/h at 16-bit (ESTIMATION.md §1).
    """
    f_over_h = shape.ffn_width / shape.hidden
    wide_tensors = 4 if shape.mlp == "swiglu" else 2
    return tensor_bytes * (1 + wide_tensors * f_over_h)


def layer_activation_coefficients(shape: TransformerShape, precision: str, *, attention: str = "sdpa",
                                  dropout: bool = False, layout: str = "torch_amp") -> tuple[float, float, float]:
    """(c_sbh, c_as2b, c_asb): one block keeps c_sbh·s·b·h + c_as2b·a·s²·b + c_asb·a·s·b bytes.

    Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", §4.1, eq. 1):
    s·b·h·(34 + 5as/h) at 16-bit with dropout, unfused attention. Term by term, with t the matmul-input bytes,
    r the residual/LayerNorm-input bytes and m the mask byte (0 without dropout):
    LayerNorm inputs 2r; attention QKV input, Q, K, V and projection input 5t + output-dropout mask m;
    MLP (mlp_activation_coefficient) + m. Scores (manual attention): softmax output t, + with dropout its mask
    and output (1 + t); under AMP softmax runs in fp32 (4) and the PV matmul saves a 16-bit copy (2), + mask.
    SDPA (flash / memory-efficient) stores no s² tensor, only an fp32 logsumexp (4·a·s·b) and regenerates
    dropout from its RNG state. Results (checked in tests): 16-bit 34 + 5as/h / 32 + 2as/h, fp32 66 + 9as/h /
    64 + 4as/h, AMP 38 + 7as/h / 36 + 6as/h; SDPA 34/32, 66/64, 38/36.
    """
    _check(attention, ATTENTIONS, "attention")
    kind = activation_kind(precision, layout)
    t, r, m = _tensor_bytes(kind), _residual_bytes(kind), (MASK_BYTES if dropout else 0)
    c_sbh = 2 * r + (5 * t + m) + (mlp_activation_coefficient(shape, t) + m)
    if attention == "sdpa":
        return c_sbh, 0.0, float(LOGSUMEXP_BYTES)
    if kind == "amp":
        c_scores = 4 + 2 + m
    else:
        c_scores = t + (MASK_BYTES + t if dropout else 0)
    return c_sbh, float(c_scores), 0.0


def layer_activation_bytes(shape: TransformerShape, micro_batch: int, precision: str, *, attention: str = "sdpa",
                           dropout: bool = False, layout: str = "torch_amp") -> float:
    """Bytes one transformer block keeps for backward (Korthikanti et al. 2022 eq. 1 and variants)."""
    c_sbh, c_as2b, c_asb = layer_activation_coefficients(shape, precision, attention=attention, dropout=dropout,
                                                         layout=layout)
    s, b, h, a = shape.seq_len, micro_batch, shape.hidden, shape.heads
    return c_sbh * s * b * h + c_as2b * a * s * s * b + c_asb * a * s * b


def logits_loss_bytes(seq_len: int, micro_batch: int, vocab: int) -> float:
    """fp32 log-softmax kept by the loss for backward: 4·s·b·V (ESTIMATION.md §1; GPT-2 ≈ 206 MB/sample)."""
    return LOG_SOFTMAX_BYTES * seq_len * micro_batch * vocab


def head_activation_bytes(shape: TransformerShape, micro_batch: int, precision: str, *, dropout: bool = False,
                          layout: str = "torch_amp") -> float:
    """Embedding dropout mask, final LayerNorm input, LM-head input and the logits/loss tensors.

    Logits (ESTIMATION.md §1): the model's logits (t·sbV, kept by the training loop that returned them), the
    fp32 log-softmax 4sbV, and a backward transient of the same size (its gradient) at the start of backward.
    """
    kind = activation_kind(precision, layout)
    t, r, m = _tensor_bytes(kind), _residual_bytes(kind), (MASK_BYTES if dropout else 0)
    sb = shape.seq_len * micro_batch
    logits = t * sb * shape.vocab + 2 * logits_loss_bytes(shape.seq_len, micro_batch, shape.vocab)
    return (m + r + t) * sb * shape.hidden + logits


def transformer_activation_bytes(shape: TransformerShape, micro_batch: int, precision: str, *,
                                 attention: str = "sdpa", dropout: bool = False, checkpointing: bool = False,
                                 layout: str = "torch_amp") -> float:
    """Activations of a decoder/encoder stack at micro-batch b: L blocks + embeddings/head (bytes per GPU).

    Checkpointing (ESTIMATION.md §1): each block keeps only its input (r·sbh: 2 at 16-bit, 4 under torch AMP or
    fp32, whose residual stream is fp32) and one block's full working set exists during its recomputation.
    """
    per_layer = layer_activation_bytes(shape, micro_batch, precision, attention=attention, dropout=dropout,
                                       layout=layout)
    if checkpointing:
        r = _residual_bytes(activation_kind(precision, layout))
        blocks = shape.layers * r * shape.seq_len * micro_batch * shape.hidden + per_layer
    else:
        blocks = shape.layers * per_layer
    return blocks + head_activation_bytes(shape, micro_batch, precision, dropout=dropout, layout=layout)


def activation_element_bytes(precision: str, layout: str) -> float:
    """Effective bytes per activation element, for rescaling a per-sample figure between precisions."""
    kind = activation_kind(precision, layout)
    return {"fp32": FP32_ACTIVATION_ELEMENT_BYTES, "amp": AMP_ACTIVATION_ELEMENT_BYTES,
            "half": HALF_ACTIVATION_ELEMENT_BYTES}[kind]


def checkpointing_fraction(model: ResolvedModel, precision: str, layout: str) -> tuple[float, str]:
    """Kept fraction of per-sample activations under checkpointing, and how it was obtained."""
    shape = model.transformer
    if shape is None:
        return CHECKPOINTED_ACTIVATION_FRACTION, "checkpointing ×0.5 (Chen et al. 2016, √n segments)"
    full = transformer_activation_bytes(shape, 1, precision, dropout=ASSUME_DROPOUT, layout=layout)
    kept = transformer_activation_bytes(shape, 1, precision, dropout=ASSUME_DROPOUT, checkpointing=True,
                                        layout=layout)
    fraction = kept / full
    return fraction, f"checkpointing ×{fraction:.2f} (transformer formula ratio)"


def _with_detail(source: Source, extra: list[str]) -> Source:
    if not extra:
        return source
    detail = "; ".join([source.detail, *extra]) if source.detail else "; ".join(extra)
    return Source(source.kind, detail)


def _rescaled_per_sample(per_sample: float, model: ResolvedModel, *, given_precision: str, precision: str,
                         layout: str, checkpointing: bool, extra: list[str]) -> float:
    """A per-sample activation figure moved to another precision and to checkpointing; says how in `extra`."""
    if given_precision != precision:
        scale = activation_element_bytes(precision, layout) / activation_element_bytes(given_precision, layout)
        per_sample *= scale
        extra.append(f"scaled {given_precision}→{precision} ×{scale:.2f}")
    if checkpointing:
        fraction, how = checkpointing_fraction(model, precision, layout)
        per_sample *= fraction
        extra.append(how)
    return per_sample


def activation_bytes(model: ResolvedModel, precision: str, micro_batch: int, *, checkpointing: bool = False,
                     line: ActivationLine | None = None, layout: str = "torch_amp", attention: str = "sdpa",
                     dropout: bool = ASSUME_DROPOUT) -> tuple[float, Source]:
    """Activation bytes per GPU at micro-batch b and where they came from.

    Precedence (ESTIMATION.md: measured > traced > formula): a fitted line (its intercept included; lines are
    taken as measured without checkpointing), the transformer formula, then the user's per-sample figure.
    """
    if micro_batch < 1:
        raise InputError(None, "micro_batch", micro_batch, "an integer >= 1")
    activation_element_bytes(precision, layout)  # rejects an unknown precision or layout before any branch
    if line is not None:
        extra: list[str] = []
        per_sample = _rescaled_per_sample(line.bytes_per_sample, model, given_precision=line.precision,
                                          precision=precision, layout=layout, checkpointing=checkpointing,
                                          extra=extra)
        return line.intercept_bytes + per_sample * micro_batch, _with_detail(line.source, extra)
    if model.transformer is not None:
        value = transformer_activation_bytes(model.transformer, micro_batch, precision, attention=attention,
                                             dropout=dropout, checkpointing=checkpointing, layout=layout)
        variant = {"fp32": "fp32", "amp": "torch AMP", "half": "16-bit"}[activation_kind(precision, layout)]
        detail = (f"Korthikanti et al. 2022, s·b·h·(34 + 5as/h) per layer: {variant}, {attention} attention, "
                  f"{'dropout' if dropout else 'no dropout'}{', checkpointing' if checkpointing else ''}; "
                  "+ logits/loss 4sbV (fp32 log-softmax) + its backward transient")
        return value, Source("analytic", detail)
    if model.activation_bytes_per_sample is not None:
        extra = [f"model.activation_bytes_per_sample = {model.activation_bytes_per_sample:.3g} B"]
        if model.activation_precision is None:
            extra.append("activation_precision not given: used as is")
        per_sample = _rescaled_per_sample(model.activation_bytes_per_sample, model,
                                          given_precision=model.activation_precision or precision,
                                          precision=precision, layout=layout, checkpointing=checkpointing,
                                          extra=extra)
        return per_sample * micro_batch, Source("user", "; ".join(extra))
    raise CannotEstimate(
        "model.activation_bytes_per_sample",
        f"an activation size for model {model.name}: nothing measured or traced at {precision}, no transformer "
        "shape for the formula; run `python -m bench trace` or give model.activation_bytes_per_sample")
