"""The pooling verdicts of a folder of result files (planner/engine/pooling.py) as lines and table rows, in a
language: `python -m planner results check` prints them, the app's Benchmarks page shows the set-aside ones."""

from __future__ import annotations

from dataclasses import dataclass

from planner.engine.notes import Note
from planner.engine.pooling import FolderVerdict, GroupVerdict
from planner.present.notes import render_note


@dataclass(frozen=True)
class SetAsideRow:
    """One set-aside point: which file (its id, what a user names to use it anyway) and why, in the language."""

    file_id: str
    file: str
    gpu_id: str
    model: str
    precision: str
    stack: str
    batch_size: int
    median_s: float
    partial: bool
    why: str


def set_aside_rows(fv: FolderVerdict, locale: str | None) -> list[SetAsideRow]:
    rows = []
    for g in fv.groups:
        for i, note in g.verdict.set_aside:
            c = g.candidates[i]
            rows.append(SetAsideRow(c.file_id, c.label, g.gpu_id, g.model, g.precision, g.stack, g.batch_size,
                                    c.median_s, c.partial, render_note(note, locale)))
    return rows


def _group_line(g: GroupVerdict, locale: str | None) -> str:
    used = [g.candidates[i] for i in g.verdict.used]
    files = tuple(f"{c.label} [{c.file_id}]" for c in used)
    partial = tuple(c.label for c in used if c.partial)
    key = "pool_used_partial" if partial else "pool_used"
    return render_note(Note(key, gpu=g.gpu_id, model=g.model, precision=g.precision, stack=g.stack,
                            batch=g.batch_size, n=len(used), files=files, partial=partial), locale)


def verdict_lines(fv: FolderVerdict, locale: str | None) -> list[str]:
    """One line per configuration (the files pooled), one per point set aside (why, and the file's id) and one
    per repeated file (counted once)."""
    lines = []
    for g in fv.groups:
        if g.verdict.used:
            lines.append(_group_line(g, locale))
        for i, note in g.verdict.set_aside:
            lines.append(f"{render_note(note, locale)} [{g.candidates[i].file_id}]")
    for copy, original in fv.repeats:
        lines.append(render_note(Note("file_not_used", file=copy, why=Note("file_repeat", original=original)),
                                 locale))
    return lines
