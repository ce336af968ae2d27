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
