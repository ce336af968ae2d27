"""trainplan's planning domain: pure estimation code (no streamlit, torch or pynvml)."""

__version__ = "0.1.0"
