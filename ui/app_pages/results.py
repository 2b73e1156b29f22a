"""Results page (being built)."""

import streamlit as st

st.title("Results")
st.info("This page is being built.")
