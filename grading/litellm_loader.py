"""litellm, imported once with its price map read locally and its first call's imports done.

Importing litellm costs seconds and, unless told otherwise, fetches a price map from the
internet: it is imported here on first use, never at ``import grading``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from typing import Any

# Imported by litellm's (and the OpenAI SDK's) first chat completion, not by ``import
# litellm``: ~0.9 s of CPU on the event loop in the middle of the first calls, which stalls
# every call in flight and the opening slow start (measured with litellm 1.106).
FIRST_CALL_MODULES = ("openai.resources.chat", "litellm.proxy._types",
                      "litellm.proxy.openai_files_endpoints.common_utils",
                      "litellm.llms.litellm_proxy.chat")
# When this package is the one that imports litellm, it then freezes the heap (``gc.freeze``):
# litellm and the OpenAI SDK are a large heap that every full pass of the cyclic garbage
# collector walked again while grading allocates fast (~0.4 ms of CPU per call, measured).
# Process-wide: objects alive at that moment are never cycle-collected (reference counting
# still frees them). A long-lived process that keeps creating and dropping cyclic objects
# made before its first grade (the app's server) sets this to False before grading;
# ``gc.unfreeze()`` undoes it.
freeze_heap_on_load = True


_first_load_done = False


def load_litellm() -> Any:
    """litellm, imported with its price map read locally (not fetched), together with what
    its first call would import on the event loop; the heap frozen when this import was
    litellm's first (``freeze_heap_on_load``)."""
    global _first_load_done
    first_import = "litellm" not in sys.modules
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.disable_hf_tokenizer_download = True
    litellm.suppress_debug_info = True
    if not _first_load_done:
        _first_load_done = True
        for name in FIRST_CALL_MODULES:
            with contextlib.suppress(ImportError):  # another litellm or SDK version
                importlib.import_module(name)
        if first_import and freeze_heap_on_load:
            gc.collect()
            gc.freeze()
    return litellm
