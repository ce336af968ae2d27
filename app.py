"""trainplan's Streamlit entry for a checkout (`streamlit run app.py`): the app is ui/app_main.py."""

from ui.app_main import main

main()
