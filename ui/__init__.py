"""Thin Streamlit pages over planner/."""
