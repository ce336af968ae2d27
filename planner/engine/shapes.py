"""Parameter counts of a transformer's parts from its shape: one owner for the block and the embedding formulas
(models.transformer_params, memory's ZeRO-3/FSDP units and quantised base, sequences' FLOPs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # type names only: planner.inputs.scenario imports yaml
    from planner.inputs.scenario import TransformerShape


def block_params(shape: TransformerShape) -> int:
    """One transformer block: attention 2h² (q, o) + 2·h·(kv_heads·h/heads) (k, v) + MLP 2·h·f (gelu) or 3·h·f
    (swiglu); biases and norms ignored."""
    h, f = shape.hidden, shape.ffn_width
    mlp = (3 if shape.mlp == "swiglu" else 2) * h * f
    return 2 * h * h + 2 * h * (shape.kv_head_count * h // shape.heads) + mlp


def embedding_params(shape: TransformerShape) -> int:
    """The token embedding and, when untied, the LM head: V·h (× 2 untied). An image transformer (vocab 0): 0."""
    return shape.vocab * shape.hidden * (1 if shape.tied else 2)
