"""planner.inputs.loader, check.Reader and atomic.atomic_write: caps, grammar, dates, special files; and fuzzing
of every loader entry point (only InputError may ever come out)."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.inputs import loader
from planner.inputs.atomic import atomic_write
from planner.inputs.check import Reader, parse_date
from planner.inputs.errors import InputError
from tests.fixtures.bad.make_bad import laughs, overrides_text, profile_text, result_text, scenario_text

# CI: 200 derandomized examples per loader (the same every run). perf/fuzz_loaders.py sets TRAINPLAN_FUZZ_EXAMPLES
# for deeper, randomized runs.
_DEEP = int(os.environ.get("TRAINPLAN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_DEEP or 200, derandomize=not _DEEP, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def y(text: str, kind: loader.FileKind = loader.SCENARIO):
    return loader.parse_yaml(text, "f.yaml", kind)


def fails(fn, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as err:
        fn(*args, **kwargs)
    return err.value


# ---------------------------------------------------------------- one number grammar

@pytest.mark.parametrize("text, value", [
    ("1e9", 1e9), ("8e1", 80.0), ("2.46e10", 2.46e10), ("1.0e+3", 1000.0), ("-5E-2", -0.05), (".5e3", 500.0),
    ("1_000", 1000), ("1_0e2", 1000.0), ("0.35", 0.35), ("42", 42),
])
def test_numbers_users_write_are_numbers(text, value):
    got = y(f"a: {text}")["a"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text", ['"1e9"', "'8e1'", "e9", "1e", "1e9x", "1.2.3"])
def test_quoted_or_malformed_numbers_stay_text(text):
    assert isinstance(y(f"a: {text}")["a"], str)


def test_reader_applies_the_same_grammar_to_mappings_from_plain_yaml():
    plain = yaml.safe_load("a: 1e10\nb: 8e1\nc: '80'\nd: true\ne: 1e3")  # YAML 1.1 leaves 1e10 as text
    r = Reader(plain, "x.yaml")
    assert r.number("a") == 1e10 and r.number("b") == 80.0 and r.integer("e") == 1000
    assert "without quotes" in str(fails(r.number, "c"))
    assert fails(r.number, "d").field == "d"


# ---------------------------------------------------------------- dates

@pytest.mark.parametrize("text, field", [("2026-02-30", "a.b"), ("2026-13-01", "a.b"), ("1999-12-31", "a.b"),
                                         ("2101-01-01", "a.b")])
def test_an_impossible_or_implausible_date_names_the_field(text, field):
    err = fails(y, f"a:\n  b: {text}")
    assert err.field == field and text in str(err) and "calendar date" in str(err)


def test_dates_read_as_dates_and_parse_date_is_strict():
    assert y("d: 2026-11-01")["d"] == dt.date(2026, 11, 1)
    assert parse_date("2026-11-01", "s", "f") == dt.date(2026, 11, 1)
    assert parse_date(dt.datetime(2026, 11, 1, 10), "s", "f") == dt.date(2026, 11, 1)
    for bad in ("20261101", "2026-W01-1", "2026-1-5", "last week", 20261101, None, "2026-02-30"):
        assert fails(parse_date, bad, "s", "f").field == "f"


# ---------------------------------------------------------------- keys, tags, aliases, depth, size

def test_a_duplicate_key_names_the_key_and_the_line():
    err = fails(y, "a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n")
    assert err.field == "b.c" and "duplicate key 'c'" in str(err) and "line 5" in str(err)
    assert fails(y, 'a: 1\n"a": 2').field == "a"
    assert fails(y, "1: x\n1.0: y").field == "1.0"  # the same key once constructed


def test_merge_keys_are_not_duplicates():
    assert y("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3")["use"] == {"x": 1, "y": 3}


@pytest.mark.parametrize("text", ["a: !!binary aGVsbG8=", "a: !!python/object/apply:os.system [id]", "a: !custom x",
                                  "a: !!set {x: null}", "a: !!omap [{x: 1}]"])
def test_tags_are_refused(text):
    assert "tag" in str(fails(y, text))


def test_alias_bomb_recursive_alias_and_deep_nesting_are_refused_quickly():
    t0 = time.perf_counter()
    err = fails(y, scenario_text() + laughs("bomb"))
    assert err.field.startswith("bomb") and "alias" in str(err)
    assert fails(y, "a: &x [1, *x]").field == "a"
    for deep in ("a: " + "[" * 100_000 + "]" * 100_000, "- " * 100_000 + "x",
                 "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 60)) + "  " * 60 + "c: 1"):
        assert "levels" in str(fails(y, deep))
    assert time.perf_counter() - t0 < 5


def test_a_moderate_alias_use_is_fine():
    data = y("d: &d {a: 1, b: [1, 2, 3]}\n" + "\n".join(f"k{i}: *d" for i in range(1000)))
    assert data["k999"] == {"a": 1, "b": [1, 2, 3]}


def test_caps_are_per_kind():
    assert loader.SCENARIO.max_bytes == loader.PROFILE.max_bytes == loader.OVERRIDES.max_bytes == 1 << 20
    assert loader.RESULT.max_bytes >= 64 << 20
    assert "at most 1 MiB" in str(fails(loader.load_text, "#" * (1 << 20) + "\na: 1", "s.yaml", loader.SCENARIO))
    big = "# é\n" * 300_000  # 1.5 MB of UTF-8 in fewer characters than bytes
    assert "at most 1 MiB" in str(fails(loader.load_text, big, "s.yaml", loader.SCENARIO))
    assert "an empty file" in str(fails(loader.load_bytes, b" \n", "s.yaml", loader.SCENARIO))


def test_one_document_only_and_syntax_errors_name_the_line():
    assert "line" in str(fails(y, "a: [1\nb: 2"))
    assert "document" in str(fails(y, "a: 1\n---\nb: 2"))
    assert "syntax error" in str(fails(y, "a: b: c"))


def test_values_the_constructor_cannot_read_name_the_line():
    err = fails(y, "a: !!float abc")
    assert "line 1" in str(err) and "value error" in str(err)
    assert "4300" in str(fails(y, "a: " + "9" * 5000)) or "digits" in str(fails(y, "a: " + "9" * 5000))


def test_the_pure_python_fallback_keeps_every_rule(monkeypatch):
    monkeypatch.delattr(yaml, "CSafeLoader")
    monkeypatch.setattr(loader, "_LOADER_CLASS", None)
    try:
        assert y("a: 8e1\nd: 2026-11-01") == {"a": 80.0, "d": dt.date(2026, 11, 1)}
        assert fails(y, "a: 1\na: 2").field == "a"
        assert "alias" in str(fails(y, laughs("bomb")))
        assert "levels" in str(fails(y, "a: " + "[" * 900 + "]" * 900))  # recursion in the Python composer
        assert "levels" in str(fails(y, "a: " + "[" * 100_000 + "]" * 100_000))
        assert "surrogate" in str(fails(y, 'a: "\\ud800"'))
    finally:
        loader._LOADER_CLASS = None  # rebuilt from the C loader on next use


# ---------------------------------------------------------------- JSON

def test_json_duplicates_name_the_path_and_line():
    err = fails(loader.parse_json, '{"m": [{"x": 1},\n {"y": 2,\n "y": 3}]}', "r.json")
    assert err.field == "m[1].y" and "line 3" in str(err)


def test_json_depth_surrogates_and_giant_integers():
    assert "levels" in str(fails(loader.parse_json, "[" * 100_000 + "]" * 100_000, "r.json"))
    assert "levels" in str(fails(loader.parse_json, "[" * 40 + "]" * 40, "r.json"))
    assert loader.parse_json("[" * 32 + "]" * 32, "r.json") is not None
    assert "surrogate" in str(fails(loader.parse_json, '{"a": "\\ud800"}', "r.json"))
    assert loader.parse_json('{"a": "\\ud83d\\ude00"}', "r.json") == {"a": "\U0001F600"}
    assert "r.json" in str(fails(loader.parse_json, '{"a": ' + "1" * 5000 + "}", "r.json"))
    assert "truncated" in str(fails(loader.parse_json, '{"a": [1, 2', "r.json"))


# ---------------------------------------------------------------- files: special, missing, encodings

def test_special_files_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    assert "FIFO" in str(fails(loader.load_file, fifo, loader.SCENARIO))
    assert "character device" in str(fails(loader.load_file, "/dev/zero", loader.SCENARIO))
    assert "folder" in str(fails(loader.load_file, tmp_path, loader.SCENARIO))
    assert "existing" in str(fails(loader.load_file, tmp_path / "none.yaml", loader.SCENARIO))
    assert time.perf_counter() - t0 < 2


def test_unreadable_file_is_an_input_error(tmp_path, monkeypatch):
    """A permission error names the file; simulated at os.open, since CI runs as root and root reads anything."""
    p = tmp_path / "s.yaml"
    p.write_text("a: 1")
    real_open = os.open

    def denied(path, *args, **kwargs):
        if str(path) == str(p):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(loader.os, "open", denied)
    message = str(fails(loader.load_file, p, loader.SCENARIO))
    assert "PermissionError: Permission denied" in message and "a readable scenario file" in message
    assert str(p) in message


def test_encodings(tmp_path):
    assert loader.load_bytes("\ufeffa: 1".encode(), "s.yaml", loader.SCENARIO) == {"a": 1}  # BOM is fine
    assert "UTF-8" in str(fails(loader.load_bytes, "a: é".encode("latin-1"), "s.yaml", loader.SCENARIO))
    assert "UTF-8" in str(fails(loader.load_bytes, "a: 1".encode("utf-16"), "s.yaml", loader.SCENARIO))
    assert "s.yaml" in str(fails(loader.load_bytes, b"a: \x00", "s.yaml", loader.SCENARIO))


# ---------------------------------------------------------------- the Reader: one rule set

def test_reader_rules():
    r = Reader({"n": True, "i": 8.0, "j": 8.5, "s": "", "f": float("nan"), "big": 10**400, "l": [1, 2.0, "3"]},
               "x.yaml", "sec")
    assert fails(r.number, "n").field == "sec.n"
    assert r.integer("i") == 8 and fails(r.integer, "j").field == "sec.j"
    assert fails(r.string, "s").field == "sec.s"
    assert fails(r.number, "f").field == "sec.f"
    assert fails(r.number, "big").field == "sec.big"
    assert fails(r.integer_list, "l").field == "sec.l[2]"
    assert "1e9" in str(fails(Reader({"b": 0}, "x").integer, "b", minimum=1, maximum=10**9))


# ---------------------------------------------------------------- atomic_write

def test_atomic_write_replaces_fails_or_suffixes(tmp_path):
    p = tmp_path / "f.txt"
    assert atomic_write(p, "one") == p and p.read_text() == "one"
    atomic_write(p, b"two")
    assert p.read_text() == "two"
    with pytest.raises(FileExistsError):
        atomic_write(p, "three", if_exists="fail")
    assert atomic_write(p, "three", if_exists="suffix") == tmp_path / "f-2.txt"
    assert p.read_text() == "two" and sorted(x.name for x in tmp_path.iterdir()) == ["f-2.txt", "f.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "report.html"
    atomic_write(p, "good")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        atomic_write(p, "x" * 100_000)
    assert p.read_text() == "good" and [x.name for x in tmp_path.iterdir()] == ["report.html"]


def test_atomic_write_mode_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        p = atomic_write(tmp_path / "a", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o640


# ---------------------------------------------------------------- fuzzing: only InputError ever comes out

def _entry_points(tmp: Path):
    from planner.inputs import imports, profiles, resultfile, scenario, userdata

    def as_file(name: str, reader):
        def run(data: bytes):
            path = tmp / name
            path.write_bytes(data)
            return reader(path)
        return run

    return {
        "loader.load_bytes scenario": lambda b: loader.load_bytes(b, "s.yaml", loader.SCENARIO),
        "loader.load_bytes result": lambda b: loader.load_bytes(b, "r.json", loader.RESULT),
        "scenario.load_scenario_bytes": lambda b: scenario.load_scenario_bytes(b, "up.yaml"),
        "scenario.load_scenario_file": as_file("s.yaml", scenario.load_scenario_file),
        "profiles.load_profile": as_file("lab-gpu.yaml", profiles.load_profile),
        "userdata.load_price_overrides": as_file("price_overrides.yaml", userdata.load_price_overrides),
        "resultfile.read_result_file": as_file("r.json", resultfile.read_result_file),
        "imports.check_upload": lambda b: imports.check_upload("up.json", b),
    }


BASES = {
    "scenario": scenario_text(), "profile": profile_text("lab-gpu"), "overrides": overrides_text(),
    "result": result_text(),
}
YAML_BITS = st.sampled_from(["[", "]", "{", "}", ":", ": ", "- ", "&a ", "*a", "!!", "<<: ", "\n", "  ", "\t", "#",
                             "'", '"', "?", "|", ">", "1e9", "8e1", "2026-02-30", ".inf", "~", "yes", "\x00", "é",
                             "\\ud800", ",", "%", "@", "`", "---", "..."])


@st.composite
def mutated(draw):
    """A shipped-like base with a few random cuts, inserts and swaps: mostly almost-valid files."""
    base = draw(st.sampled_from(sorted(BASES)))
    text = BASES[base]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.one_of(YAML_BITS, st.text(max_size=6)))
        j = min(len(text), i + draw(st.integers(0, 8)))
        text = text[:i] + piece + text[i:] if op == "insert" else text[:i] + (piece if op == "replace" else "") + text[j:]
    return draw(st.sampled_from(["utf-8", "utf-8", "latin-1"])), text


def _encode(enc_text) -> bytes:
    enc, text = enc_text
    return text.encode(enc, "surrogatepass") if enc == "utf-8" else text.encode(enc, "replace")


@FUZZ
@given(st.one_of(st.binary(max_size=600), mutated().map(_encode),
                 st.lists(YAML_BITS, max_size=60).map(lambda xs: "".join(xs).encode("utf-8", "surrogatepass"))))
def test_every_entry_point_raises_only_input_error(tmp_path, data):
    for name, entry in _entry_points(tmp_path).items():
        try:
            entry(data)
        except InputError as exc:
            assert str(exc), name
        except Exception as exc:  # pragma: no cover - the failure this test exists to catch
            raise AssertionError(f"{name} raised {exc.__class__.__name__}: {exc} on {data[:200]!r}") from exc


@FUZZ
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5)),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(st.text(max_size=4), inner, max_size=4)),
                    max_leaves=20))
def test_json_shaped_values_raise_only_input_error(value):
    from planner.inputs.imports import check_upload
    from planner.inputs.profiles import parse_profile
    from planner.inputs.resultfile import parse_result
    from planner.inputs.scenario import parse_scenario

    doc = json.loads(result_text())
    doc["measurements"][0]["step_time_s"] = value
    for fn in (lambda: parse_result(value, "r.json"), lambda: parse_result(doc, "r.json"),
               lambda: parse_scenario(value, "s.yaml"), lambda: parse_profile(value, "p.yaml"),
               lambda: check_upload("u.json", json.dumps(value).encode()),
               lambda: loader.parse_yaml(yaml.safe_dump(value), "v.yaml")):
        try:
            fn()
        except InputError:
            pass
        except ValueError as exc:
            # json.dumps of NaN is valid Python JSON; only InputError may escape our readers
            raise AssertionError(f"{exc.__class__.__name__}: {exc}") from exc
