#!/usr/bin/env bash
# Install what the app needs (a local .venv) and start it on http://127.0.0.1:8501.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import streamlit, planner" 2>/dev/null || [ requirements.txt -nt .venv/.installed ]; then
  .venv/bin/pip install -q -r requirements.txt
  touch .venv/.installed
fi
exec .venv/bin/streamlit run app.py "$@"
