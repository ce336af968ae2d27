"""Resolve a scenario's model to numbers: scenario fields first, then result files, then the zoo catalog."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from planner.engine.estimates import ResolvedModel, Source, detail
from planner.engine.shapes import block_params, embedding_params
from planner.inputs.errors import InputError
from planner.inputs.published_models import load_published_models
from planner.inputs.resultfile import ResultFile
from planner.inputs.scenario import ModelSpec, TransformerShape
from planner.inputs.zoo_catalog import canonical_id, load_catalog, lookup
from planner.vocab import LOSS_KINDS, NORM_KINDS, QKV_LAYOUTS


def transformer_params(shape: TransformerShape) -> int:
    """Parameter count of a decoder/encoder stack from its shape (biases and norms ignored: < 0.1%).

    Per layer: attention 2h² (q, o) + 2·h·(kv_heads·h/heads) (k, v: grouped-query attention, Ainslie et al.
    2023); MLP 2·h·f (gelu) or 3·h·f (swiglu); embeddings V·h (+ V·h when the head is untied). Unless the
    shape says, GeLU models tie the output head to the embeddings (GPT-2, BERT) and SwiGLU ones do not (LLaMA).
    """
    return shape.layers * block_params(shape) + embedding_params(shape)



def transformer_flops_per_sample(params: int, shape: TransformerShape) -> float:
    """Model FLOPs per training sample: (6·N + 12·L·h·s) per token × s tokens (PaLM, Chowdhery et al. 2022, App. B).

    N counts the parameters that take part in a matmul for every token. With a language-model head the token
    embedding does (it is, or is as large as, the V·h logits matmul); with a sequence-classification head
    (`loss: sequence`: BERT on GLUE, SQuAD) there are no vocabulary logits and the embedding is a table lookup, so
    its V·h parameters are left out: 21% of BERT-base's 6·N, so the masked-LM count is 27% more (Kaplan et al. 2020
    §2.1 count non-embedding N the same way).
    """
    matmul_params = params - token_embedding_params(shape) if shape.loss == "sequence" else params
    per_token = 6 * max(matmul_params, 0) + 12 * shape.layers * shape.hidden * shape.seq_len
    return float(per_token * shape.seq_len)


def token_embedding_params(shape: TransformerShape) -> int:
    """The token embedding table alone: V·h (an image transformer, vocab 0, has none); embedding_params adds an
    untied LM head."""
    return shape.vocab * shape.hidden


def shape_from_dict(d: Mapping[str, Any] | None) -> TransformerShape | None:
    """A catalog, corpus or result-file shape mapping as a TransformerShape (its optional knobs when present)."""
    if not d:
        return None
    tie, dropout = d.get("tie_embeddings"), d.get("dropout")
    return TransformerShape(
        layers=int(d["layers"]), hidden=int(d["hidden"]), heads=int(d["heads"]), seq_len=int(d["seq_len"]),
        # An image transformer (ViT: zoo vocab null) has no token vocabulary: no embedding table, no LM logits.
        vocab=int(d.get("vocab") or 0), mlp=str(d.get("mlp", "gelu")), ffn=d.get("ffn"),
        kv_heads=int(d["kv_heads"]) if d.get("kv_heads") else None,
        tie_embeddings=bool(tie) if isinstance(tie, bool) else None,
        dropout=float(dropout) if isinstance(dropout, int | float) and not isinstance(dropout, bool) else None,
        norm=str(d["norm"]) if d.get("norm") in NORM_KINDS else None,
        loss=str(d["loss"]) if d.get("loss") in LOSS_KINDS else "standard",
        qkv=str(d["qkv"]) if d.get("qkv") in QKV_LAYOUTS else "separate",
    )


def _same_architecture(zoo: TransformerShape, typed: TransformerShape) -> bool:
    """Whether a typed shape is the zoo model's (at any sequence length, dropout or loss): the sizes agree and every
    structural knob the scenario states (kv_heads, tied head, norm) is the zoo's."""
    sizes = ("layers", "hidden", "heads", "vocab", "mlp", "ffn_width")
    if any(getattr(zoo, k) != getattr(typed, k) for k in sizes):
        return False
    return all(getattr(typed, k) is None or getattr(typed, k) == getattr(zoo, k)
               for k in ("kv_heads", "tie_embeddings", "norm"))


def _file_shape(d: object, family: object = None) -> TransformerShape | None:
    """A result file's transformer shape, or None when it has none or it is not a whole, positive shape; only an
    image transformer (family vit) may have no token vocabulary (vocab null: no embedding table, no logits)."""
    try:
        shape = shape_from_dict(d) if isinstance(d, Mapping) else None
    except (KeyError, TypeError, ValueError):
        return None
    smallest_vocab = 0 if family == "vit" else 1
    if shape is None or min(shape.layers, shape.hidden, shape.heads, shape.seq_len) < 1 \
            or shape.vocab < smallest_vocab:
        return None
    return shape


def resolve_model(spec: ModelSpec, results: Sequence[ResultFile] = (), source: str = "<scenario>") -> ResolvedModel:
    """Fill every number the planner needs, saying where each came from."""
    catalog = load_catalog()
    name = canonical_id(spec.name)[0] if spec.name else None  # an old id ('llama') means its new one
    entry = lookup(catalog, name)
    zoo_shape = shape_from_dict(entry.get("transformer")) if entry else None
    # The zoo model at another sequence length is still the zoo model: keep its exact parameter count (a typed shape
    # that leaves out kv_heads or tie_embeddings would make a formula miscount Llama 3 or Qwen by 8-29%).
    same_model = (zoo_shape is not None and spec.transformer is not None
                  and _same_architecture(zoo_shape, spec.transformer))
    if entry and spec.transformer is not None and zoo_shape != spec.transformer and not same_model:
        entry = None  # the zoo's default size is another model: use the scenario's shape, not its numbers
    # A file of this model at another sequence length (bench trace --seq-len) holds another step's FLOPs and shape.
    seq = (spec.transformer.seq_len if spec.transformer is not None else None) or (
        zoo_shape.seq_len if zoo_shape is not None else None)
    files = [r for r in results if canonical_id(r.model_name)[0] == name and r.seq_len in (None, seq)]
    file_model = files[-1].model if files else {}
    # A model of the published corpus the zoo does not build (planner/inputs/published_models.json).
    # Read only when the scenario and the files leave the size open: a broken corpus file must not block a model
    # the user described in full.
    needs_corpus = not entry and not (spec.params and (spec.transformer or spec.flops_per_sample)) \
        and not file_model.get("params")
    corpus = load_published_models().get(name or "", {}) if needs_corpus else {}
    typed = spec.transformer
    if typed is not None and zoo_shape is not None and same_model:  # the zoo's knobs, the scenario's settings
        typed = replace(zoo_shape, seq_len=typed.seq_len, loss=typed.loss, qkv=typed.qkv,
                        dropout=zoo_shape.dropout if typed.dropout is None else typed.dropout)
    shape = (typed or shape_from_dict(entry.get("transformer") if entry else None)
             or _file_shape(file_model.get("transformer"), file_model.get("family"))  # results/published/
             or _file_shape(corpus.get("transformer"), corpus.get("family")))
    family = (spec.family or (entry or {}).get("family") or file_model.get("family") or corpus.get("family")
              or ("decoder" if shape else "custom"))

    params, params_from = _first(
        (spec.params, "scenario"),
        (entry.get("params") if entry and same_model else None, "zoo catalog (at the scenario's sequence length)"),
        (transformer_params(spec.transformer) if spec.transformer else None, "scenario transformer shape"),
        (file_model.get("params"), f"result file {files[-1].label}" if files else ""),
        (entry.get("params") if entry else None, "zoo catalog"),
        (corpus.get("params"), "published corpus (" + ", ".join(corpus.get("sources") or ()) + ")"),
        (transformer_params(shape) if shape else None, "transformer shape (4h²+MLP per layer + embeddings)"),
    )
    if params is None:
        raise InputError(source, "model.params", None,
                         f"the model's parameter count: '{spec.name}' is not in the zoo, the published corpus or "
                         "any result file")

    flops: float | None = spec.flops_per_sample
    flops_source = Source("user", parts=(detail("scenario_flops"),))
    if flops is None and spec.transformer is not None:
        flops = transformer_flops_per_sample(int(params), spec.transformer)
        flops_source = Source("analytic", parts=(detail("palm"),))
    if flops is None and file_model.get("flops_per_sample"):
        flops = float(file_model["flops_per_sample"])
        kind = "traced" if files[-1].is_traced else "measured"
        convention = file_model.get("flop_convention")
        flops_source = Source(kind, parts=(detail("flops_file", convention=convention, file=files[-1].label)
                                           if convention else detail("flops_file_counter", file=files[-1].label),))
    if flops is None and entry and entry.get("flops_per_sample"):
        flops = float(entry["flops_per_sample"])
        convention = entry.get("flop_convention")
        flops_source = Source("analytic", parts=(detail("zoo_flops", convention=convention) if convention
                                                 else detail("zoo_flops_bare"),))
    if flops is None and shape is not None:
        flops = transformer_flops_per_sample(int(params), shape)
        flops_source = Source("analytic", parts=(detail("palm"),))

    # The FLOPs of the configuration the model's measured and published figures ran (the file's, the zoo's, its
    # shape's), kept when the scenario types its own: the step-time ladder rescales those figures to the typed
    # FLOPs (a ResNet-50 at 160 px is not the 224 px one its figures timed).
    figures_flops = None
    if spec.flops_per_sample is not None:
        figures_flops = (file_model.get("flops_per_sample") or (entry or {}).get("flops_per_sample")
                         or (transformer_flops_per_sample(int(params), shape) if shape is not None else None))
    largest = spec.largest_layer_params or (entry or {}).get("largest_layer_params")
    if largest is None and shape is not None:
        largest = max(shape.vocab * shape.hidden, 4 * shape.hidden * shape.hidden)
    return ResolvedModel(
        name=name or "custom",
        family=family,
        params=int(params),
        largest_layer_params=int(largest) if largest else None,
        flops_per_sample=flops,
        flops_source=flops_source,
        figures_flops_per_sample=float(figures_flops) if figures_flops else None,
        transformer=shape,
        activation_bytes_per_sample=spec.activation_bytes_per_sample,
        activation_precision=spec.activation_precision,
        mfu=spec.mfu,
        input_cpu_s_per_sample=spec.input_cpu_s_per_sample,
        attention=spec.attention,
        seq_len=shape.seq_len if shape else (entry or {}).get("seq_len"),
    )


def _first(*candidates: tuple[float | None, str]) -> tuple[float | None, str]:
    for value, where in candidates:
        if value:
            return value, where
    return None, ""
