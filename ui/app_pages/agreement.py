"""Agreement page (being built)."""

import streamlit as st

st.title("Agreement")
st.info("This page is being built.")
