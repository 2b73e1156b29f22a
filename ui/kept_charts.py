"""Charts drawn from a Vega-Lite spec kept per figures, not rebuilt on every rerun.

A chart depends only on the figures it shows, so a builder (a module-level function of
hashable figures, ``ui.chart_specs``) returns its spec over named datasets and their rows;
the spec is turned into JSON and the rows into Arrow once per distinct figures, and handed to
Streamlit (``st.vega_lite_chart``). Built with Altair and validated against its schema, a
chart cost 40-100 ms (nine confusion matrices took ~1.5 s of a 100,000-response page's 1.8 s
rerun); the rows' conversion is Streamlit's own, 0.4 s for a 15,000-point score chart.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit import dataframe_util

# A builder: figures in, (Vega-Lite spec over {"name": name} data, {name: rows}) out.
Builder = Callable[..., tuple[Any, dict[str, list[dict]]]]


# The kept charts, newest last, within a budget of bytes: a score chart over thousands of
# points is a megabyte, and every saved verdict makes a new one.
BUDGET = 16_000_000
Kept = tuple[str, dict[str, bytes]]  # the spec without its data, each dataset as Arrow
_kept: OrderedDict[tuple, Kept] = OrderedDict()
_size = 0
_lock = threading.Lock()


def show(build: Builder, *figures: Any, **options: Any) -> None:
    """Draw ``build(*figures)`` (``figures`` hashable); ``options`` go to Streamlit."""
    text, datasets = kept(build, *figures)
    spec = json.loads(text)
    spec["datasets"] = dict(datasets)  # Arrow bytes: Streamlit sends them as they are
    st.vega_lite_chart(spec, **options)


def kept(build: Builder, *figures: Any) -> Kept:
    """The Vega-Lite JSON of ``build(*figures)`` and its rows as Arrow, made once while kept."""
    global _size
    key = (build, figures)
    with _lock:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
            return found
    spec, datasets = build(*figures)
    # The rows turned into Arrow once, by Streamlit's own conversion (as
    # st.vega_lite_chart does on every call: 0.4 s for a 15,000-point score chart).
    found = (json.dumps(spec), {name: dataframe_util.convert_anything_to_arrow_bytes(rows)
                                for name, rows in datasets.items()})
    with _lock:
        if key not in _kept:
            _kept[key] = found
            _size += _bytes(found)
        while _size > BUDGET and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _size -= _bytes(dropped)
    return found


def _bytes(item: Kept) -> int:
    return len(item[0]) + sum(len(data) for data in item[1].values())


def forget() -> None:
    """Drop every kept spec (tests)."""
    global _size
    with _lock:
        _kept.clear()
        _size = 0
