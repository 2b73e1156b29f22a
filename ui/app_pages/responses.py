"""Responses page (being built)."""

import streamlit as st

st.title("Responses")
st.info("This page is being built.")
