"""What fits, as a table (issue 33): the engine's answers per GPU (planner.engine.what_fits) in one language, for
the Plan page and the reports alike."""

from __future__ import annotations

from collections.abc import Sequence

from planner.engine.estimates import Plan
from planner.engine.what_fits import WhatFits
from planner.present import fmt
from planner.present.i18n import t

COLUMNS = ("gpu", "micro", "seq", "seq_ckpt", "fewest", "fixes")
SEQ_COLUMNS = ("seq", "seq_ckpt")


def what_fits_columns(answers: Sequence[WhatFits]) -> tuple[str, ...]:
    """The columns a table of these answers shows: the sequence ones only for a model with a sequence."""
    with_seq = any(a.seq_searched is not None for a in answers)
    return tuple(c for c in COLUMNS if with_seq or c not in SEQ_COLUMNS)


def what_fits_headers(locale: str, answers: Sequence[WhatFits] = ()) -> tuple[str, ...]:
    shown = what_fits_columns(answers) if answers else COLUMNS
    return tuple(t(f"what_fits.col.{c}", locale) for c in shown)


def _tokens(value: int | None, searched: tuple[int, int] | None, locale: str) -> str:
    if searched is None:
        return t("what_fits.not_sequence", locale)
    if value is None:
        return t("what_fits.none_from", locale, low=fmt.number(searched[0], locale, 0))
    if value >= searched[1]:
        return t("what_fits.at_least", locale, n=fmt.number(value, locale, 0))
    return fmt.number(value, locale, 0)


def what_fits_rows(answers: Sequence[WhatFits], locale: str) -> tuple[tuple[str, ...], ...]:
    """One row per GPU: the GPU (precision, GPU count), the largest micro-batch, the longest sequence at micro-batch 1
    without and with checkpointing (models with a sequence only: what_fits_columns), the fewest GPUs for a full
    fine-tune, and what would make micro-batch 1 fit."""
    rows = []
    for a in answers:
        gpu = t("what_fits.gpu", locale, gpu=a.gpu_name, precision=a.precision, n=a.n_gpus)
        micro = fmt.number(a.largest_micro_batch, locale, 0) if a.largest_micro_batch else t("what_fits.none", locale)
        fewest = (fmt.number(a.fewest_gpus_full, locale, 0) if a.fewest_gpus_full
                  else t("what_fits.more_than", locale, n=a.gpus_searched))
        if a.fits_at_micro_1:
            fixes = t("what_fits.fits_as_is", locale)
        elif a.would_fit_with:
            fixes = ", ".join(t(f"what_fits.fix.{f}", locale) for f in a.would_fit_with)
        else:
            fixes = t("what_fits.no_fix", locale)
        cells = {"gpu": gpu, "micro": micro, "seq": _tokens(a.longest_seq, a.seq_searched, locale),
                 "seq_ckpt": _tokens(a.longest_seq_checkpointed, a.seq_searched, locale), "fewest": fewest,
                 "fixes": fixes}
        rows.append(tuple(cells[c] for c in what_fits_columns(answers)))
    return tuple(rows)


def what_fits_numeric(answers: Sequence[WhatFits]) -> tuple[bool, ...]:
    """Which shown columns are numbers (right-aligned in the reports)."""
    return tuple(c not in ("gpu", "fixes") for c in what_fits_columns(answers))


def preferred_precision(plan: Plan) -> str | None:
    """The recommended option's precision: what fits is answered at it where a GPU supports it."""
    primary = plan.option(plan.recommendation.primary)
    return primary.precision if primary is not None else None
