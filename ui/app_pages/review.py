"""Review page (being built)."""

import streamlit as st

st.title("Review")
st.info("This page is being built.")
