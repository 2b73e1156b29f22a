"""Grade page (being built)."""

import streamlit as st

st.title("Grade")
st.info("This page is being built.")
