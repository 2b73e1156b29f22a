"""Streamlit entry point: page navigation."""

import streamlit as st

import grading.litellm_loader
from grading.memory import one_heap
from ui.auth import gate
from ui.state import init_state
from ui.url_state import entering

# The app's server runs for months and makes and drops session objects all along: loading
# litellm must not freeze its heap out of the garbage collector (``grading.litellm_loader``).
grading.litellm_loader.freeze_heap_on_load = False
# Each page's script runs on a thread of its own: all of them on one heap, so what one page
# freed is what the next one reuses (``grading.memory.one_heap``; once per process).
one_heap()
st.set_page_config(page_title="Rubric Workbench", page_icon=":material/balance:", layout="wide")
init_state()
# In team mode nothing below runs until the person has signed in and has a role.
gate()

pages = {
    "Workbench": [
        st.Page("app_pages/home.py", title="Start", icon=":material/home:", default=True),
        st.Page("app_pages/rubrics.py", title="Rubrics", icon=":material/checklist:"),
        st.Page("app_pages/responses.py", title="Responses", icon=":material/description:"),
        st.Page("app_pages/grade.py", title="Grade", icon=":material/play_circle:"),
        st.Page("app_pages/results.py", title="Results", icon=":material/table_chart:"),
        st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page("app_pages/review.py", title="Review", icon=":material/rate_review:"),
        st.Page("app_pages/review_pairs.py", title="Review pairs",
                icon=":material/compare:"),
        st.Page("app_pages/agreement.py", title="Agreement", icon=":material/handshake:"),
        st.Page("app_pages/judges.py", title="Judges", icon=":material/groups:"),
    ],
    "Configuration": [
        st.Page("app_pages/settings.py", title="Settings", icon=":material/settings:"),
    ],
}
page = st.navigation(pages)
entering(page.url_path)  # pages that keep their view in the URL restore it on entering
page.run()
