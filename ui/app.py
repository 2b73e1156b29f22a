"""Streamlit entry point: page navigation."""

import streamlit as st

st.set_page_config(page_title="Rubric Workbench", layout="wide")

pages = [st.Page("app_pages/home.py", title="Home", default=True)]
st.navigation(pages).run()
