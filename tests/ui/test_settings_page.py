"""AppTest: the Settings page — model presets, key presence by name, test connection, storage."""

from __future__ import annotations

import pytest

from storage.model_presets import ModelPreset, add_model_preset, list_model_presets
from tests.actors import ADMIN
from tests.fake_provider import Reply, fake_provider, fake_provider_server
from tests.ui.pages import frame_with, frames, open_page, texts, unescape

__all__ = ["fake_provider", "fake_provider_server"]


@pytest.fixture(autouse=True)
def _no_worker(monkeypatch):
    monkeypatch.setenv("RUBRIC_WORKBENCH_IN_PROCESS_WORKER", "0")


def _add(at, model, api_base=""):
    at.text_input[0].input(model)
    at.text_input[1].input(api_base)
    next(b for b in at.button if b.label == "Add model").click().run()
    assert not at.exception, at.exception


def _all_text(at) -> str:
    return texts(at) + "\n".join(f.to_string() for f in frames(at))


def test_empty_model_list_says_what_the_grade_page_falls_back_to():
    at = open_page("settings")
    assert "No models yet" in texts(at)
    assert "openai/gpt-4.1-mini" in texts(at)


def test_add_and_remove_model_presets():
    at = open_page("settings")
    _add(at, "openai/local-llama", "http://127.0.0.1:8000/v1")
    _add(at, "anthropic/claude-x")
    assert list_model_presets() == (
        ModelPreset("openai/local-llama", "http://127.0.0.1:8000/v1"),
        ModelPreset("anthropic/claude-x"),
    )
    table = frames(at)[0]
    assert table["Key read from"].tolist() == ["RUBRIC_WORKBENCH_API_KEY", "ANTHROPIC_API_KEY"]
    at.selectbox(key="settings_preset").set_value("anthropic/claude-x").run()
    at.button(key="settings_remove").click().run()
    assert list_model_presets() == (
        ModelPreset("openai/local-llama", "http://127.0.0.1:8000/v1"),)
    assert "Removed anthropic/claude-x" in texts(at)


def test_a_malformed_api_base_is_refused_with_an_example():
    at = open_page("settings")
    _add(at, "openai/x", "localhost:8000")
    assert "must be an http(s) URL such as http://127.0.0.1:8000/v1" in texts(at)
    assert list_model_presets() == ()


def test_key_variables_are_listed_by_name_and_values_never_shown(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value")
    at = open_page("settings")
    assert ":green-badge[:material/check: OPENAI_API_KEY]" in texts(at)
    keys = frame_with(at, "Variable")
    status = dict(zip(keys["Variable"], keys["Set"], strict=True))
    assert status["OPENAI_API_KEY"]
    assert not status["ANTHROPIC_API_KEY"]
    assert "sk-very-secret-value" not in _all_text(at)


def test_no_key_at_all_gets_a_warning_with_the_way_out():
    at = open_page("settings")
    assert "No provider key is set" in " ".join(w.value for w in at.warning)


def test_test_connection_succeeds_against_a_working_server(fake_provider, monkeypatch,
                                                           configured_db):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-test-key")
    add_model_preset("openai/fake-judge", fake_provider.api_base, actor=ADMIN,
                     sessions=configured_db)
    at = open_page("settings")
    at.button(key="settings_test").click().run()
    assert not at.exception
    assert unescape(at.success[-1].value).startswith(
        f"Connected. openai/fake-judge @ {fake_provider.api_base} answered in")
    assert fake_provider.requests == 1
    assert "local-test-key" not in _all_text(at)


def test_test_connection_failure_is_in_plain_words(fake_provider, monkeypatch, configured_db):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "wrong-key")
    fake_provider.required_api_key = "right-key"
    add_model_preset("openai/fake-judge", fake_provider.api_base, actor=ADMIN,
                     sessions=configured_db)
    at = open_page("settings")
    at.button(key="settings_test").click().run()
    assert not at.exception
    [error] = [unescape(e.value) for e in at.error]
    assert error.startswith("Connection failed. The provider rejected the API key (HTTP 401)")
    assert "RUBRIC_WORKBENCH_API_KEY" in error
    assert "Traceback" not in error and "wrong-key" not in _all_text(at)


def test_test_connection_to_a_server_that_errors(fake_provider, monkeypatch, configured_db):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "k-local")
    fake_provider.enqueue(Reply(status=500, error_message="GPU on fire"))
    add_model_preset("openai/fake-judge", fake_provider.api_base, actor=ADMIN,
                     sessions=configured_db)
    at = open_page("settings")
    at.button(key="settings_test").click().run()
    [error] = [unescape(e.value) for e in at.error]
    assert error.startswith("Connection failed.") and "500" in error


def test_storage_locations_are_shown():
    at = open_page("settings")
    where = frames(at)[-1]
    rows = dict(zip(where["What"], where["Where"], strict=True))
    assert rows["Database"].startswith("sqlite:///") and rows["Database"].endswith(
        "workbench.db")
    assert rows["Model list"].endswith("model_presets.json")


def test_a_price_per_million_tokens_is_saved_with_the_model_and_shown():
    at = open_page("settings")
    at.text_input[0].input("openai/local-llama")
    at.text_input[1].input("http://127.0.0.1:8000/v1")
    at.number_input(key="settings_add_input_price").set_value(0.2)
    at.number_input(key="settings_add_output_price").set_value(0.6)
    next(b for b in at.button if b.label == "Add model").click().run()
    assert not at.exception
    [preset] = list_model_presets()
    assert preset.price == (0.2, 0.6)
    assert frame_with(at, "Price (USD)")["Price (USD)"].tolist() == [
        "$0.2 in / $0.6 out per 1M tokens"]
    at.number_input(key="settings_price_0_input_price").set_value(0.0)
    at.number_input(key="settings_price_0_output_price").set_value(0.0)
    next(b for b in at.button if b.label == "Save price").click().run()
    assert list_model_presets()[0].price == (0.0, 0.0)
    assert "$0 in / $0 out per 1M tokens" in texts(at)


def test_only_one_of_the_two_prices_is_refused_and_nothing_is_added():
    at = open_page("settings")
    at.text_input[0].input("openai/local-llama")
    at.number_input(key="settings_add_input_price").set_value(0.2)
    next(b for b in at.button if b.label == "Add model").click().run()
    assert "give both prices" in texts(at)
    assert list_model_presets() == ()


def test_a_connection_result_is_gone_after_the_next_action_and_news_sits_by_the_controls(
        fake_provider, monkeypatch, configured_db):
    monkeypatch.setenv("RUBRIC_WORKBENCH_API_KEY", "local-test-key")
    add_model_preset("openai/fake-judge", fake_provider.api_base, actor=ADMIN,
                     sessions=configured_db)
    at = open_page("settings")
    at.button(key="settings_test").click().run()
    assert any(unescape(s.value).startswith("Connected.") for s in at.success)
    _add(at, "openai/second-judge", fake_provider.api_base)
    shown = [unescape(s.value) for s in at.success]
    # the earlier test's "Connected" no longer stands beside the news of the add
    assert not any(s.startswith("Connected.") for s in shown), shown
    [added] = [s for s in shown if s.startswith("Added")]
    # said under the models' controls (after the add form's button), not above the fold
    order = [_words(node) for node in _walk(at.main)]
    assert order.index("Add model") < next(i for i, v in enumerate(order)
                                           if unescape(v).startswith("Added"))
    assert added


def _walk(node):
    """Every element of the page in the order it is drawn."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _words(node) -> str:
    for field in ("label", "value"):
        value = getattr(node, field, None)
        if isinstance(value, str):
            return value
    return ""
