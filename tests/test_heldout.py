"""calibration/heldout.yaml: the frozen held-out split (issue 32 c). The rule it states holds on the corpus as it
stands, the fit refuses a held-out point, and a held-out figure never reaches the fit nor the planner that predicts
the held-out rows."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from calibration import corpus
from calibration.heldout import (
    MIN_LLM_ROWS,
    MIN_SOURCE_FRACTION,
    HeldOut,
    HeldOutError,
    load_heldout,
    refuse_heldout,
    split_summary,
)
from planner.inputs.errors import InputError


@pytest.fixture(scope="module")
def split():
    rows, problems = corpus.check_corpus(corpus.DEFAULT_ROOT)
    assert not problems
    return split_summary(rows, load_heldout(), memory_units=corpus.MEMORY_UNITS,
                         built=lambda r: corpus.why_not_built(r) is None)


def test_every_held_out_slug_is_a_corpus_source(split):
    assert not split.unknown_slugs, f"held out but not in calibration/published/sources/: {split.unknown_slugs}"


def test_at_least_a_quarter_of_the_sources_with_time_rows_are_held_out(split):
    assert split.source_fraction >= MIN_SOURCE_FRACTION, (
        f"{len(split.heldout_time_sources)} of {len(split.time_sources)} sources with time rows held out "
        f"({split.heldout_time_sources}); add sources to calibration/heldout.yaml")


def test_every_model_family_with_time_rows_is_present_among_the_held_out_rows(split):
    missing = sorted(set(split.families) - set(split.heldout_families))
    assert not missing, f"no held-out time rows of the families {missing}: hold out a source that has some"


def test_at_least_30_llm_rows_are_held_out(split):
    """LLM rows: decoder-family time rows the report can predict (built into results/published/)."""
    assert split.llm_rows >= MIN_LLM_ROWS, (split.llm_rows, split.llm_rows_unbuilt)


@pytest.mark.xfail(strict=True, reason="0 one-GPU LLM time rows held out: the corpus has none built (the 26 PEFT "
                   "L40S tokens/s rows have no sequence length, LitGPT publishes minutes per run); flips when the new "
                   "one-GPU LLM sources land and are held out")
def test_at_least_30_one_gpu_llm_rows_are_held_out(split):
    assert split.llm_rows_one_gpu >= MIN_LLM_ROWS, split.llm_rows_one_gpu


def test_the_loader_names_what_is_wrong(tmp_path):
    path = tmp_path / "heldout.yaml"
    cases = {
        "schema: trainplan.heldout/0\nsources: []\n": "schema",
        "schema: trainplan.heldout/1\nsources:\n  - {slug: a-b, why: x}\n  - {slug: a-b, why: y}\n": "sources[1].slug",
        "schema: trainplan.heldout/1\nsources:\n  - {slug: A B, why: x}\n": "sources[0].slug",
        "schema: trainplan.heldout/1\nsources:\n  - {slug: a-b}\n": "sources[0].why",
        "schema: trainplan.heldout/1\nsources: []\nrule: x\n": "rule",
    }
    for text, field in cases.items():
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as err:
            load_heldout(path)
        assert err.value.field == field and str(path) in str(err.value), (text, str(err.value))


def test_the_fit_refuses_a_held_out_point():
    from calibration import calibration_report as report

    results, _ = report.load_results()
    inputs = report.corpus_inputs()
    heldout = load_heldout()
    points = report.load_points(results, inputs)
    held = next(p for p in points if heldout.holds(p.source))
    sample = report.sample_of(held, inputs)
    assert sample is not None
    with pytest.raises(HeldOutError, match=held.source):
        report.fit([sample], heldout, fitted_on="x")
    with pytest.raises(HeldOutError, match="held-out source"):
        refuse_heldout([sample], HeldOut({held.source: "why"}))
    assert refuse_heldout([sample], HeldOut({})) == [sample]


def _absurd(results, heldout: HeldOut, factor: float):
    """The corpus with every held-out source's published figure multiplied by `factor`."""
    from calibration import calibration_report as report

    out = []
    for rf in results:
        if not heldout.holds(report.source_of(rf)):
            out.append(rf)
            continue
        ms = []
        for m in rf.measurements:
            fig = m.provenance.published if m.provenance else None
            if fig is not None:
                prov = dataclasses.replace(m.provenance, published=dataclasses.replace(fig, value=fig.value * factor))
                m = dataclasses.replace(m, provenance=prov)
            ms.append(m)
        out.append(dataclasses.replace(rf, measurements=tuple(ms)))
    return out


def test_a_held_out_figure_never_reaches_the_fit_nor_the_planner_predicting_it():
    """Make every held-out figure absurd (x1000): the fitted calibration file (transfer range included) is
    byte-equal, and the held-out rows' predictions do not move (their figures are hidden from the planner); the
    held-out rows' errors do (so the test can fail)."""
    from calibration import calibrate
    from calibration import calibration_report as report

    results, _ = report.load_results()
    inputs = report.corpus_inputs()
    heldout = load_heldout()
    absurd = _absurd(results, heldout, 1000.0)
    assert absurd != results
    fitted = calibrate.fitted_text_of(results, inputs, "2026-12-01", heldout)
    assert calibrate.fitted_text_of(absurd, inputs, "2026-12-01", heldout) == fitted
    assert json.loads(fitted)["sources"] and not set(json.loads(fitted)["sources"]) & set(heldout.sources)
    points, preds = report.run(results, inputs, heldout, paths=("heldout",))
    points2, preds2 = report.run(absurd, inputs, heldout, paths=("heldout",))
    held = [i for i, p in enumerate(points) if heldout.holds(p.source)]
    assert held
    for i in held:
        assert preds2["heldout"][i].predicted_s == pytest.approx(preds["heldout"][i].predicted_s, rel=1e-12)
        ratio = points2[i].published_s / points[i].published_s  # a throughput x1000 is a time /1000
        assert ratio == pytest.approx(1000.0, rel=1e-9) or ratio == pytest.approx(0.001, rel=1e-9)
    assert all(math.isnan(preds["heldout"][i].predicted_s) for i in range(len(points)) if i not in held)
    # the multi-GPU rows of held-out sources, planned by the multi-GPU path: unmoved too
    multi, multi2 = report.multi_gpu_rows(results, inputs, heldout), report.multi_gpu_rows(absurd, inputs, heldout)
    planned = [(a, b) for a, b in zip(multi, multi2, strict=True) if heldout.holds(a.source) and a.prediction]
    assert len(planned) >= 30
    for a, b in planned:
        assert b.prediction is not None and b.prediction.predicted_s == pytest.approx(a.prediction.predicted_s,
                                                                                     rel=1e-12)
