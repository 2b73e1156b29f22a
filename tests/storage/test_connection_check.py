"""Test connection: one tiny real litellm call to the fake provider, failures in plain words."""

from __future__ import annotations

import pytest

from storage.connection_check import (
    CHECK_MAX_TOKENS,
    check_connection,
    key_variables,
    needed_key_variable,
)
from storage.model_presets import ModelPreset
from tests.fake_provider import Reply, fake_provider, fake_provider_server

__all__ = ["fake_provider", "fake_provider_server"]


def test_a_working_server_answers(fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-key")
    result = check_connection(ModelPreset("openai/fake", fake_provider.api_base), timeout=10)
    assert result.ok, result.message
    assert "answered" in result.message
    assert fake_provider.requests == 1
    assert fake_provider.last_body["max_tokens"] == CHECK_MAX_TOKENS
    # the same kind of call a run makes: with the verdict's JSON schema
    assert fake_provider.last_body["response_format"]["type"] == "json_schema"
    assert "accepts a JSON schema" in result.message
    assert result.structured_output == "json_schema"


@pytest.mark.parametrize(("accepted", "mode", "says", "requests"), [
    pytest.param({"json_object"}, "json_object", "No JSON schema", 2, id="llama-cpp-python"),
    pytest.param(set(), "off", "parsed from text", 3, id="no-json-option"),
])
def test_a_server_that_refuses_the_json_schema_is_reported_as_what_it_takes(
        fake_provider, monkeypatch, accepted, mode, says, requests):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-key")
    fake_provider.accepted_formats = accepted  # refused with HTTP 500, as llama-cpp-python does
    result = check_connection(ModelPreset("openai/fake", fake_provider.api_base), timeout=10)
    assert result.ok, result.message
    assert says in result.message
    assert result.structured_output == mode
    assert fake_provider.requests == requests


def test_a_check_finds_out_afresh_what_a_changed_server_takes(fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-key")
    preset = ModelPreset("openai/fake", fake_provider.api_base)
    fake_provider.accepted_formats = {"json_object"}
    assert check_connection(preset, timeout=10).structured_output == "json_object"
    fake_provider.accepted_formats = None  # the server was upgraded
    assert check_connection(preset, timeout=10).structured_output == "json_schema"


def test_a_server_error_is_reported_without_a_traceback(fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-key")
    fake_provider.enqueue(Reply(status=503, error_message="model is loading"))
    result = check_connection(ModelPreset("openai/fake", fake_provider.api_base), timeout=10)
    assert not result.ok
    assert "503" in result.message
    assert "Traceback" not in result.message


def test_a_rejected_key_is_named_but_never_shown(fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "sk-wrong-secret")
    fake_provider.required_api_key = "right"
    result = check_connection(ModelPreset("openai/fake", fake_provider.api_base), timeout=10)
    assert not result.ok
    assert "RUBRIC_WORKBENCH_API_KEY" in result.message
    assert "sk-wrong-secret" not in result.message


def test_a_missing_cloud_key_is_reported_before_any_call():
    result = check_connection(ModelPreset("anthropic/claude-x"))
    assert not result.ok
    # One sentence per thing to know: what is missing, then where to set it and what next.
    assert result.message == (
        "No API key was found for anthropic/claude-x. Set ANTHROPIC_API_KEY (or "
        "RUBRIC_WORKBENCH_API_KEY) in the environment of the process that runs the app, "
        "then restart the app.")


def test_an_unreachable_server_says_check_the_address(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "k1")
    result = check_connection(ModelPreset("openai/x", "http://127.0.0.1:9/v1"), timeout=5)
    assert not result.ok
    assert "Could not reach http://127.0.0.1:9/v1" in result.message


def test_a_model_without_provider_is_explained(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "k1")
    result = check_connection(ModelPreset("nonsense-model"), timeout=5)
    assert not result.ok
    assert "provider/model" in result.message


def test_key_variables_report_presence_by_name_only(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("MY_CUSTOM_API_KEY", "other-secret")
    found = {k.name: k.present for k in key_variables()}
    assert found["OPENAI_API_KEY"] is True
    assert found["ANTHROPIC_API_KEY"] is False
    assert found["MY_CUSTOM_API_KEY"] is True
    assert "sk-secret-value" not in repr(key_variables())


def test_local_servers_read_the_workbench_key_variable():
    assert needed_key_variable(ModelPreset("openai/x", "http://127.0.0.1:1/v1")) == (
        "RUBRIC_WORKBENCH_API_KEY")
    assert needed_key_variable(ModelPreset("anthropic/claude-x")) == "ANTHROPIC_API_KEY"


def test_a_model_that_refuses_max_tokens_is_asked_again_without_it(fake_provider, monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-key")
    fake_provider.enqueue(Reply(status=400, error_message="Unsupported parameter: 'max_tokens' "
                                                          "is not supported with this model"))
    result = check_connection(ModelPreset("openai/fake", fake_provider.api_base), timeout=10)
    assert result.ok, result.message
    assert fake_provider.requests == 2
    assert "max_tokens" not in fake_provider.last_body


FIRST_CHECK = """
import json, sys, time
from storage.connection_check import check_connection
from storage.model_presets import ModelPreset
started = time.monotonic()
result = check_connection(ModelPreset("openai/fake", sys.argv[1]), timeout=60)
print(json.dumps({"ok": result.ok, "message": result.message, "latency": result.latency_s,
                  "wall": time.monotonic() - started,
                  "imported": "litellm" in sys.modules}))
"""


def test_the_first_check_reports_the_call_not_the_library_import(fake_provider, tmp_path):
    """In a fresh process (litellm not yet imported, as in a just-started app), the time
    shown is the model's answer time; importing litellm takes seconds and is not counted."""
    import json
    import os
    import subprocess
    import sys

    fake_provider.latency = 0.1
    env = {**os.environ, "RUBRIC_WORKBENCH_API_KEY": "local-key"}
    done = subprocess.run([sys.executable, "-c", FIRST_CHECK, fake_provider.api_base],
                          capture_output=True, text=True, env=env, timeout=180, check=True)
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["ok"], outcome["message"]
    assert outcome["latency"] >= 0.1  # the server's own delay is in it
    # The import is most of the first check's wall time; the reported time leaves it out.
    assert outcome["latency"] < outcome["wall"] / 2, outcome
    assert f"answered in {outcome['latency']:.1f} s" in outcome["message"]


def test_a_keyless_local_server_works_and_every_check_agrees(fake_provider):
    """Settings' test, the Grade page's pre-check, the CLI and the run ask one function."""
    from storage.jobs.calls import missing_credentials

    preset = ModelPreset("openai/fake", fake_provider.api_base)
    result = check_connection(preset, timeout=10)
    assert result.ok, result.message  # was: "No API key ... set RUBRIC_WORKBENCH_API_KEY"
    assert missing_credentials(preset.model, preset.api_base) is None
    cloud = ModelPreset("openai/gpt-4.1-mini")
    refused = check_connection(cloud)
    assert not refused.ok and "OPENAI_API_KEY" in refused.message
    assert "OPENAI_API_KEY" in missing_credentials(cloud.model, None)
