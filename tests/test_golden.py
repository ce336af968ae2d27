"""Plans and reports stay byte-identical across refactors: every shipped scenario and ~30 one-option variants.

A change that moves numbers on purpose regenerates them (`python tests/golden/cases.py`) in its own commit and
says why in the message.
"""

from __future__ import annotations

import pytest

from tests.golden.cases import CASES, GOLDEN_DIR, render_case


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outputs_match_the_committed_golden_files(case):
    rendered = render_case(case)
    folder = GOLDEN_DIR / case.name
    committed = sorted(p.name for p in folder.iterdir())
    assert committed == sorted(rendered), f"{case.name}: golden files differ in name; regenerate on purpose"
    for name, text in rendered.items():
        expected = (folder / name).read_text(encoding="utf-8")
        assert text == expected, f"{case.name}/{name} changed; regenerate on purpose and say why"
