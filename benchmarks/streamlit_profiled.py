"""``streamlit run`` with every script run timed and its SQL statements counted.

Used by benchmarks/review_speed.py ``--profile``: each run (the whole page, or only a
fragment) appends one JSON line to ``$RW_PROFILE_LOG`` — kind, seconds, SQL statements and the
slowest statements. With ``RW_PROFILE_TREE=1`` fragment runs are also profiled (cProfile on the
script thread's CPU time) and the top of the profile goes into the record.

    python benchmarks/streamlit_profiled.py ui/app.py --server.port ...
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from sqlalchemy import event
from sqlalchemy.engine import Engine
from streamlit.runtime.scriptrunner import exec_code, script_runner
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

LOG = os.environ["RW_PROFILE_LOG"]
TREE = os.environ.get("RW_PROFILE_TREE") == "1"
_local = threading.local()
_write = threading.Lock()


@event.listens_for(Engine, "before_cursor_execute")
def _before(conn, cursor, statement, parameters, context, executemany):
    _local.started = time.perf_counter()


@event.listens_for(Engine, "after_cursor_execute")
def _after(conn, cursor, statement, parameters, context, executemany):
    queries = getattr(_local, "queries", None)
    if queries is not None:
        queries.append((time.perf_counter() - _local.started, " ".join(statement.split())[:160]))


# session_state keys worth seeing at the start of each run (what the run was asked to do)
WATCHED = ("review_position", "review_submitted", "review_form_nonce", "review_due")
_original = exec_code.exec_func_with_error_handling


def _timed(func, ctx):
    _local.queries = []
    profiler = None
    fragment = bool(ctx.fragment_ids_this_run)
    if TREE and fragment:
        # CPU time of this thread only: on a loaded machine wall time mostly measures waiting
        import cProfile

        profiler = cProfile.Profile(time.thread_time)
        profiler.enable()
    state = ctx.session_state
    before = {k: state[k] for k in WATCHED if k in state}
    before["keys"] = len(list(state.filtered_state))
    started = time.perf_counter()
    began = time.time()
    cpu = time.thread_time()
    try:
        return _original(func, ctx)
    finally:
        elapsed = time.perf_counter() - started
        cpu = time.thread_time() - cpu
        queries, _local.queries = _local.queries, None
        record = {"kind": "fragment" if fragment else "page", "seconds": round(elapsed, 4),
                  "cpu": round(cpu, 4),
                  "state": before, "sql": len(queries),
                  "sql_seconds": round(sum(q[0] for q in queries), 4),
                  "slowest": [[round(t, 4), s] for t, s in sorted(queries, reverse=True)[:5]],
                  "began": began, "at": time.time()}
        if profiler is not None:
            import io
            import pstats

            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
            stats.print_stats(45)
            record["tree"] = out.getvalue()
        with _write, open(LOG, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")


exec_code.exec_func_with_error_handling = _timed
script_runner.exec_func_with_error_handling = _timed
assert get_script_run_ctx  # imported so the module is loaded before the app's threads start

if __name__ == "__main__":
    from streamlit.web.cli import main

    sys.argv = ["streamlit", "run", *sys.argv[1:]]
    sys.exit(main())
