"""trainplan's Streamlit entry: page config and navigation over the ui/ pages. No logic here.

`streamlit run app.py` (a checkout) calls main() from the root app.py; `trainplan app` runs this file itself, so
the pages are named by their absolute paths: Streamlit resolves a relative page path against the main script.
"""

from pathlib import Path

import streamlit as st

from planner import gctune
from ui.i18n_ui import begin_run, tr

PAGES_DIR = Path(__file__).resolve().parent

# The server's garbage collector is tuned once the first run has loaded everything (planner/gctune.py says why).
GC_THRESHOLDS = gctune.GC_THRESHOLDS


def main() -> None:
    try:
        _pages()
    finally:
        gctune.tune_gc_once()


def _pages() -> None:
    st.set_page_config(page_title="trainplan", page_icon=":material/timer:", layout="wide")
    begin_run()
    # One entry per page in ui/, in menu order; a new page is one more line here (and its app.nav.* title).
    pages = [
        st.Page(PAGES_DIR / "plan_page.py", title=tr("app.nav.plan"), icon=":material/calculate:", url_path="plan",
                default=True),
        st.Page(PAGES_DIR / "compare_page.py", title=tr("app.nav.compare"), icon=":material/compare_arrows:",
                url_path="compare"),
        st.Page(PAGES_DIR / "benchmarks_page.py", title=tr("app.nav.benchmarks"), icon=":material/speed:",
                url_path="benchmarks"),
        st.Page(PAGES_DIR / "gpus_page.py", title=tr("app.nav.gpus"), icon=":material/memory:", url_path="gpus"),
        st.Page(PAGES_DIR / "report_page.py", title=tr("app.nav.report"), icon=":material/description:",
                url_path="report"),
        st.Page(PAGES_DIR / "actuals_page.py", title=tr("app.nav.runs"), icon=":material/fact_check:",
                url_path="runs"),
    ]
    st.navigation(pages).run()


if __name__ == "__main__":  # `trainplan app`: Streamlit runs this file as the main script, on every rerun
    main()
