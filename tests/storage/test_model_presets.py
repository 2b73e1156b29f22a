"""Model presets live in a JSON file in the data directory; keys are never stored."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from storage.config import database_url
from storage.engine import SessionFactory, open_database
from storage.errors import InvalidInputError, InvalidStateError
from storage.model_presets import (
    ModelPreset,
    add_model_preset,
    list_model_presets,
    presets_path,
    remove_model_preset,
    set_model_price,
)
from tests.actors import ADMIN


@pytest.fixture
def log() -> Iterator[SessionFactory]:
    """The database whose Activity log records the list's changes (each test's own)."""
    sessions = open_database(database_url())
    yield sessions
    sessions.kw["bind"].dispose()


def test_no_file_means_no_presets():
    assert list_model_presets() == ()


def test_added_presets_are_listed_in_order_and_survive_a_reread(log):
    add_model_preset("openai/gpt-4.1-mini", actor=ADMIN, sessions=log)
    add_model_preset(" openai/local-llama ", "http://127.0.0.1:8000/v1/", actor=ADMIN, sessions=log)
    assert list_model_presets() == (
        ModelPreset("openai/gpt-4.1-mini"),
        ModelPreset("openai/local-llama", "http://127.0.0.1:8000/v1"),
    )
    stored = json.loads(presets_path().read_text())
    assert stored["presets"][1] == {"model": "openai/local-llama",
                                    "api_base": "http://127.0.0.1:8000/v1"}


def test_same_model_with_another_api_base_is_a_separate_preset(log):
    add_model_preset("openai/m", actor=ADMIN, sessions=log)
    add_model_preset("openai/m", "http://127.0.0.1:1234/v1", actor=ADMIN, sessions=log)
    assert len(list_model_presets()) == 2


@pytest.mark.parametrize(
    ("model", "api_base", "message"),
    [
        pytest.param("", None, "needs a name", id="empty-model"),
        pytest.param("open ai/x", None, "no spaces", id="space-in-model"),
        pytest.param("openai/x", "localhost:8000", "http(s) URL", id="no-scheme"),
        pytest.param("openai/x", "ftp://host/v1", "http(s) URL", id="wrong-scheme"),
        pytest.param("openai/x", "http://u:secret@host/v1", "password", id="credentials-in-url"),
        pytest.param("openai/x", "https://host/v1?api-key=sk-secret", "key", id="key-in-query"),
    ],
)
def test_malformed_presets_are_refused_with_a_reason(model, api_base, message, log):
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        add_model_preset(model, api_base, actor=ADMIN, sessions=log)
    assert list_model_presets() == ()


def test_a_duplicate_is_refused(log):
    add_model_preset("openai/m", actor=ADMIN, sessions=log)
    with pytest.raises(InvalidInputError, match="already in the list"):
        add_model_preset("openai/m ", actor=ADMIN, sessions=log)


def test_remove_takes_out_exactly_that_preset(log):
    add_model_preset("openai/m", actor=ADMIN, sessions=log)
    add_model_preset("openai/m", "http://127.0.0.1:1/v1", actor=ADMIN, sessions=log)
    assert remove_model_preset("openai/m", "http://127.0.0.1:1/v1", actor=ADMIN,
                               sessions=log) is True
    assert list_model_presets() == (ModelPreset("openai/m"),)
    assert remove_model_preset("openai/m", "http://127.0.0.1:1/v1", actor=ADMIN,
                               sessions=log) is False


def test_a_corrupt_file_is_explained():
    presets_path().parent.mkdir(parents=True, exist_ok=True)
    presets_path().write_text("{not json")
    with pytest.raises(InvalidInputError, match=r"not valid JSON.*; fix or delete the file"):
        list_model_presets()


def test_a_data_directory_that_is_a_file_is_said_so_with_what_to_do(tmp_path, monkeypatch, log):
    # RUBRIC_WORKBENCH_DATA_DIR pointed at a file by mistake: "fix or delete the file" (the
    # list's) would be the wrong advice, and errno wording is not for users.
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    monkeypatch.setenv("RUBRIC_WORKBENCH_DATA_DIR", str(a_file))
    advice = (rf"{a_file} \(or a folder above it\) is a file, not a folder; move that file "
              r"away, or set RUBRIC_WORKBENCH_DATA_DIR to a folder")
    with pytest.raises(InvalidInputError, match="cannot be read: " + advice) as read:
        list_model_presets()
    assert "Errno" not in str(read.value)
    with pytest.raises(InvalidInputError, match=advice):  # Settings' add says the same
        add_model_preset("openai/m", actor=ADMIN, sessions=log)
    assert a_file.read_text() == "not a folder"


def test_a_folder_where_the_list_file_should_be_is_said_so():
    presets_path().mkdir(parents=True)
    with pytest.raises(InvalidInputError,
                       match=rf"{presets_path()} is a folder, not a file; move that folder"):
        list_model_presets()


def test_bad_hand_edited_entries_are_left_out():
    presets_path().parent.mkdir(parents=True, exist_ok=True)
    presets_path().write_text(json.dumps({"presets": [
        {"model": "openai/ok"}, {"model": ""}, {"api_base": "http://x"}, "junk",
        {"model": "openai/b", "api_base": "nope"},
    ]}))
    assert list_model_presets() == (ModelPreset("openai/ok"),)


def test_a_price_is_kept_with_the_preset_and_can_be_changed_or_cleared(log):
    add_model_preset("openai/local", "http://127.0.0.1:8000/v1", input_price="0.5",
                     output_price=1.5, actor=ADMIN, sessions=log)
    [preset] = list_model_presets()
    assert preset.price == (0.5, 1.5)
    set_model_price("openai/local", "http://127.0.0.1:8000/v1", input_price=0,
                    output_price=0, actor=ADMIN, sessions=log)
    assert list_model_presets()[0].price == (0.0, 0.0)  # free is a known price
    set_model_price("openai/local", "http://127.0.0.1:8000/v1", input_price=None,
                    output_price=None, actor=ADMIN, sessions=log)
    [cleared] = list_model_presets()
    assert cleared.price is None and cleared.key == preset.key


@pytest.mark.parametrize(("prices", "message"), [
    pytest.param(("1", None), "both prices", id="only-input"),
    pytest.param(("-1", "2"), "zero or more", id="negative"),
    pytest.param(("nan", "2"), "zero or more", id="nan"),
    pytest.param(("cheap", "2"), "must be a number", id="words"),
])
def test_bad_prices_are_refused_with_a_reason(prices, message, log):
    with pytest.raises(InvalidInputError, match=message):
        add_model_preset("openai/local", input_price=prices[0], output_price=prices[1],
                         actor=ADMIN, sessions=log)
    assert list_model_presets() == ()


def test_a_price_cannot_be_set_on_a_model_not_listed(log):
    with pytest.raises(InvalidInputError, match="add it first"):
        set_model_price("openai/nowhere", None, input_price=1, output_price=1,
                        actor=ADMIN, sessions=log)


def test_changes_to_the_model_list_are_in_the_activity_log(tmp_path, log):
    from storage.services import people

    def events():
        return [(e.actor, e.action, e.target_kind, e.target_name, e.detail)
                for e in people.list_audit_events(log, target_kind="model")]

    add_model_preset("openai/local", "http://127.0.0.1:8000/v1", actor=ADMIN,
                     sessions=log)
    with pytest.raises(InvalidInputError):  # refused: nothing happened, nothing logged
        add_model_preset("openai/local", "http://127.0.0.1:8000/v1", actor=ADMIN, sessions=log)
    set_model_price("openai/local", "http://127.0.0.1:8000/v1", input_price=0.5,
                    output_price=1.5, actor=ADMIN, sessions=log)
    set_model_price("openai/local", "http://127.0.0.1:8000/v1", input_price=0.5,
                    output_price=1.5, actor=ADMIN, sessions=log)  # no change
    remove_model_preset("openai/local", "http://127.0.0.1:8000/v1", actor=ADMIN,
                        sessions=log)
    assert not remove_model_preset("openai/local", "http://127.0.0.1:8000/v1", actor=ADMIN,
                                   sessions=log)
    label = "openai/local @ http://127.0.0.1:8000/v1"
    assert events() == [  # newest first
        (ADMIN.key, "remove from the model list", "model", label, ""),
        (ADMIN.key, "set price", "model", label,
         "litellm's (if it has one) → $0.5 in / $1.5 out per 1M tokens"),
        (ADMIN.key, "add to the model list", "model", label, "litellm's (if it has one)"),
    ]


def test_a_database_that_cannot_log_the_change_leaves_the_list_as_it_was(log, tmp_path):
    from storage.engine import create_db_engine, make_session_factory

    add_model_preset("openai/kept", actor=ADMIN, sessions=log)
    # A database without the app's tables: the Activity log's insert fails.
    unmigrated = create_db_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        with pytest.raises(InvalidStateError, match="the model list was not changed: its "
                                                    "Activity log cannot be written"):
            add_model_preset("openai/new", actor=ADMIN,
                             sessions=make_session_factory(unmigrated))
    finally:
        unmigrated.dispose()
    assert list_model_presets() == (ModelPreset("openai/kept"),)


def test_a_list_file_that_cannot_be_written_is_said_so_and_logs_nothing(log, monkeypatch):
    import errno

    from storage import model_presets
    from storage.services import people

    add_model_preset("openai/kept", actor=ADMIN, sessions=log)

    def disk_full(*_args):  # the operating system's failure, injected (tests run as root)
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched, pytest.raises(
            InvalidStateError, match=r"cannot be written: the disk is full; free some space"):
        patched.setattr(model_presets.os, "replace", disk_full)
        add_model_preset("openai/new", actor=ADMIN, sessions=log)
    assert list_model_presets() == (ModelPreset("openai/kept"),)
    # the refused change is not in the Activity log: only the first one is
    assert [e.target_name for e in people.list_audit_events(log, target_kind="model")] == [
        "openai/kept"]
