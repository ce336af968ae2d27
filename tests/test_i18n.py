"""The translation catalog (planner/present/locales/<lang>/*.yaml): both languages complete, Spanish really translated."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from planner.engine.estimates import CostLines, MemoryEstimate
from planner.present import i18n
from planner.vocab import (
    ADAPTER_TARGETS,
    DEADLINE_CONFIDENCES,
    MEMORY_PHASES,
    OPTIMIZERS,
    PRECISIONS,
    REGION_GROUPS,
    SHARDINGS,
    SOFTWARE_STACKS,
    SOURCE_KINDS,
    TIERS,
    TOPOLOGIES,
)
from ui.state import ATTENTION_CHOICES

ROOT = Path(__file__).resolve().parent.parent

# Words that are the same in Spanish on purpose: names, language names, units and industry terms that
# Spanish-speaking teams write as they are (the seed articles keep "GPU", "forward", "backward", optimizer names).
# A Spanish text equal to its English one passes only when every word in it is one of these.
SAME_IN_BOTH = {
    "no", "english", "español", "adam", "adamw", "adafactor", "sgd", "gpu", "gpus", "gib", "gb", "ms", "kwh", "usd",
    "tflops", "tdp", "spot", "pue", "mfu", "nccl", "cuda", "lora", "qlora", "zero", "fsdp", "fp32", "tf32", "fp16",
    "bf16", "fp8", "p10", "p50", "p90", "forward", "backward", "id", "h", "s", "w", "b", "eager", "sdpa", "flash", "error",
    "tokens",
}

# The seed articles' vocabulary (../shared/seeds/) that the Spanish app must use for these ideas.
SEED_VOCABULARY = {
    "app.sidebar.global_batch": "tamaño de lote",
    "app.sidebar.precisions_help": "precisión mixta",
    "app.col.steps": "pasos hasta converger",
    "app.col.samples_per_s": "ejemplos por segundo",
    "app.metric.fits_help": "memoria pico de la gpu",
    "app.col.step_s": "tiempo por paso",
    "app.sidebar.micro_auto_help": "acumulación de gradientes",
    "app.sidebar.optimizer": "optimizador",
    "app.metric.cost": "costo",
}


@pytest.fixture(autouse=True)
def _fresh_catalog():
    i18n.catalog.cache_clear()
    yield
    i18n.catalog.cache_clear()


def test_no_key_is_missing_in_either_language():
    assert i18n.missing_keys() == {}, "keys present in one language only"


def test_every_catalog_file_has_its_twin():
    for lang in i18n.LANGUAGES:
        names = {p.name for p in (i18n.LOCALES_DIR / lang).glob("*.yaml")}
        assert {"app.yaml", "common.yaml"} <= names
        for other in i18n.LANGUAGES:
            assert names == {p.name for p in (i18n.LOCALES_DIR / other).glob("*.yaml")}, (lang, other)


@pytest.mark.parametrize("filename", sorted(p.name for p in (i18n.LOCALES_DIR / "en").glob("*.yaml")))
def test_spanish_is_translated_outside_the_allow_list(filename):
    en, es = _file_keys("en", filename), _file_keys("es", filename)
    same = {k: v for k, v in en.items() if es.get(k) == v and _words(v) - SAME_IN_BOTH}
    assert same == {}, f"{filename}: Spanish equals English (translate, or add a true term to SAME_IN_BOTH)"


def test_placeholders_match_between_languages():
    en, es = i18n.catalog("en"), i18n.catalog("es")
    for key, text in en.items():
        assert _fields(text) == _fields(es[key]), key


class _AnyValue:
    """A parameter that accepts any format spec (the English catalog's `{t0:.3g}`, `{n:count}`)."""

    def __format__(self, spec: str) -> str:
        return "1"


def test_every_value_formats():
    for lang in i18n.LANGUAGES:
        for key, text in i18n.catalog(lang).items():
            try:  # a stray brace fails here, not in front of a user
                text.format(**dict.fromkeys(_fields(text), _AnyValue()))
            except (ValueError, IndexError, KeyError) as exc:
                pytest.fail(f"{lang}: {key}: {exc}")


def test_format_specs_are_the_english_catalogs_and_known():
    """A number's format spec lives in the English text only (present/notes.py applies it in every language), and
    each is one Python formats a float with, or a named one (count, duration)."""
    english = i18n.catalog("en")
    for lang in i18n.LANGUAGES:
        for key, text in i18n.catalog(lang).items():
            for _, field, spec, _ in string.Formatter().parse(text):
                if not field or not spec:
                    continue
                assert lang == "en", f"{lang}: {key}: {{{field}:{spec}}}: the spec belongs in the English text"
                if spec not in ("count", "duration"):
                    format(1.5, spec)  # raises on a spec Python cannot apply to a number
    assert any(s for t in english.values() for _, f, s, _ in string.Formatter().parse(t) if f)  # the test reads specs


def test_keys_the_app_names_exist():
    sources = [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py"))]
    named, prefixes = set(), set()
    for path in sources:
        text = path.read_text(encoding="utf-8")
        named |= set(re.findall(r'"((?:app|common)\.[a-z_]+(?:\.[a-z_]+)+)"', text))
        prefixes |= set(re.findall(r'(?:choice_label\(|tr(?:_or)?\(f)"((?:app|common)\.[a-z_.]+?)\.?\{', text))
        prefixes |= set(re.findall(r'choice_label\("((?:app|common)\.[a-z_.]+)"', text))
    choices = {
        "common.part": MemoryEstimate.PARTS, "common.tier": TIERS, "common.source": SOURCE_KINDS,
        "common.optimizer": OPTIMIZERS, "common.sharding": SHARDINGS, "common.adapter_targets": ADAPTER_TARGETS,
        "common.adapter": ("none", "lora", "qlora"), "common.language": i18n.LANGUAGES,
        "app.sidebar.work_kinds": ("epochs", "tokens", "reference_points"),
        "common.origin": ("published", "user", "on_prem"), "common.precision": PRECISIONS,
        "common.phase": MEMORY_PHASES, "app.sidebar.attentions": ATTENTION_CHOICES,
        "common.region_group": REGION_GROUPS, "common.topology": TOPOLOGIES,
        "app.sidebar.confidence": DEADLINE_CONFIDENCES, "common.stack": SOFTWARE_STACKS,
        "app.why.cost_line": CostLines.NAMES,
    }
    # columns: every one is rendered by the AppTest tests, in both languages; app.sidebar.<field>: plan_page's
    # field_label names a clamped field by its sidebar label and falls back to the field's key (tr_or)
    prefixes -= {"app.col", "app.col_help", "app.sidebar"}
    assert prefixes <= set(choices), f"choice prefixes without a value list here: {prefixes - set(choices)}"
    named -= prefixes
    named |= {f"{prefix}.{value}" for prefix, values in choices.items() for value in values}
    en = i18n.catalog("en")
    assert sorted(k for k in named if k not in en) == []


def test_spanish_uses_the_seed_vocabulary():
    es = i18n.catalog("es")
    for key, words in SEED_VOCABULARY.items():
        assert words in es[key].lower(), (key, es[key])


def test_t_falls_back_to_english_and_fills_params():
    assert i18n.t("summary.headline", "es-AR", option="X") == "Recomendación: X"
    assert i18n.t("summary.headline", "fr", option="X") == "Recommended: X"
    with pytest.raises(KeyError):
        i18n.t("app.no_such_key", "en")


# ---------------------------------------------------------------- reasons read from result files

def test_reason_text_renders_keys_and_keeps_any_other_words():
    """A reason renders from its key and parameters (the legacy reader gives a keyless file's sentences theirs)."""
    from planner.inputs.reasons import legacy_parts
    from planner.present.result_views import reason_text

    no_kernels = legacy_parts("traced on CPU fake tensors: no GPU kernels run")
    assert [p.key for p in no_kernels] == ["no_gpu_kernels"]
    assert reason_text(no_kernels, "es-AR") == i18n.t("bench_reason.no_gpu_kernels", "es")
    # the filled-in parts (a profile id, a precision, an exception's message) are kept as the file has them
    peak = legacy_parts("profile t4-16gb lists no bf16 peak (unsupported there)")
    assert [(p.key, dict(p.params)) for p in peak] == [("no_precision_peak", {"profile": "t4-16gb",
                                                                             "precision": "bf16"})]
    assert reason_text(peak, "es") == i18n.t("bench_reason.no_precision_peak", "es", profile="t4-16gb",
                                             precision="bf16")
    failed = legacy_parts("trace failed: RuntimeError: boom")
    assert [(p.key, dict(p.params)) for p in failed] == [("trace_failed", {"error": "RuntimeError: boom"})]
    # a sentence holding "; " is one reason; reasons joined with "; " are read one by one
    tf32 = legacy_parts("tf32 is a CUDA tensor-core mode; on CPU this is the fp32 (ieee) measurement; our own note")
    assert [p.key for p in tf32] == ["tf32_on_cpu", None]
    assert reason_text(tf32, "es") == i18n.t("bench_reason.tf32_on_cpu", "es") + "; our own note"
    # a teammate's own words, and no reason at all
    own = legacy_parts("measured on the shared box; fans at 100%")
    assert {p.key for p in own} == {None} and reason_text(own, "es") == "measured on the shared box; fans at 100%"
    assert legacy_parts(None) == () and reason_text((), "es") == ""


def test_benchs_trace_reasons_are_keys_and_all_show_in_spanish():
    # The reasons a trace really writes (bench.trace builds them without torch), failed trace included.
    from bench.trace import _measurement
    from planner.inputs.resultfile import parse_result
    from planner.present.result_views import reason_text

    failed = _measurement("bf16", 8, error="RuntimeError: out of fake memory")
    assert failed["reason_keys"] == [{"key": "step_failed", "params": {"error": "RuntimeError: out of fake memory"}}]
    keys = {parts[0]["key"] for parts in failed["unmeasured_keys"].values()}
    assert set(failed["unmeasured_keys"]) == set(failed["unmeasured"]) and len(keys) >= 7
    assert failed["unmeasured_keys"]["static_bytes"] == [
        {"key": "trace_failed", "params": {"error": "RuntimeError: out of fake memory"}}]
    doc = {"schema": "trainplan.bench/2", "created_utc": "2026-12-01T00:00:00Z", "environment": {
        "device": "cpu", "trainplan_version": "0", "cudnn": 1}, "model": {"name": "gpt2"}, "measurements": [failed]}
    m = parse_result(doc, "trace.json").measurements[0]
    for field, parts in m.unmeasured_parts.items():
        assert reason_text(parts, "en") == failed["unmeasured"][field]
        assert reason_text(parts, "es-AR") != failed["unmeasured"][field], field


def _file_keys(lang: str, filename: str) -> dict[str, str]:
    import yaml

    out: dict[str, str] = {}
    i18n._flatten(yaml.safe_load((i18n.LOCALES_DIR / lang / filename).read_text(encoding="utf-8")) or {}, "", out,
                  Path(filename))
    return out


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _words(text: str) -> set[str]:
    """The words of a text, lower-cased, placeholders left out."""
    return {w.lower() for w in re.findall(r"[^\W\d_][\w]*", re.sub(r"\{[^}]*\}", "", text))}
