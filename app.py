"""trainplan's Streamlit entry: page config and navigation over the ui/ pages. No logic here."""

import streamlit as st

from ui.i18n_ui import begin_run, tr

st.set_page_config(page_title="trainplan", page_icon=":material/timer:", layout="wide")
begin_run()

# One entry per page in ui/, in menu order; a new page is one more line here (and its app.nav.* title).
PAGES = [
    st.Page("ui/plan_page.py", title=tr("app.nav.plan"), icon=":material/calculate:", url_path="plan", default=True),
    st.Page("ui/compare_page.py", title=tr("app.nav.compare"), icon=":material/compare_arrows:", url_path="compare"),
    st.Page("ui/benchmarks_page.py", title=tr("app.nav.benchmarks"), icon=":material/speed:", url_path="benchmarks"),
    st.Page("ui/gpus_page.py", title=tr("app.nav.gpus"), icon=":material/memory:", url_path="gpus"),
    st.Page("ui/report_page.py", title=tr("app.nav.report"), icon=":material/description:", url_path="report"),
]

st.navigation(PAGES).run()
