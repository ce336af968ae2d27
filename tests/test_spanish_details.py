"""Spanish for the engine's own sentences: the transformer formula's set-up (memory source detail, knob by knob) and
the reasons a result file is not used. Built with the real engine functions, rendered as the reports and the app
render them; the English must stay word for word what the engine has always written."""

from __future__ import annotations

import itertools
import re
import string
from dataclasses import replace
from pathlib import Path

import pytest

from planner.engine import memory_activations as ma
from planner.engine.estimates import ResolvedModel, Source, detail
from planner.engine.measurements import _file_applies, index_measurements
from planner.engine.notes import Note
from planner.inputs.resultfile import Measurement, ResultFile
from planner.inputs.scenario import Adapter, TrainingSetup, TransformerShape
from planner.present import i18n
from planner.present.notes import detail_text, english, render_note

ES = "es-AR"

# ---------------------------------------------------------------- the formula's set-up (the memory source's parts)

GPT2 = TransformerShape(layers=12, hidden=768, heads=12, seq_len=1024, vocab=50257)  # gelu, layernorm, dropout unsaid
LLAMA = TransformerShape(layers=32, hidden=4096, heads=32, seq_len=2048, vocab=32000, mlp="swiglu", ffn=11008,
                         kv_heads=8, dropout=0.0)  # rmsnorm, grouped K/V
VIT = TransformerShape(layers=12, hidden=768, heads=12, seq_len=197, vocab=0, dropout=0.1)  # no token vocabulary
BERT_CLS = TransformerShape(layers=12, hidden=768, heads=12, seq_len=512, vocab=30522, dropout=0.1, loss="sequence")
CHUNKED = replace(LLAMA, loss="chunked", norm="layernorm", kv_heads=None)
LITGPT = replace(LLAMA, kv_heads=None, qkv="fused_rope", loss="chunked_fp32")  # LitGPT's fused q|k|v and head
SHAPES = {"gpt2": (GPT2, "decoder"), "llama": (LLAMA, "decoder"), "vit": (VIT, "vit"), "bert": (BERT_CLS, "encoder"),
          "chunked": (CHUNKED, "decoder"), "litgpt": (LITGPT, "decoder")}
# (precision, state layout, compute capability): torch AMP on sm80 (flash kernel), fp32 on sm70 (memory-efficient
# kernel, flash refused), 16-bit weights on sm86
SETUPS = [("bf16", "torch_amp", "8.0"), ("fp32", "torch_amp", "7.0"), ("bf16", "pure_bf16", "8.6")]
ADAPTERS = [None, Adapter(kind="lora", targets="qv"),
            Adapter(kind="qlora", targets="all_linear", base_dtype="nf4", nf4_keeps_input=True),
            Adapter(kind="qlora", targets="all_linear", base_dtype="int8"),
            Adapter(kind="lora", targets="qv", dropout=0.05, fused_qkv=True)]

# English that must not be left in a Spanish detail. Technical words stay (sdpa, flash, eager, rmsnorm, layernorm,
# dropout, checkpointing, torch AMP, fp32, kernel: the es catalog's "kernels"); the config key model.attention is
# a name, so "attention" counts only elsewhere.
ENGLISH = [r"\bdefault\b", r"\b(?:flash|memory-efficient) kernel\b", r"\bfused\b", r"PyTorch's", r"\bneeds\b",
           r"\bassumed\b", r"\bthe shape\b", r"does not say", r"(?<!model\.)\battention\b", r"\bheads\b",
           r"\b16-bit\b", r"\bno dropout\b", r"no token vocabulary", r"\bimage\b", r"\bno logits\b", r"\bloss\b",
           r"\bwhole\b", r"frozen base", r"\bkept\b", r"\binput\b", r"\bexcept\b", r"quantised", r"\btransient\b",
           r"per layer", r"\bthe\b", r"\bits\b", r"\bon\b", r"\bat\b", r"\bof\b", r"\bfor\b", r"\bwith\b"]


def _english_left(text: str) -> list[str]:
    return [rx for rx in ENGLISH if re.search(rx, text, re.I)]


def _sources(monkeypatch: pytest.MonkeyPatch | None = None) -> list[Source]:
    """The source of the transformer formula's activations for every configuration here (the engine's own parts)."""
    out = []
    for (shape, family), (precision, layout, cc), requested, ckpt, adapter, softmax in itertools.product(
            SHAPES.values(), SETUPS, (None, "eager", "sdpa", "flash"), (False, True), ADAPTERS, (False, True)):
        attention, why = ma.resolve_attention(requested, family=family, precision=precision, compute_capability=cc)
        model = ResolvedModel(name="m", family=family, params=124_000_000, transformer=shape)
        _, source = ma.activation_bytes(model, precision, 2, checkpointing=ckpt, layout=layout, attention=attention,
                                        attention_why=why, adapter=adapter, softmax_keeps_input=softmax)
        out.append(source)
    # the bare call (no why) and the formula's other default: no dropout when the shape does not say
    out.append(ma.activation_bytes(ResolvedModel(name="m", family="decoder", params=1, transformer=GPT2), "fp16",
                                   1, layout="megatron")[1])
    # what the stack keeps: a stack's default FlashAttention-2, llm.c's fused classifier, offloaded checkpoints
    for stack in ("hf_trainer_fa2", "fused_kernels", "hand_fused"):
        attention, why = ma.resolve_attention(None, family="decoder", precision="bf16", compute_capability="8.0",
                                              stack=stack)
        shape = LLAMA if stack == "fused_kernels" else GPT2
        out.append(ma.activation_bytes(ResolvedModel(name="m", family="decoder", params=1, transformer=shape), "bf16",
                                       1, attention=attention, attention_why=why, stack=stack, checkpointing=True,
                                       checkpoint_offload=stack == "fused_kernels")[1])
    if monkeypatch is not None:
        monkeypatch.setattr(ma, "ASSUME_DROPOUT", False)
        out.append(Source("analytic", parts=ma._formula_detail(GPT2, "bf16", "torch_amp", attention="sdpa",
                                                               attention_why="", checkpointing=False)))
    return list(dict.fromkeys(out))


def test_the_formula_details_cover_every_piece_the_engine_writes(monkeypatch):
    sources = _sources(monkeypatch)
    text = "\n".join(detail_text(s, "en") for s in sources)
    for piece in ("torch AMP, ", "fp32, ", "16-bit, ", "sdpa attention (default: PyTorch's fused SDPA (flash kernel, ",
                  "(memory-efficient kernel, vit)", "eager attention (model.attention)",
                  "(model.attention flash needs fp16/bf16 on sm80+: SDPA at fp32 on sm7.0)",
                  "flash attention (model.attention), 8 KV heads, rmsnorm", "sdpa attention, ", ", layernorm, ",
                  "dropout assumed (the shape does not say)", "no dropout assumed", "dropout 0, ", "dropout 0.1",
                  ", softmax input kept (PyTorch < 1.11)", ", checkpointing; ",
                  "; no token vocabulary (image transformer): no logits", "; sequence loss: no whole logits",
                  "; chunked loss: no whole logits", "+ logits/loss 4sbV (fp32 log-softmax) + its backward transient",
                  ", fused QKV buffer kept (RoPE), ", "; + chunked logits kept in fp32 4sbV + fp32 log-softmax 4sbV",
                  "): no input kept for frozen linears", "except bitsandbytes' quantised ones",
                  "flash attention (hand_fused runs FlashAttention-2 for a decoder)",
                  ", checkpointed inputs in CPU RAM", "fused classifier: one logits buffer t·sbV",
                  "rmsnorm, fused RMSNorm/SwiGLU kernels (inputs kept, SiLU recomputed)"):
        assert piece in text, piece
    # every piece the catalog says in Spanish is said somewhere here (a new piece gets a configuration)
    es = i18n.catalog("es")
    for key, value in es.items():
        if key.startswith("formula_piece."):
            longest = max((lit for lit, *_ in string.Formatter().parse(value)), key=len)
            assert any(longest in detail_text(s, ES) for s in sources), key


def test_the_formula_set_up_is_spanish_with_spanish_numbers(monkeypatch):
    for source in _sources(monkeypatch):
        detail, es = detail_text(source, "en"), detail_text(source, ES)
        assert es.startswith("Korthikanti et al. 2022, s·b·h·(34 + 5as/h) por capa: "), es
        assert _english_left(es) == [], (es, _english_left(es))
        if "dropout 0.1" in detail:
            assert "dropout de 0,1" in es and "0.1" not in es, es
        if ", 8 KV heads" in detail:
            assert ", 8 cabezas KV, " in es, es
        if "softmax input kept" in detail:
            assert ", se guarda la entrada del softmax (PyTorch < 1.11)" in es, es  # a version, not a number
        if ", checkpointing;" in detail:
            assert ", checkpointing de activaciones;" in es, es
        if "on sm7.0)" in detail:
            assert "en sm7.0)" in es, es  # a compute capability, not a number


def test_one_detail_word_for_word():
    parts = ma._formula_detail(LLAMA, "bf16", "torch_amp", attention="sdpa", checkpointing=True,
                               attention_why=ma.resolve_attention(None, family="decoder", precision="bf16",
                                                                  compute_capability="9.0")[1])
    assert detail_text(Source("analytic", parts=parts), ES) == (
        "Korthikanti et al. 2022, s·b·h·(34 + 5as/h) por capa: torch AMP, atención sdpa (por defecto: el SDPA "
        "fusionado de PyTorch (kernel flash, decoder)), 8 cabezas KV, rmsnorm, dropout de 0, checkpointing de "
        "activaciones; + logits/pérdida 4sbV (log-softmax en fp32) + su transitorio del backward")


# ---------------------------------------------------------------- result files not used

LABEL = "gpt2-a.json (2026-11-30)"
MODEL = ResolvedModel(name="gpt2", family="decoder", params=124_439_808, seq_len=2048)
TRAINING = TrainingSetup(global_batch=32)


def _file(name: str = "gpt2-a.json", created: str = "2026-11-30T10:00:00Z", *, model: dict | None = None,
          traced: bool = False, **settings: object) -> ResultFile:
    rows = (Measurement("traced", "fp32", 8, "ok"),) if traced else ()
    return ResultFile(path=str(Path("results") / name), created_utc=created, partial=False,
                      environment={"device": "cuda"}, model=model or {"name": "gpt2", "seq_len": 2048},
                      settings=settings, measurements=rows)


QLORA = replace(TRAINING, adapter=Adapter(kind="qlora", base_dtype="nf4"))
# (file, scenario training, today's English, words its Spanish must have)
REASONS = [
    (_file(model={"name": "bert_base"}), TRAINING, "another model", "otro modelo"),
    (_file(model={"name": "gpt2", "params": 354_823_168, "seq_len": 2048}), TRAINING,
     "another size of the model (354,823,168 parameters, the scenario has 124,439,808)",
     "354.823.168 parámetros; el escenario tiene 124.439.808"),
    (_file(model={"name": "gpt2", "seq_len": 1304}), TRAINING, "sequence length 1,304 differs from the scenario's 2,048",
     "longitud de secuencia 1.304"),
    (_file(activation_checkpointing=True), TRAINING, "measured with activation checkpointing, the scenario has none",
     "checkpointing de activaciones"),
    (_file(frozen_fraction=0.5), TRAINING, "frozen fraction differs", "congelada"),
    (_file(adapter={"kind": "lora"}), TRAINING, "adapter (LoRA/QLoRA) differs", "adaptador (LoRA/QLoRA)"),
    (_file(adapter={"kind": "lora"}), QLORA, "another adapter (lora, the scenario has qlora)",
     "otro adaptador (lora; el escenario tiene qlora)"),
    (_file(sharding="zero3"), TRAINING, "sharded run (zero3)", "fragmentado (zero3)"),
]
FILE_ENGLISH = [r"\banother\b", r"\bmodel\b", r"\bsize\b", r"\bparameters\b", r"\bscenario\b", r"\bsequence length\b",
                r"\bdiffers\b", r"\bmeasured\b", r"\bnone\b", r"\bfrozen\b", r"\bfraction\b", r"\badapter\b",
                r"\bsharded\b", r"\brun\b", r"\bsuperseded\b", r"\bnewer\b", r"\btrace\b", r"\bnot used\b",
                r"\bthe\b", r"\bwith\b", r"\bby\b", r"\d,\d{3}"]  # an en-US thousands separator


def _file_english_left(text: str) -> list[str]:
    return [rx for rx in FILE_ENGLISH if re.search(rx, text.replace(LABEL, ""), re.I)]


@pytest.mark.parametrize(("rf", "training", "en", "es"), REASONS, ids=[r[2][:24] for r in REASONS])
def test_each_reason_a_file_is_not_used_in_both_languages(rf, training, en, es):
    why = _file_applies(rf, MODEL, training)
    assert isinstance(why, Note) and why.key.startswith("file_")
    assert english(why) == en
    said = render_note(why, ES)
    assert es in said and _file_english_left(said) == [], said
    note = Note("file_not_used", file=rf.label, why=why)
    assert english(note) == f"{LABEL}: not used ({en})"
    said = render_note(note, ES)
    assert said.startswith(f"{LABEL}: no se usó (") and es in said and _file_english_left(said) == [], said


def test_the_plan_lists_unused_files_as_notes_in_either_language():
    old, new = (_file(name, created, traced=True, attention="sdpa") for name, created in
                (("gpt2-a.json", "2026-11-30T10:00:00Z"), ("gpt2-b.json", "2026-12-01T10:00:00Z")))
    other_seq = _file("gpt2-c.json", model={"name": "gpt2", "seq_len": 1304})
    idx = index_measurements([old, new, other_seq], MODEL, TRAINING)
    assert all(n.key == "file_not_used" for n in idx.skipped)
    assert sorted(english(n) for n in idx.skipped) == [
        "gpt2-a.json (2026-11-30): not used (superseded by the newer trace gpt2-b.json)",
        "gpt2-c.json (2026-11-30): not used (sequence length 1,304 differs from the scenario's 2,048)"]
    assert sorted(render_note(n, ES) for n in idx.skipped) == [
        "gpt2-a.json (2026-11-30): no se usó (reemplazado por la traza más reciente, gpt2-b.json)",
        "gpt2-c.json (2026-11-30): no se usó (la longitud de secuencia 1.304 difiere de la del escenario, 2.048)"]


def test_rescaled_and_user_activation_details_are_spanish():
    """A measured line moved to another precision and to checkpointing, and a user's per-sample figure: the pieces
    activation_bytes adds to the source (the real engine, a 124M GPT-2 shape)."""
    model = ResolvedModel(name="gpt2", family="decoder", params=124_439_808, transformer=GPT2,
                          activation_bytes_per_sample=1.2e8)
    line = ma.ActivationLine(precision="fp32", intercept_bytes=0.0, bytes_per_sample=1.0e8,
                             source=Source("measured", parts=(detail("measured_median", batch=4,
                                                                     labels="gpt2.json"),)))
    _, measured = ma.activation_bytes(model, "bf16", 4, checkpointing=True, line=line, layout="pure_bf16")
    user_model = replace(model, transformer=None)
    _, user = ma.activation_bytes(user_model, "bf16", 4, checkpointing=True, layout="pure_bf16")
    for source in (measured, user):
        english_text, es = detail_text(source, "en"), detail_text(source, ES)
        assert es != english_text
        for word in ("scaled", "transformer formula ratio", "segments", "not given", "used as is"):
            assert word not in es, (word, es)
    assert "escalado de fp32 a bf16 ×" in detail_text(measured, ES)
    assert "checkpointing de activaciones ×0,5 (Chen et al. 2016, √n segmentos)" in detail_text(user, ES)
    assert "activation_precision no indicada: se usa tal cual" in detail_text(user, ES)
