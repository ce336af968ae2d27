"""The calibration stage (calibration/) sits above the planner: the planner reads what it writes, never its code."""

from __future__ import annotations

from pathlib import Path

from tests.test_architecture import _imported_modules

ROOT = Path(__file__).resolve().parents[1]


def _top_imports(folder: str) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): {m.split(".")[0] for m in _imported_modules(p)}
            for p in sorted((ROOT / folder).rglob("*.py"))}


def test_the_planner_imports_neither_the_calibration_stage_nor_bench():
    bad = {f: sorted(m & {"calibration", "bench"}) for f, m in _top_imports("planner").items()}
    assert not {f: m for f, m in bad.items() if m}


def test_the_corpus_imports_from_the_planner_only_what_bench_may():
    """`python -m bench published` runs calibration/corpus.py on a GPU box that has no streamlit or altair."""
    mods = {m for m in _imported_modules(ROOT / "calibration" / "corpus.py") if m.startswith("planner")}
    assert {m.split(".")[1] for m in mods} <= {"vocab", "inputs"}, sorted(mods)
    assert not {m for m in _imported_modules(ROOT / "calibration" / "corpus.py") if m.split(".")[0] == "bench"}


def test_bench_published_runs_the_calibration_stage_corpus():
    from bench.__main__ import SUBCOMMANDS

    assert SUBCOMMANDS["published"][0] == "calibration.corpus"
