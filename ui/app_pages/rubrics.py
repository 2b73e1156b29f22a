"""Rubrics page (being built)."""

import streamlit as st

st.title("Rubrics")
st.info("This page is being built.")
