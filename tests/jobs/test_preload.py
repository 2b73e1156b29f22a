"""Everything litellm's first call imports is imported before grading starts, so the first
calls of a run do not stall the event loop (and every call in flight) on imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FIRST_CALL = """
import asyncio, sys
from tests.fake_provider import FakeProvider
from storage.jobs.run_options import preload_litellm
from grading.llm import LiteLLMGenerate
from grading.prompts import per_criterion_response_format

provider = FakeProvider().start()
if sys.argv[1] == "preload":
    preload_litellm()
else:
    import litellm  # what the runner did before: the import alone
before = set(sys.modules)
generate = LiteLLMGenerate("openai/judge", api_base=provider.api_base, api_key="k")
result = asyncio.run(generate("system", "user", response_format=per_criterion_response_format()))
assert result.text, result
heavy = sorted(m for m in set(sys.modules) - before
               if m.startswith(("openai.resources", "litellm.proxy")))
print(len(heavy), heavy[:5])
provider.stop()
"""


def _first_call(mode: str) -> int:
    """How many modules of the OpenAI SDK's API and litellm's proxy the first call imports."""
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_CALL, mode], cwd=ROOT, capture_output=True, text=True,
        timeout=300, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, check=True)
    return int(out.stdout.split(" ", 1)[0])


def test_the_first_call_after_preload_imports_nothing_heavy_on_the_event_loop():
    # Without the preload (``import litellm`` only) the first call imports the SDK's API.
    assert _first_call("import-only") > 20
    assert _first_call("preload") == 0
