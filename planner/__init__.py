"""trainplan's planning domain: pure estimation code (no streamlit, torch or pynvml)."""

from planner.vocab import VERSION as __version__

__all__ = ["__version__"]
