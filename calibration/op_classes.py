"""A typed transformer shape's forward + backward by operator class, per layer, without a trace (issue 15).

`bench trace` records, per micro-batch, the FLOPs, the bytes every kernel-launching op reads and writes (logical
tensor sizes) and the op count of four classes: matmul/conv, fused attention, elementwise (activations, norms,
dropout, casts) and embedding + loss (planner/engine/measurements.py OpClassLine). A model with no trace and no
traced twin of its exact shape gets the same split here, per sample (the line's slope) and per step (its intercept:
the weights), from its shape:

- matmul FLOPs, bytes and ops are exact counts of the linear layers: forward Y = XW, backward dX = dY·Wᵀ and
  dW = Xᵀ·dY, so 6·s·(in·out) FLOPs, 3·b·s·(in + out) activation bytes and 3·b·in·out weight bytes per linear,
  3 ops; the attention projections fused into one q/k/v matmul (GPT-2, ViT, nanoGPT, LitGPT) or three
  (encoder family: BERT); the LM head when the model has a vocabulary and a token-level loss;
- fused attention (SDPA/flash) is exact too: 12·s²·h FLOPs per layer (4·s²·h forward, twice that backward: Q·Kᵀ and
  P·V), reads and writes of q, k, v, o and their gradients, 6·(h + kv)·b bytes per token, the fp32 log-sum-exp
  (2 × heads × 4 bytes), 2 ops; eager attention is not modelled (None);
- elementwise and embedding + loss depend on the implementation (dropout, casts, which norm): their bytes per token
  and op counts per layer are least-squares constants read off the shipped traces, per precision group (fp32/tf32
  or 16-bit, whose autocast adds casts): `python calibration/op_class_constants.py` fits them and holds out each traced
  model in turn (the README's table); tests/test_op_classes.py checks the constants below are its fit.

b is 4 bytes per activation element for fp32/tf32 and 2 for fp16/bf16 (planner.vocab.element_bytes; weights: the
fp32 master for fp32/tf32, the 16-bit autocast copy otherwise); the fitted constants are keyed by
planner.vocab.precision_group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.engine.measurements import OpClassLine
from planner.engine.shapes import block_params
from planner.vocab import PrecisionGroup, element_bytes, precision_group

if TYPE_CHECKING:
    from planner.inputs.scenario import TransformerShape


@dataclass(frozen=True)
class Terms:
    """The structural quantities a shape's split is made of (per sample unless named per step)."""

    layers: int
    tokens: int  # s
    hidden: int  # h
    kv_width: int  # kv heads × head width
    heads: int
    ffn: int
    vocab: int  # 0: no vocabulary (image transformer)
    lm_head: bool  # a V·h logits matmul (a vocabulary and a token-level loss)
    separate_qkv: bool
    swiglu: bool
    block_params: int

    @property
    def linear_io_per_layer(self) -> int:
        """Σ (in + out) of one block's linear layers."""
        h, kv, f = self.hidden, self.kv_width, self.ffn
        qkv = (3 * h + h + 2 * kv) if self.separate_qkv else (h + h + 2 * kv)
        mlp = 2 * (h + f) + (f + h) if self.swiglu else 2 * (h + f)
        return qkv + 2 * h + mlp

    @property
    def linears_per_layer(self) -> int:
        return (3 if self.separate_qkv else 1) + 1 + (3 if self.swiglu else 2)

    @property
    def head_params(self) -> int:
        return self.hidden * self.vocab if self.lm_head else 0


def terms(shape: TransformerShape, family: str) -> Terms:
    kv = shape.kv_head_count * (shape.hidden // shape.heads)
    return Terms(layers=shape.layers, tokens=shape.seq_len, hidden=shape.hidden, kv_width=kv, heads=shape.heads,
                 ffn=shape.ffn_width, vocab=shape.vocab, lm_head=bool(shape.vocab) and shape.loss != "sequence",
                 separate_qkv=family == "encoder", swiglu=shape.mlp == "swiglu", block_params=block_params(shape))


# Fitted on the shipped traces by calibration/op_class_constants.py (results/traced/: BERT-base and -large at 128 and 384
# tokens, GPT-2 and GPT-2 medium at 1,024, ViT-B/16 at 197; `bench trace` with SDPA), per precision group:
#   elementwise bytes per sample = s·h·(per_layer·L + fixed) · b;  per step = weights_bytes_per_param × parameters
#   elementwise ops per step = ops_per_layer·L + ops_fixed
#   embedding + loss bytes per sample = (per_token_hidden·h + per_token_vocab·V) · s · b;  per step:
#   per_embedding_param × V·h (fp32 embedding gradients)
#   embedding + loss ops per step: ops (with a vocabulary), ops_no_vocab (without)
@dataclass(frozen=True)
class ImplementationConstants:
    elementwise_per_layer: float
    elementwise_fixed: float
    elementwise_weights_bytes_per_param: float
    elementwise_ops_per_layer: float
    elementwise_ops_fixed: float
    embedding_per_token_hidden: float
    embedding_per_token_vocab: float
    embedding_bytes_per_embedding_param: float
    embedding_ops: float
    embedding_ops_no_vocab: float


CONSTANTS: Mapping[PrecisionGroup, ImplementationConstants] = {
    "fp32": ImplementationConstants(
        elementwise_per_layer=68.384, elementwise_fixed=32.636, elementwise_weights_bytes_per_param=1.504,
        elementwise_ops_per_layer=22.632, elementwise_ops_fixed=-23.833, embedding_per_token_hidden=2.452,
        embedding_per_token_vocab=8.01491, embedding_bytes_per_embedding_param=8.274, embedding_ops=12.0,
        embedding_ops_no_vocab=4.0),
    "16-bit": ImplementationConstants(
        elementwise_per_layer=122.788, elementwise_fixed=191.713, elementwise_weights_bytes_per_param=13.471,
        elementwise_ops_per_layer=54.576, elementwise_ops_fixed=-57.167, embedding_per_token_hidden=4.884,
        embedding_per_token_vocab=11.03028, embedding_bytes_per_embedding_param=8.274, embedding_ops=12.0,
        embedding_ops_no_vocab=4.0),
}


def exact_fields(t: Terms, precision: str) -> dict[str, tuple[float, float]]:
    """matmul and fused attention: (per-sample slope, per-step intercept) of flops, bytes and ops."""
    b = element_bytes(precision)
    s, L, h = t.tokens, t.layers, t.hidden
    weights = L * t.block_params + t.head_params
    head_io = (h + t.vocab) if t.lm_head else 0
    return {
        "matmul.flops": (6.0 * s * weights, 0.0),
        "matmul.bytes": (3.0 * b * s * (L * t.linear_io_per_layer + head_io), 3.0 * b * weights),
        "matmul.ops": (0.0, 3.0 * (L * t.linears_per_layer + (1 if t.lm_head else 0))),
        "attention.flops": (12.0 * L * s * s * h, 0.0),
        "attention.bytes": (float(L * s * (6 * b * (h + t.kv_width) + 2 * t.heads * element_bytes("fp32"))), 0.0),
        "attention.ops": (0.0, 2.0 * L),
    }


def implementation_fields(t: Terms, precision: str, c: ImplementationConstants,
                          parameters: int) -> dict[str, tuple[float, float]]:
    """elementwise and embedding + loss from the fitted constants."""
    b = element_bytes(precision)
    s, L, h = t.tokens, t.layers, t.hidden
    return {
        "elementwise.flops": (0.0, 0.0),
        "elementwise.bytes": (s * h * (c.elementwise_per_layer * L + c.elementwise_fixed) * b,
                              c.elementwise_weights_bytes_per_param * parameters),
        "elementwise.ops": (0.0, c.elementwise_ops_per_layer * L + c.elementwise_ops_fixed),
        "embedding_loss.flops": (0.0, 0.0),
        "embedding_loss.bytes": ((c.embedding_per_token_hidden * h + c.embedding_per_token_vocab * t.vocab) * s * b,
                                 c.embedding_bytes_per_embedding_param * t.vocab * h),
        "embedding_loss.ops": (0.0, c.embedding_ops if t.vocab else c.embedding_ops_no_vocab),
    }


def analytic_op_classes(shape: TransformerShape, *, family: str, precision: str, attention: str | None,
                        parameters: int) -> OpClassLine | None:
    """The split of one micro-step of plain training (no recompute, frozen layers or adapters: the caller checks)
    as an OpClassLine; None for eager attention (its s² probabilities are elementwise work not modelled here)."""
    if attention == "eager":
        return None
    t = terms(shape, family)
    fields = {**exact_fields(t, precision),
              **implementation_fields(t, precision, CONSTANTS[precision_group(precision)], parameters)}
    return OpClassLine(fields, f"per-layer analytic split of the transformer shape ({shape.layers} layers, "
                               f"hidden {shape.hidden}, {shape.seq_len} tokens; calibration/op_classes.py)", ())
