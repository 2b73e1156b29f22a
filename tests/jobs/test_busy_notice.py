"""A run whose server is still finishing calls we gave up on says so, not "no answer in time"
(issue 36): the probe's failure reaches the run's outage notice through the real HTTP path."""

from __future__ import annotations

import pytest

from grading.errors import TransientProviderError
from grading.llm import LiteLLMGenerate
from storage.jobs.calls import outage_reason
from tests.fake_provider import Reply


async def test_a_probe_that_gets_no_answer_reads_as_a_busy_server_on_the_run(fake_provider):
    fake_provider.serve_at_once(1)
    fake_provider.enqueue(Reply(hang=30))  # runs on at the server until the test ends
    generate = LiteLLMGenerate("openai/busy-notice", api_base=fake_provider.api_base,
                               api_key="test-key", timeout=0.5, structured_output="off")

    with pytest.raises(TransientProviderError) as first:
        await generate("system", "a question")
    assert outage_reason(first.value) == "no answer in time"
    with pytest.raises(TransientProviderError) as second:  # its probe waits 1 s, in vain
        await generate("system", "a question")

    assert "still busy with 1 call we stopped waiting for" in str(second.value)
    assert outage_reason(second.value) == "still finishing calls given up on"
    # the hung call and the probe; the question itself was never sent again
    assert fake_provider.requests == 2 and fake_provider.bodies[1]["max_tokens"] == 1
