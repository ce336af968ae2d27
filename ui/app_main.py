"""trainplan's Streamlit entry: page config and navigation over the ui/ pages. No logic here.

`streamlit run app.py` (a checkout) calls main() from the root app.py; `trainplan app` runs this file itself, so
the pages are named by their absolute paths: Streamlit resolves a relative page path against the main script.
"""

import gc
from pathlib import Path

import streamlit as st

from ui.i18n_ui import begin_run, tr

PAGES_DIR = Path(__file__).resolve().parent

# The server's garbage collector. A widget change allocates ~10^5 objects and keeps some (plans, the plan memo), so
# with CPython's default thresholds (700, 10, 10) every few runs a full collection walked the ~230,000 objects the
# imports, catalogs and result files left behind: 100-200 ms stalls, a fifth of the mean rerun (perf/app_speed.py;
# AppTest, 40 Epochs changes: mean 95 ms, p90 185 ms; with this: 76 / 78 ms). So: what the first run leaves alive
# is moved out of the collector's sight (gc.freeze: the process keeps it anyway), and young collections run every
# 20,000 allocations instead of 700. Reference cycles are still collected; only later.
# Once per process: the thresholds are the flag (`trainplan app` runs this file anew as __main__ on every rerun, so
# a module variable would not be).
GC_THRESHOLDS = (20_000, 10, 10)


def _tune_gc_after_first_run() -> None:
    if gc.get_threshold() == GC_THRESHOLDS:
        return
    gc.set_threshold(*GC_THRESHOLDS)
    gc.freeze()


def main() -> None:
    try:
        _pages()
    finally:
        _tune_gc_after_first_run()


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
