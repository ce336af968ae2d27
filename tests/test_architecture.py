"""The layering DESIGN.md promises, checked: who may import whom, what each layer can import without, README paths."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any level (function-local imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def _planner_imports(folder: str) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): {m for m in _imported_modules(p) if m.startswith("planner")}
            for p in sorted((ROOT / folder).rglob("*.py"))}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<package>"


def test_bench_imports_only_the_vocabulary_and_the_inputs_from_the_planner():
    bad = {f: sorted(m for m in mods if _layer(m) not in ("vocab", "inputs"))
           for f, mods in _planner_imports("bench").items()}
    assert not {f: m for f, m in bad.items() if m}, "bench runs on a GPU box without streamlit/altair"


@pytest.mark.parametrize("layer,forbidden", [
    ("planner/inputs", ("engine", "present", "cli")),
    ("planner/engine", ("present", "cli")),
    ("planner/present", ("cli",)),
])
def test_data_flows_one_way_inputs_engine_present(layer, forbidden):
    bad = {f: sorted(m for m in mods if _layer(m) in forbidden) for f, mods in _planner_imports(layer).items()}
    assert not {f: m for f, m in bad.items() if m}


def test_the_planner_package_itself_imports_only_the_vocabulary():
    """`import planner` stays cheap: its __init__ takes the version from planner.vocab and nothing else."""
    assert _imported_modules(ROOT / "planner" / "__init__.py") - {"__future__"} <= {"planner.vocab",
                                                                                    "planner.vocab.VERSION"}


def test_the_vocabulary_imports_nothing_from_the_planner():
    assert not {m for m in _imported_modules(ROOT / "planner" / "vocab.py") if m.startswith("planner")}


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_four_layers_import():
    done = _python("import planner.vocab, planner.inputs, planner.engine, planner.present; print('ok')")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


_BLOCK = """
import importlib, pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
import {package}
for info in pkgutil.walk_packages({package}.__path__, '{package}.'):
    importlib.import_module(info.name)
print('ok')
"""


def test_every_inputs_module_imports_without_pandas_streamlit_altair_or_torch():
    """bench imports planner.inputs on a GPU box that has no streamlit or altair."""
    code = _BLOCK.format(blocked={"pandas", "streamlit", "altair", "torch", "pynvml", "vl_convert", "fpdf"},
                         package="planner.inputs")
    done = _python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_engine_imports_without_streamlit_altair_or_torch():
    code = _BLOCK.format(blocked={"streamlit", "altair", "torch", "pynvml", "vl_convert", "fpdf"},
                         package="planner.engine")
    done = _python(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# Paths the README names in backticks: folders and files of this repository (not commands, not user paths).
_PATH = re.compile(r"`((?:planner|bench|ui|calibration|docs|perf|tests|scripts|results|gpu_profiles|scenarios|\.ci)/[^`\s*{}<>]*"
                   r"|app\.py|requirements(?:-dev)?\.txt|pyproject\.toml)`")


# Folders bench creates when it first measures there (a fresh clone has none).
CREATED_AT_RUN_TIME = ("results/cpu/",)


def test_every_path_the_readme_names_exists():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = sorted(set(_PATH.findall(text)))
    assert len(named) >= 10, named  # the test reads real paths, not nothing
    missing = [p for p in named if not (ROOT / p.partition("#")[0].rstrip("/")).exists()  # a docs page with its #anchor
               and p not in CREATED_AT_RUN_TIME]
    assert not missing, f"README names paths that do not exist: {missing}"


def _is_streamlit(node: ast.expr) -> bool:
    """`st` or `st.sidebar` (st.sidebar.file_uploader is Streamlit's widget too)."""
    if isinstance(node, ast.Attribute) and node.attr == "sidebar":
        node = node.value
    return isinstance(node, ast.Name) and node.id == "st"


@pytest.mark.parametrize("widget, why", [
    ("dataframe", 'it draws a missing cell as "—" (st.dataframe draws "None" whatever the styler says; '
                  "tests/test_spanish_everywhere.py finds it per page)"),
    ("file_uploader", "it writes Streamlit's own uploader words (button, size limit) in the interface language "
                      "(tests/test_browser_screens.py checks them on the Spanish Runs page)")])
def test_every_app_table_and_uploader_goes_through_its_one_helper(widget, why):
    """ui.i18n_ui has the one helper for st.<widget>: a page calling Streamlit's own would bring back what the
    helper fixes."""
    calls = {}
    for path in sorted((ROOT / "ui").glob("*.py")):
        if path.name == "i18n_ui.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == widget
                 and _is_streamlit(node.value)]
        if found:
            calls[path.name] = found
    assert not calls, f"st.{widget} outside ui/i18n_ui.py (use its {widget} helper: {why}): {calls}"




def _module_files(package: str = "planner") -> dict[str, Path]:
    """{dotted module name: file} for every module of a package (a package is its __init__.py)."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """{module: the modules of `modules` it imports}, at any level: module top, inside functions, under
    TYPE_CHECKING. `from a.b import c` is an edge to a.b.c when c is a module, else to a.b; relative imports are
    resolved. A package's own __init__ reached only implicitly (importing one of its submodules) is not an edge:
    a package whose __init__ lazily imports its submodules (planner.present.report) is no circle."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    edges.add(target if target in modules else base)
        graph[name] = (edges & modules.keys()) - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("from pkg import b\n", encoding="utf-8")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from pkg.c import x\n", encoding="utf-8")
    (tmp_path / "pkg" / "c.py").write_text("from . import a\nx = 1\n", encoding="utf-8")
    (tmp_path / "pkg" / "d.py").write_text("import pkg.a\n", encoding="utf-8")
    modules = {f"pkg.{p.stem}": p for p in sorted((tmp_path / "pkg").glob("*.py"))}
    graph = _import_graph(modules)
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}, "pkg.d": {"pkg.a"}}
    assert _cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_import_circle_anywhere_in_the_planner():
    """No module of planner/ reaches itself through imports, function-level and TYPE_CHECKING ones included: a
    circle broken by a late import (planner/inputs' price_catalog, profiles, shipped and userdata had one) still
    means neither module can be read or changed without the other. Shared pieces go to a lower module
    (planner.inputs.quotes, planner.inputs.user_home)."""
    modules = _module_files("planner")
    graph = _import_graph(modules)
    assert len(modules) > 50 and sum(map(len, graph.values())) > 200  # the graph is the real one, not empty
    assert graph["planner.inputs.profiles"] >= {"planner.inputs.price_catalog", "planner.inputs.quotes"}
    assert _cycles(graph) == []


# Names of a precision group: asking `precision in ("fp16", "bf16")` (or fp32/tf32) anywhere but planner/vocab.py is a
# second owner of what a precision stores; the one that asked `precision == "fp32"` counted tf32 as 2 bytes.
_GROUP_LITERALS = ({"fp16", "bf16"}, {"fp32", "tf32"})


def _precision_group_tests(source: str) -> list[int]:
    """Lines of Python source that test membership in a literal precision group instead of asking planner.vocab."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            for literal in node.comparators:
                if isinstance(literal, (ast.Tuple, ast.List, ast.Set)) and all(
                        isinstance(e, ast.Constant) for e in literal.elts):
                    if {e.value for e in literal.elts if isinstance(e, ast.Constant)} in _GROUP_LITERALS:
                        found.append(node.lineno)
    return sorted(found)


def test_only_the_vocabulary_says_which_precisions_are_16_bit():
    """planner.vocab owns a precision's group and bytes (precision_group, element_bytes, HALF_PRECISIONS)."""
    caught = "x = 4 if p in ('fp32', 'tf32') else 2\nif p not in ['bf16', 'fp16']:\n    pass\nok = p in ('fp32',)\n"
    assert _precision_group_tests(caught) == [1, 2]
    found = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "planner").rglob("*.py"))
             if p.name != "vocab.py" and (lines := _precision_group_tests(p.read_text(encoding="utf-8")))}
    assert not found, f"ask planner.vocab (precision_group / element_bytes / HALF_PRECISIONS): {found}"


def _exception_classes(package: str = "planner") -> dict[str, type]:
    """{module.Class: class} for every exception class a module of `package` defines at its top level or in a
    class body (read with ast, then imported, so inheritance through other modules counts)."""
    import importlib

    found = {}
    for name, path in _module_files(package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        # A class made inside a function (loader's YAML Loader) cannot be imported: one named like an exception
        # there would escape the check, so none may be.
        in_functions = [n.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                        for n in ast.walk(f) if isinstance(n, ast.ClassDef)
                        and any(re.search(r"(Error|Exception)$", ast.unparse(b)) for b in n.bases)]
        assert not in_functions, f"{name}: exceptions defined inside functions escape this check: {in_functions}"
        module = importlib.import_module(name)
        todo: list[tuple[object, list[ast.stmt]]] = [(module, tree.body)]
        while todo:
            owner, body = todo.pop()
            for node in body:
                if isinstance(node, ast.ClassDef):
                    cls = getattr(owner, node.name)
                    todo.append((cls, node.body))
                    if isinstance(cls, type) and issubclass(cls, BaseException):
                        found[f"{name}.{cls.__qualname__}"] = cls
    return found


def test_every_planner_error_derives_from_the_one_domain_base():
    """planner.errors.TrainplanError is the base of every exception planner/ defines, so one handler can tell a
    domain error (bad input, a missing figure, no quote...) from a bug, and a new error cannot forget it."""
    from planner.errors import TrainplanError

    assert not {m for m in _imported_modules(ROOT / "planner" / "errors.py") if not m.startswith("__future__")}
    errors = _exception_classes()
    assert {"planner.inputs.errors.InputError", "planner.inputs.errors.CannotEstimate",
            "planner.inputs.errors.FitError", "planner.engine.cost.NoQuoteError",
            "planner.engine.convergence.ConvergenceFitError", "planner.engine.sequences.SequenceFieldError",
            "planner.inputs.price_refresh.RefreshError"} <= errors.keys()
    assert not [name for name, cls in errors.items() if not issubclass(cls, TrainplanError)]


# Where present/ and ui/ may use regular expressions, and why: never to read text that the engine, a result file
# or bench produced (those travel as keys and raw numbers: notes, source parts, reason keys, the bench event
# stream), and never with patterns built from a catalog.
RE_ALLOWED = {
    "planner/present/fmt.py": "rewrites CLDR number patterns (babel's own pattern strings), not text it is given",
    "planner/present/report/markdown.py": "escapes Markdown's special characters in the text it writes",
    "ui/markup.py": "escapes Markdown's special characters in the text it writes",
    "ui/state.py": "reads reference points a user typed into a text box ('1024: 36 epochs')",
    "ui/i18n_ui.py": "builds a widget's CSS class name from its key, as Streamlit names it",
    "ui/bench_runner.py": "checks a custom model id a user typed (package.module:callable) before bench runs it",
}


def _imports_re(path: Path) -> bool:
    return "re" in _imported_modules(path)


def test_regular_expressions_in_present_and_ui_are_on_the_allow_list():
    """Issue 31 d: the same sentence has one owner; no regex ties a rendering to another module's wording."""
    files = [p for folder in ("planner/present", "ui") for p in sorted((ROOT / folder).rglob("*.py"))] + \
        [ROOT / "app.py"]
    using = {str(p.relative_to(ROOT)) for p in files if _imports_re(p)}
    assert using <= set(RE_ALLOWED), f"import re outside the allow-list: {sorted(using - set(RE_ALLOWED))}"
    assert set(RE_ALLOWED) <= using, f"stale allow-list entries: {sorted(set(RE_ALLOWED) - using)}"
    for path in files:
        text = path.read_text(encoding="utf-8")
        for needle in ("_detail_templates", "_EN_NUMBER", "_WITH_UNIT", "_reason_patterns", "No module named"):
            assert needle not in text, f"{path.relative_to(ROOT)} parses another module's text ({needle})"


def test_the_catalog_never_becomes_a_pattern():
    """No module compiles a regular expression out of catalog text (the old way Spanish details were matched)."""
    for path in sorted((ROOT / "planner").rglob("*.py")) + sorted((ROOT / "ui").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "re":
                names = {n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
                calls = {n.func.id for arg in node.args for n in ast.walk(arg)
                         if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                assert not ({"catalog", "t", "tr"} & (names | calls)), f"{path.relative_to(ROOT)}:{node.lineno}"
