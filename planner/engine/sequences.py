"""Variable-length text: how many sequences an epoch is when examples are packed, and what padding costs.

Instruction data (Alpaca: 52,002 examples of a few hundred tokens) is far shorter than a 2,048-token context. Two
ways to feed it, both common (Hugging Face TRL `SFTTrainer(packing=...)`, Axolotl `sample_packing`, LitGPT pads
each micro-batch to its longest example):

- packed: examples are concatenated into full `seq_len` sequences, so an epoch is ceil(D·m / S) sequences of S
  tokens and no compute is wasted (the few tokens lost at sequence ends are ignored);
- unpacked: each example is a row of its own, padded to the micro-batch's length p (S when padding to the maximum
  length; the mean padded length when padding to the longest example), so an epoch is D rows and each row costs the
  FLOPs of p tokens, of which 1 - m/p are padding.

Memory is planned at S either way: the longest micro-batch reaches it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner.engine.models import transformer_flops_per_sample
from planner.engine.notes import Note
from planner.errors import TrainplanError
from planner.inputs.scenario import TransformerShape, Workload


class SequenceFieldError(TrainplanError, ValueError):
    """A token field that contradicts the model: `field` names it, str() says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class SequenceWork:
    """What the workload's token fields change: the dataset in training rows, the rows' real tokens, and the
    factor on a micro-step's forward+backward time for padding (1.0 when packed or padded to seq_len)."""

    dataset_rows: int | None
    tokens_per_row: float
    time_factor: float
    notes: tuple[Note, ...]


def packed_sequences(dataset_samples: int, *, mean_tokens: float, seq_len: int) -> int:
    """Sequences of seq_len tokens an epoch of packed examples fills: ceil(D·m / S)."""
    if dataset_samples <= 0 or mean_tokens <= 0 or seq_len <= 0:
        raise ValueError(f"dataset, mean tokens and seq_len must be positive, got {dataset_samples}, "
                         f"{mean_tokens}, {seq_len}")
    return math.ceil(dataset_samples * mean_tokens / seq_len - 1e-9)


def padding_waste_fraction(mean_tokens: float, padded_tokens: float) -> float:
    """Share of the computed tokens that are padding: 1 - m/p."""
    return max(0.0, 1.0 - mean_tokens / padded_tokens)


def padded_time_factor(params: int, shape: TransformerShape, *, padded_tokens: float) -> float:
    """Forward+backward time of a row padded to p tokens over one of S tokens: F(p)/F(S), with F the PaLM count
    (6·N + 12·L·h·s)·s per sample (Chowdhery et al. 2022, App. B), so attention's quadratic part shrinks faster.
    A planning assumption: time follows FLOPs (shorter rows also make smaller matmuls, somewhat less efficient)."""
    full = transformer_flops_per_sample(params, shape)
    short = transformer_flops_per_sample(params, replace(shape, seq_len=max(1, round(padded_tokens))))
    return short / full if full > 0 else 1.0


def sequence_work(workload: Workload, *, params: int, shape: TransformerShape | None,
                  seq_len: int | None) -> SequenceWork | None:
    """The workload's token fields worked out for this model; None when it has none. Raises SequenceFieldError
    naming the field to fix when they contradict the model (no sequence length, a mean or padding above it)."""
    mean = workload.mean_tokens_per_sample
    if mean is None:
        return None
    if not seq_len:
        raise SequenceFieldError("workload.mean_tokens_per_sample", "a model with a sequence length "
                                 "(model.transformer.seq_len) for a mean number of tokens per example")
    if mean > seq_len:
        raise SequenceFieldError("workload.mean_tokens_per_sample",
                                 f"at most the model's sequence length {seq_len:,} (examples are cut there; give "
                                 "the mean after truncation)")
    if workload.packing:
        rows = (packed_sequences(workload.dataset_samples, mean_tokens=mean, seq_len=seq_len)
                if workload.dataset_samples else None)
        note = Note("packing_rows", examples=workload.dataset_samples or "?", mean=float(mean), seq=seq_len,
                    rows=rows or "?")
        return SequenceWork(dataset_rows=rows, tokens_per_row=float(seq_len), time_factor=1.0, notes=(note,))
    padded = workload.padded_tokens_per_sample or float(seq_len)
    if padded > seq_len:
        raise SequenceFieldError("workload.padded_tokens_per_sample",
                                 f"at most the model's sequence length {seq_len:,}")
    factor = padded_time_factor(params, shape, padded_tokens=padded) if shape is not None else padded / seq_len
    waste = padding_waste_fraction(mean, padded)
    key = "padding_to_max" if workload.padded_tokens_per_sample is None else "padding_to_given"
    note = Note(key, mean=float(mean), padded=float(padded), pct=round(100 * waste), factor=factor,
                seq=seq_len)
    return SequenceWork(dataset_rows=workload.dataset_samples, tokens_per_row=mean, time_factor=factor,
                        notes=(note,))
