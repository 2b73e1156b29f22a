"""Rubric Workbench's Streamlit app (entry: ui/app.py)."""
