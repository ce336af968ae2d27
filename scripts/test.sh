#!/usr/bin/env bash
# Install everything the tests need on a fresh machine (venv, packages, Debian chromium) and run them all.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ requirements-dev.txt -nt .venv/.installed-dev ] || [ requirements.txt -nt .venv/.installed-dev ] \
   || ! .venv/bin/python -c "import pytest, hypothesis, playwright, streamlit, torch" 2>/dev/null; then
  .venv/bin/pip install -q -r requirements-dev.txt
  touch .venv/.installed-dev
fi
# Browser tests drive Debian's chromium (never `playwright install`); pdftoppm renders PDF pages to look at; a CJK
# font (WenQuanYi Micro Hei, 4 MB) lets the PDF test draw Chinese, Japanese and Korean with a system font, as a
# user's machine with one does (the project vendors no CJK font).
if ! command -v chromium >/dev/null 2>&1 || ! command -v pdftoppm >/dev/null 2>&1 \
    || ! fc-list :lang=zh 2>/dev/null | grep -q .; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium poppler-utils \
      fonts-wqy-microhei >/dev/null
  else
    echo "note: chromium/poppler-utils/fonts-wqy-microhei missing and not root: browser and CJK PDF tests will skip" >&2
  fi
fi
.venv/bin/ruff check .
# Types: planner/, bench/ and ui/ with zero errors; the engine with --strict's flags (pyproject.toml [tool.mypy]).
.venv/bin/mypy
# The published corpus: every transcribed number stands on the upstream line it cites.
.venv/bin/python -m bench published check
# The shipped price catalog: the snapshot is exactly what its raw upstream excerpts make.
.venv/bin/python -m planner prices import gpu_profiles/catalog/raw --out gpu_profiles/catalog/skypilot.yaml --check
exec .venv/bin/python -m pytest -q "$@"
