"""Browsing a dataset: search (in SQL), a page at a time with a page number to jump to, and a
click on a row to read that response in full."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.dto import DatasetInfo, ResponseInfo
from storage.services import datasets as service
from ui import safe_text
from ui.runtime import database_key, sessions_for

state = st.session_state
PAGE_SIZE = 15


@st.cache_data(ttl=60, max_entries=128, show_spinner=False)
def get_matching_page(db: str, dataset_id: int, search: str, offset: int, limit: int,
                      response_count: int) -> tuple[int, list[ResponseInfo]]:
    """``response_count`` keys the cache to the dataset's size (an import changes it)."""
    return service.search_responses(sessions_for(db), dataset_id, search, offset=offset,
                                    limit=limit)


def handle_search() -> None:
    state["responses_page"] = 0


def handle_jump() -> None:
    state["responses_page"] = max(0, int(state["responses_jump"]) - 1)


def go_page(delta: int) -> None:
    state["responses_page"] = max(0, state["responses_page"] + delta)


def short(text: str | None, limit: int = 120) -> str:
    if not text:
        return ""
    flat = " ".join(safe_text.text(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_browse(dataset: DatasetInfo) -> None:
    if dataset.response_count == 0:
        st.info("This dataset is empty. Upload a CSV, JSONL or JSON file, or paste a "
                "response, using the tabs above.")
        return
    if state["responses_page_dataset"] != dataset.id:
        state["responses_page_dataset"] = dataset.id
        state["responses_page"] = 0
        state["responses_search"] = ""
    st.text_input("Search id, query and response", key="responses_search",
                  on_change=handle_search, placeholder="words in the response, or an id")
    search = state["responses_search"]
    total, rows = get_matching_page(database_key(), dataset.id, search,
                                    state["responses_page"] * PAGE_SIZE, PAGE_SIZE,
                                    dataset.response_count)
    pages = max(1, -(-total // PAGE_SIZE))
    if state["responses_page"] > pages - 1:
        state["responses_page"] = pages - 1
        total, rows = get_matching_page(database_key(), dataset.id, search,
                                        state["responses_page"] * PAGE_SIZE, PAGE_SIZE,
                                        dataset.response_count)
    if not rows:
        st.info("No response contains these words. Clear the search to see them all.")
        return
    page = state["responses_page"]
    first = page * PAGE_SIZE + 1
    table = pd.DataFrame([
        {"#": first + i, "ID": safe_text.text(r.external_id or ""), "Query": short(r.query),
         "Response": short(r.output), "Thinking": "yes" if r.thinking else ""}
        for i, r in enumerate(rows)
    ])
    event = st.dataframe(
        table, hide_index=True, width="stretch", height="content", on_select="rerun",
        selection_mode=["single-row", "single-cell"],
        key=f"responses_table_{dataset.id}_{page}_{search}",
        # Fixed widths that fit a 1280-pixel screen with the sidebar open.
        column_config={"#": st.column_config.NumberColumn(width=50),
                       "ID": st.column_config.TextColumn(width=90),
                       "Query": st.column_config.TextColumn(width=200),
                       "Response": st.column_config.TextColumn(width=350),
                       "Thinking": st.column_config.TextColumn(width=70)})
    render_pager(total, first, len(rows), page, pages, bool(search))
    picked = (list(event.selection.rows) or [cell[0] for cell in event.selection.cells]
              if event is not None else [])
    index = picked[0] if picked and picked[0] < len(rows) else 0
    st.caption("Click a row to read it in full." if not picked else
               f"Response #{first + index} in full:")
    render_response(rows[index])


def render_pager(total: int, first: int, shown: int, page: int, pages: int,
                 searching: bool) -> None:
    prev, jump, info, nxt = st.columns([2, 2, 4, 2], vertical_alignment="bottom")
    prev.button("Previous", on_click=go_page, args=(-1,), disabled=page == 0,
                icon=":material/arrow_back:", key="responses_prev", width="stretch")
    state["responses_jump"] = page + 1  # before the widget is drawn: the page shown now
    jump.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, step=1,
                      key="responses_jump", on_change=handle_jump)
    matching = " matching" if searching else ""
    info.markdown(f"Responses {first:,}–{first + shown - 1:,} of {total:,}{matching} · "
                  f"page {page + 1:,} of {pages:,}", text_alignment="center")
    nxt.button("Next", on_click=go_page, args=(1,), disabled=page >= pages - 1,
               icon=":material/arrow_forward:", icon_position="right",
               key="responses_next", width="stretch")


def render_response(response: ResponseInfo) -> None:
    with st.container(border=True):
        if response.external_id:
            st.markdown(f"**ID** {safe_text.md(response.external_id)}")
        if response.query:
            st.markdown("**Query**")
            st.text(safe_text.text(response.query))
        if response.thinking:
            st.markdown("**Thinking**")
            st.text(safe_text.text(response.thinking))
        st.markdown("**Response**")
        st.text(safe_text.text(response.output))
        if response.reference:
            st.markdown("**Reference answer**")
            st.text(safe_text.text(response.reference))
        if response.metadata:
            st.markdown("**Other columns**")
            st.json(response.metadata, expanded=False)
