"""The translation catalog (planner/present/locales/<lang>/*.yaml): both languages complete, Spanish really translated."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from planner.engine.estimates import MemoryEstimate
from planner.present import i18n
from planner.vocab import (
    ADAPTER_TARGETS,
    DEADLINE_CONFIDENCES,
    MEMORY_PHASES,
    OPTIMIZERS,
    PRECISIONS,
    REGION_GROUPS,
    SHARDINGS,
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
        "app.sidebar.confidence": DEADLINE_CONFIDENCES,
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

def _string_constants(paths) -> set[str]:
    """Every string literal of these Python files (implicit concatenation joined; an f-string's fixed parts)."""
    import ast

    out: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.add(node.value)
    return out


def test_bench_reasons_are_the_sentences_bench_writes():
    # The catalog's English bench_reason texts are how the Benchmarks page recognises a file's reason: a sentence
    # bench no longer writes word for word would silently show in English again, so each must be made of bench's
    # own string literals (one sentence can be two literals: f"{no_device}, so there is no time to measure").
    sources = [*sorted((ROOT / "bench").rglob("*.py")), ROOT / "planner" / "inputs" / "actuals.py"]
    constants = _string_constants(sources)
    literals = sorted((c for c in constants if len(c) >= 10), key=len, reverse=True)
    texts = {k: v for k, v in i18n.catalog("en").items() if k.startswith("bench_reason.")}
    assert len(texts) >= 20
    for key, text in texts.items():
        for piece in (literal for literal, *_ in string.Formatter().parse(text) if literal.strip()):
            if piece in constants:  # an f-string's own fixed part ("profile ")
                continue
            left = piece
            for literal in literals:
                left = left.replace(literal, "\0")
            assert re.fullmatch(r"[\0\s\W]*", left), f"{key}: {piece!r} is not what bench writes (left: {left!r})"


def test_reason_text_translates_benchs_sentences_and_keeps_any_other_words():
    from planner.present.result_views import reason_text

    no_kernels = "traced on CPU fake tensors: no GPU kernels run"
    assert reason_text(no_kernels, "en") == no_kernels
    assert reason_text(no_kernels, "es-AR") == "trazado en la CPU con tensores ficticios: no corre ningún kernel de GPU"
    # the filled-in parts (a profile id, a precision, an exception's message) are kept as the file has them
    assert reason_text("profile t4-16gb lists no bf16 peak (unsupported there)", "es") == (
        "el perfil t4-16gb no tiene pico bf16 (esa GPU no la admite)")
    assert reason_text("trace failed: RuntimeError: boom", "es-MX") == "la traza falló: RuntimeError: boom"
    # a sentence holding "; " is one reason; reasons joined with "; " are translated one by one
    tf32 = "tf32 is a CUDA tensor-core mode; on CPU this is the fp32 (ieee) measurement"
    assert reason_text(tf32, "es").startswith("tf32 es un modo de los tensor cores")
    assert reason_text(f"{tf32}; our own note", "es") == i18n.t("bench_reason.tf32_on_cpu", "es") + "; our own note"
    # a teammate's own words, and no reason at all
    assert reason_text("measured on the shared box; fans at 100%", "es") == "measured on the shared box; fans at 100%"
    assert reason_text(None, "es") == "" and reason_text("", "en") == ""


def test_benchs_trace_reasons_all_show_in_spanish():
    # The reasons a trace really writes (bench.trace builds them without torch), failed trace included.
    from bench.trace import _measurement
    from planner.present.result_views import reason_text

    failed = _measurement("bf16", 8, error="RuntimeError: out of fake memory")
    reasons = set(failed["unmeasured"].values())
    assert len(reasons) >= 7
    for reason in reasons:
        assert reason_text(reason, "en") == reason
        assert reason_text(reason, "es-AR") != reason, reason


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
