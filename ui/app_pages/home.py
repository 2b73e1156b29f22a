"""Home: what the app is and what is ready."""

import streamlit as st

st.title("Rubric Workbench")
st.write(
    "Author weighted rubrics, run LLM judges on responses, compare judges side by side and "
    "correct their verdicts by hand."
)
st.info(
    "The grading library is ready (`from grading import Rubric`). The rubric editor, "
    "uploads, grading runs and review pages are being built."
)
