"""The one loader for every YAML and JSON file trainplan reads: size, alias and depth caps, one grammar, typed errors.

Every failure is an InputError naming the file (and, where there is one, the field and line); nothing else
escapes. The reading order is: stat (a FIFO, device or folder is refused without opening it) -> bounded read ->
strict UTF-8 -> parse -> caps -> construction.

YAML: a C-accelerated SafeLoader subclass (pure-Python SafeLoader where libyaml is missing). The document is
composed to nodes first; an iterative walk of the node graph then enforces the caps BEFORE any Python object is
built: nodes reachable through aliases (a 1 KB "billion laughs" file expands to 10^9), nesting depth, recursive
aliases, duplicate keys, tags and calendar dates. libyaml's composer recurses in C and overflows the stack on
~10^5 nested levels, so a file with enough structural characters to nest that deep is first scanned event by
event (iterative) for its depth. The number grammar is YAML 1.1's plus exponents without a dot or sign
(`1e9`, `8e1`, `2.46e10` are floats, as users write them).

JSON: json.loads with duplicate keys rejected (key and line named), size capped before parsing, depth checked
iteratively afterwards.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import TrainplanError
from planner.inputs.errors import InputError

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class FileKind:
    """What a file is for: its syntax, the most bytes it may have, and the structure caps its parse gets."""

    name: str            # in messages: "a {name}"
    syntax: str          # "yaml" or "json"
    max_bytes: int
    max_depth: int = 32          # nested mappings/lists, aliases expanded
    max_nodes: int = 100_000     # YAML values after alias expansion (a real scenario has ~100, a profile ~400)


SCENARIO = FileKind("scenario file (YAML)", "yaml", 1 * MIB)
PROFILE = FileKind("GPU profile (YAML)", "yaml", 1 * MIB)
OVERRIDES = FileKind("price overrides file (YAML)", "yaml", 1 * MIB)
RESULT = FileKind("result file (JSON)", "json", 64 * MIB)
CATALOG = FileKind("zoo catalog (JSON)", "json", 8 * MIB)

KINDS = (SCENARIO, PROFILE, OVERRIDES, RESULT, CATALOG)

# libyaml's composer recursion is safe far beyond this; a document with fewer structural characters than this
# cannot nest deeper, so only larger ones pay for the event scan.
_SAFE_COMPOSE_INDICATORS = 1000
_INDICATORS = "[{-:?"
# Dates a plan can mean: a price quote, an exchange rate. Outside this is a typo (20266-01-01, 0026-01-01).
EARLIEST_DATE = dt.date(2000, 1, 1)
LATEST_DATE = dt.date(2100, 12, 31)
DATE_EXPECTED = f"a real calendar date YYYY-MM-DD between {EARLIEST_DATE} and {LATEST_DATE}"


# ---------------------------------------------------------------- reading bytes

def read_file(path: str | Path, kind: FileKind) -> bytes:
    """The file's bytes, at most kind.max_bytes; a missing, special (FIFO, device, folder) or large file is refused."""
    source = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(source, None, source, f"an existing {kind.name}") from None
    except OSError as exc:
        raise InputError(source, None, _os_text(exc), f"a readable {kind.name}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(source, None, _file_type(st.st_mode), f"a regular file: a {kind.name}")
    _check_size(st.st_size, source, kind)
    # O_NONBLOCK: if the path was swapped for a FIFO after the stat, opening it does not wait for a writer.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(source, None, _os_text(exc), f"a readable {kind.name}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(source, None, "a special file", f"a regular file: a {kind.name}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(kind.max_bytes + 1 - total, 4 * MIB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > kind.max_bytes:  # it grew after the stat
                _check_size(total, source, kind)
    except OSError as exc:
        raise InputError(source, None, _os_text(exc), f"a readable {kind.name}") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def _check_size(size: int, source: str, kind: FileKind) -> None:
    if size > kind.max_bytes:
        raise InputError(source, None, f"{size:,} bytes", f"a {kind.name} of at most {_size_text(kind.max_bytes)}")


def _size_text(n: int) -> str:
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n // KIB} KiB"


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _os_text(exc: OSError) -> str:
    return f"{exc.__class__.__name__}: {exc.strerror or exc}"


def decode(data: bytes, source: str, kind: FileKind) -> str:
    """Strict UTF-8 (a leading byte-order mark is dropped); the message gives the first bad byte's offset."""
    _check_size(len(data), source, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(source, None, f"bytes that are not UTF-8 (byte {exc.start:,})",
                         f"a UTF-8 text file: a {kind.name}") from None


# ---------------------------------------------------------------- entry points

def load_file(path: str | Path, kind: FileKind) -> Any:
    """Read, decode and parse one file of `kind`; InputError (and only InputError) on any problem."""
    source = str(path)
    return load_text(decode(read_file(path, kind), source, kind), source, kind)


def load_bytes(data: bytes, source: str, kind: FileKind) -> Any:
    """An upload or stdin: the same caps and grammar as a file."""
    return load_text(decode(data, source, kind), source, kind)


def load_text(text: str, source: str, kind: FileKind) -> Any:
    if len(text) * 4 > kind.max_bytes:  # UTF-8 has at most 4 bytes a character: encode only when it could matter
        n = len(text)
        _check_size(n if n > kind.max_bytes else len(text.encode("utf-8", "surrogatepass")), source, kind)
    if not text.strip():
        raise InputError(source, None, "an empty file", f"a {kind.name}")
    if kind.syntax == "json":
        return parse_json(text, source, kind)
    return parse_yaml(text, source, kind)


# ---------------------------------------------------------------- JSON

class _DuplicateKey(TrainplanError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey
    return out


def parse_json(text: str, source: str, kind: FileKind = RESULT) -> Any:
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError as exc:
        hint = " (the file looks truncated: was the benchmark interrupted?)" if exc.pos >= len(text) - 2 else ""
        raise InputError(source, None, f"JSON error at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                         f"a complete JSON file: a {kind.name}{hint}") from None
    except _DuplicateKey:
        field, line = _json_duplicate(text)
        key = field.rsplit(".", 1)[-1]
        raise InputError(source, field or None, f"duplicate key '{key}' (again at line {line})",
                         "each key once per object") from None
    except RecursionError:
        raise _too_deep(source, None, kind) from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(source, None, f"{exc.__class__.__name__}: {exc}", f"a valid {kind.name}") from None
    _check_json_depth(data, source, kind)
    if _SURROGATE_ESCAPE.search(text):
        _check_json_strings(data, source, kind)
    return data


# json.loads turns a \ud83d\ude00 pair into one character but keeps a lone \ud800 as a str no encoder can write
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _check_json_strings(data: Any, source: str, kind: FileKind) -> None:
    stack = [data]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)
        elif isinstance(obj, str) and not obj.isascii() and not _encodable(obj):
            raise InputError(source, None, f"text with a lone UTF-16 surrogate ({_surrogate(obj)})",
                             f"valid Unicode text in a {kind.name}")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(text: str) -> str:
    bad = next((ch for ch in text if "\ud800" <= ch <= "\udfff"), "?")
    return f"\\u{ord(bad):04x}" if bad != "?" else "?"


def _check_json_depth(data: Any, source: str, kind: FileKind) -> None:
    """Level by level (iterative); json.loads makes exact dicts and lists, so a class test suffices."""
    level, depth = [data], 0
    while level:
        depth += 1
        if depth > kind.max_depth:
            raise _too_deep(source, None, kind)
        below: list = []
        extend = below.extend
        for obj in level:
            if obj.__class__ is dict:
                obj = obj.values()
            elif obj.__class__ is not list:
                continue
            extend([c for c in obj if c.__class__ is dict or c.__class__ is list])
        level = below


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def _json_duplicate(text: str) -> tuple[str, int]:
    """The dotted path of the first key repeated within one object, and the line of the repetition.

    Only called after json.loads found a duplicate, so the text is valid JSON: a token scan suffices.
    """
    # One entry per open container: [keys seen (None for a list), its path, current key, list index]
    stack: list[list] = []
    expect_key = False
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group()
        if tok in "{[":
            path = ""
            if stack:
                parent = stack[-1]
                path = f"{parent[1]}[{parent[3]}]" if parent[0] is None else _dotted(parent[1], parent[2])
            stack.append([set() if tok == "{" else None, path, "", 0])
            expect_key = tok == "{"
        elif tok in "]}":
            if stack:
                stack.pop()
            expect_key = False
        elif tok == ",":
            if stack and stack[-1][0] is None:
                stack[-1][3] += 1
            expect_key = bool(stack) and stack[-1][0] is not None
        elif tok == ":":
            expect_key = False
        elif expect_key and stack:
            key = json.loads(tok)
            top = stack[-1]
            if key in top[0]:
                return _dotted(top[1], key), text.count("\n", 0, m.start()) + 1
            top[0].add(key)
            top[2] = key
            expect_key = False
    return "", 0


def _dotted(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _too_deep(source: str, field: str | None, kind: FileKind) -> InputError:
    return InputError(source, field, "deeper nesting", f"at most {kind.max_depth} levels of nested mappings/lists "
                      f"in a {kind.name}")


# ---------------------------------------------------------------- YAML

_ALLOWED_TAGS = frozenset("tag:yaml.org,2002:" + t for t in
                          ("null", "bool", "int", "float", "str", "timestamp", "seq", "map", "merge"))
_STR_TAG = "tag:yaml.org,2002:str"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# YAML 1.1 floats need a dot and a signed exponent; `1e9`, `8e1`, `2.46e10` read as floats too.
EXPONENT_FLOAT = r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$"

_LOADER_CLASS: Any = None


def _loader_class() -> Any:
    """Built on first use, so importing this module (and the result-file reader) never imports yaml."""
    global _LOADER_CLASS
    if _LOADER_CLASS is not None:
        return _LOADER_CLASS
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class TrainplanLoader(base):
        """Safe types only; constructor failures become YAML errors carrying the node's line."""

        def construct_object(self, node, deep=False):
            try:
                return super().construct_object(node, deep=deep)
            except yaml.YAMLError:
                raise
            except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
                raise yaml.constructor.ConstructorError(
                    None, None, f"cannot read this value ({exc.__class__.__name__}: {exc})", node.start_mark,
                ) from None

    TrainplanLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(EXPONENT_FLOAT),
                                          list("-+0123456789."))
    _LOADER_CLASS = TrainplanLoader
    return TrainplanLoader


def parse_yaml(text: str, source: str, kind: FileKind = SCENARIO) -> Any:
    """One YAML document with the caps of `kind`; InputError on any problem."""
    import yaml

    loader_class = _loader_class()
    try:
        if sum(text.count(c) for c in _INDICATORS) > _SAFE_COMPOSE_INDICATORS:
            _check_event_depth(text, source, kind, loader_class)
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_nodes(node, source, kind, loader)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except InputError:
        raise
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, source, kind) from None
    except RecursionError:
        raise _too_deep(source, None, kind) from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, MemoryError) as exc:
        raise InputError(source, None, f"{exc.__class__.__name__}: {exc}", f"a valid {kind.name}") from None


def _yaml_error(exc: Exception, source: str, kind: FileKind) -> InputError:
    import yaml

    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    position = getattr(exc, "position", None)
    if mark is None and position is not None:  # ReaderError: a character YAML forbids
        where = f" at character {position:,}"
    what = "value error" if isinstance(exc, yaml.constructor.ConstructorError) else "syntax error"
    return InputError(source, None, f"YAML {what}{where}: {problem}", f"valid YAML: a {kind.name}")


def _check_event_depth(text: str, source: str, kind: FileKind, loader_class: Any) -> None:
    """Nesting depth from the parser's event stream (iterative), before the recursive composer sees the text."""
    import yaml

    loader = loader_class(text)
    opens = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    closes = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, opens):
                depth += 1
                if depth > kind.max_depth:
                    line = event.start_mark.line + 1 if event.start_mark is not None else 0
                    raise InputError(source, None, f"deeper nesting at line {line}",
                                     f"at most {kind.max_depth} levels of nested mappings/lists in a {kind.name}")
            elif isinstance(event, closes):
                depth -= 1
    finally:
        loader.dispose()


def _check_nodes(root: Any, source: str, kind: FileKind, loader: Any) -> None:
    """Iterative walk of the node graph: expanded size, depth, cycles, tags, duplicate keys, dates."""
    import yaml

    scalar_type, mapping_type = yaml.ScalarNode, yaml.MappingNode
    done: dict[int, tuple[int, int]] = {}  # id(collection node) -> (height, expanded size)
    open_ids: set[int] = set()
    max_depth, max_nodes = kind.max_depth, kind.max_nodes

    def fail(node: Any, value: object, expected: str) -> InputError:
        return InputError(source, _path_to(root, node), value, expected)

    def check_scalar(node: Any) -> None:
        tag = node.tag
        if tag == _STR_TAG:
            value = node.value
            if not value.isascii() and not _encodable(value):  # pure-Python SafeLoader lets "\ud800" through
                raise fail(node, f"text with a lone UTF-16 surrogate ({_surrogate(value)})",
                           "valid Unicode text")
            return
        if tag not in _ALLOWED_TAGS:
            raise fail(node, f"the tag {tag} at line {node.start_mark.line + 1}",
                       "a plain YAML value (no tags such as !!binary or !!python/...)")
        if tag == _TIMESTAMP_TAG:
            _check_timestamp(node, loader, fail)

    if isinstance(root, scalar_type):
        check_scalar(root)
        return
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        nid = id(node)
        if finished:
            height, size = 0, 1
            for child in _children(node, mapping_type):
                if isinstance(child, scalar_type):
                    size += 1
                else:
                    h, s = done[id(child)]
                    height = max(height, h)
                    size += s
            open_ids.discard(nid)
            done[nid] = (height + 1, size)
            if height + 1 > max_depth:
                raise fail(node, "deeper nesting",
                           f"at most {max_depth} levels of nested mappings/lists in a {kind.name}")
            if size > max_nodes:
                raise fail(node, f"over {max_nodes:,} values once aliases (*name) are expanded",
                           f"at most {max_nodes:,} values in a {kind.name} (an alias bomb?)")
            continue
        if nid in done:
            continue
        if nid in open_ids:
            raise fail(node, f"an alias inside its own anchor at line {node.start_mark.line + 1}",
                       "no recursive aliases")
        if node.tag not in _ALLOWED_TAGS:
            raise fail(node, f"the tag {node.tag} at line {node.start_mark.line + 1}",
                       "a plain YAML mapping or list (no tags such as !!set or !!omap)")
        open_ids.add(nid)
        stack.append((node, True))
        if isinstance(node, mapping_type):
            _check_keys(node, loader, fail, scalar_type)
        for child in _children(node, mapping_type):
            if isinstance(child, scalar_type):
                check_scalar(child)
            elif id(child) not in done:
                stack.append((child, False))


def _children(node: Any, mapping_type: Any) -> list:
    if isinstance(node, mapping_type):
        return [x for pair in node.value for x in pair]
    return node.value


def _check_keys(node: Any, loader: Any, fail: Any, scalar_type: Any) -> None:
    seen: set = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, scalar_type):
            raise fail(key_node, f"a mapping or list used as a key at line {key_node.start_mark.line + 1}",
                       "plain keys (names, numbers)")
        if key_node.tag == _STR_TAG:
            key: Any = key_node.value
        elif key_node.tag == "tag:yaml.org,2002:merge":
            key = ("<<",)
        else:  # 1 and 1.0, yes and true: the same key once constructed
            try:
                key = (loader.yaml_constructors[key_node.tag](loader, key_node),)
            except Exception:  # noqa: BLE001 - an unreadable key: construction names it with its line
                continue
        if key in seen:
            raise fail(key_node, f"duplicate key '{key_node.value}' (again at line {key_node.start_mark.line + 1})",
                       "each key once per mapping")
        seen.add(key)


def _check_timestamp(node: Any, loader: Any, fail: Any) -> None:
    try:
        value = loader.yaml_constructors[_TIMESTAMP_TAG](loader, node)
    except (ValueError, TypeError, AttributeError, OverflowError):
        value = None
    day = value.date() if isinstance(value, dt.datetime) else value
    if not isinstance(day, dt.date) or not EARLIEST_DATE <= day <= LATEST_DATE:
        raise fail(node, node.value, DATE_EXPECTED)


def _path_to(root: Any, target: Any) -> str | None:
    """The dotted field path of `target` (first found, breadth-first, iterative); only built for a message."""
    import yaml

    queue: list[tuple[Any, str]] = [(root, "")]
    seen: set[int] = set()
    i = 0
    while i < len(queue):
        node, path = queue[i]
        i += 1
        if node is target:
            return path or None
        if id(node) in seen or isinstance(node, yaml.ScalarNode):
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                label = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                sub = f"{path}.{label}" if path else str(label)
                if key_node is target:
                    return sub
                queue.append((value_node, sub))
        else:
            queue.extend((child, f"{path}[{j}]") for j, child in enumerate(node.value))
    return None
