"""Models (and optional ``api_base``s) the user can pick from, kept in a small JSON file,
each with an optional price per million tokens for models litellm has no price for.

The file lives in ``storage.config.data_dir()`` rather than the database so that presets need
no migration. API keys are never stored here: they come from the environment at call time.
"""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from sqlalchemy.exc import SQLAlchemyError

from grading.redact import has_url_credentials
from storage import limits
from storage.config import DATA_DIR_VARIABLE, data_dir
from storage.db_errors import describe_db_error
from storage.engine import SessionFactory
from storage.errors import InvalidInputError, InvalidStateError
from storage.services import people
from storage.services.reviewers import Actor, Role, require

PRESETS_FILENAME = "model_presets.json"
_lock = threading.Lock()


@dataclass(frozen=True)
class ModelPreset:
    """A model name as litellm spells it (``openai/gpt-4.1-mini``) and where to reach it."""

    model: str
    api_base: str | None = None
    # USD per million input / output tokens; both set or both None (litellm's price).
    input_price: float | None = None
    output_price: float | None = None

    @property
    def label(self) -> str:
        return f"{self.model} @ {self.api_base}" if self.api_base else self.model

    @property
    def key(self) -> tuple[str, str | None]:
        """What identifies a preset: the model and where it is reached (not its price)."""
        return (self.model, self.api_base)

    @property
    def price(self) -> tuple[float, float] | None:
        if self.input_price is None or self.output_price is None:
            return None
        return (self.input_price, self.output_price)


def presets_path() -> Path:
    return data_dir() / PRESETS_FILENAME


def _price(value: object, which: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"the {which} price must be a number of US dollars per million tokens, "
            f"got {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise InvalidInputError(
            f"the {which} price must be zero or more US dollars per million tokens, "
            f"got {value!r}")
    return number


def _clean(model: str, api_base: str | None, input_price: object = None,
           output_price: object = None) -> ModelPreset:
    model = model.strip()
    if not model:
        raise InvalidInputError("a model needs a name, e.g. openai/gpt-4.1-mini")
    if any(c.isspace() for c in model):
        raise InvalidInputError(f"model names have no spaces: {model!r}")
    limits.check([("the model name", model, limits.MODEL_MAX),
                  ("the api_base", api_base, limits.MODEL_MAX)])
    base = (api_base or "").strip().rstrip("/") or None
    if base is not None:
        parsed = urlparse(base)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidInputError(
                f"api_base must be an http(s) URL such as http://127.0.0.1:8000/v1, got {base!r}"
            )
        if parsed.username or parsed.password or has_url_credentials(base):
            raise InvalidInputError("api_base must not contain a user name, password or key "
                                    "(such as ?api-key=...); put the key in "
                                    "RUBRIC_WORKBENCH_API_KEY or the provider's own variable")
    prices = (_price(input_price, "input"), _price(output_price, "output"))
    if (prices[0] is None) != (prices[1] is None):
        raise InvalidInputError("give both prices (input and output tokens, USD per million; "
                                "0 for a free local model) or neither")
    return ModelPreset(model=model, api_base=base, input_price=prices[0],
                       output_price=prices[1])


def _what_to_do(path: Path, exc: OSError, access: str) -> str:
    """What is wrong with the list's file or its folder, and what to do, in words."""
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):  # a file where a folder should be
        return (f"{path.parent} (or a folder above it) is a file, not a folder; move that "
                f"file away, or set {DATA_DIR_VARIABLE} to a folder")
    if exc.errno == errno.EISDIR:
        return f"{path} is a folder, not a file; move that folder away"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (f"permission denied; make {path} and its folder (the data directory) "
                f"{access} by the user running the app")
    if exc.errno == errno.ENOSPC:
        return "the disk is full; free some space and try again"
    return f"{exc.strerror or exc}; check {path} and its folder (the data directory)"


def _read(path: Path) -> list[ModelPreset]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InvalidInputError(
            f"the model list at {path} cannot be read: {_what_to_do(path, exc, 'readable')}"
        ) from None
    except ValueError as exc:
        raise InvalidInputError(
            f"the model list at {path} cannot be read (it is not valid JSON: {exc}); fix or "
            "delete the file"
        ) from None
    items = data.get("presets", []) if isinstance(data, dict) else []
    presets: list[ModelPreset] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("model"), str):
            try:
                preset = _clean(item["model"], item.get("api_base"),
                                item.get("input_price"), item.get("output_price"))
            except InvalidInputError:
                continue  # a hand-edited bad entry is left out rather than breaking the app
            if all(p.key != preset.key for p in presets):
                presets.append(preset)
    return presets


def _write(path: Path, presets: list[ModelPreset]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"presets": [_entry(p) for p in presets]}
    # Write then rename, so a crash never leaves half a file behind.
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".presets-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=2)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _entry(preset: ModelPreset) -> dict[str, object]:
    entry: dict[str, object] = {"model": preset.model, "api_base": preset.api_base}
    if preset.price is not None:
        entry["input_price"], entry["output_price"] = preset.price
    return entry


def list_model_presets() -> tuple[ModelPreset, ...]:
    """The saved presets, in the order they were added."""
    return tuple(_read(presets_path()))


def _write_logged(sessions: SessionFactory, path: Path, presets: list[ModelPreset],
                  actor: Actor, action: str, preset: ModelPreset, detail: str = "") -> None:
    """Write the list and record the change in the Activity log, both or neither: the event
    is flushed first (the database refuses before the file changes) and committed once the
    file is written (a failed write rolls the event back). Either failing is said in words."""
    try:
        with sessions.begin() as session:
            people.record(session, actor, action, "model", None, preset.label, detail)
            session.flush()
            _write(path, presets)
    except SQLAlchemyError as exc:
        raise InvalidStateError(
            f"the model list was not changed: its Activity log cannot be written "
            f"({describe_db_error(exc)}); try again once the database is writable") from None
    except OSError as exc:
        raise InvalidStateError(
            f"the model list at {path} cannot be written: "
            f"{_what_to_do(path, exc, 'writable')}") from None


def price_text(preset: ModelPreset) -> str:
    """The preset's price as the Settings page and the Activity log say it."""
    if preset.price is None:
        return "litellm's (if it has one)"
    return f"${preset.price[0]:g} in / ${preset.price[1]:g} out per 1M tokens"


def add_model_preset(model: str, api_base: str | None = None, *, actor: Actor,
                     sessions: SessionFactory, input_price: object = None,
                     output_price: object = None) -> ModelPreset:
    """Add a preset (raises InvalidInputError if it is malformed or already listed); the
    change is recorded in the Activity log of ``sessions``' database."""
    require(actor, Role.ADMIN, "change the model list")
    preset = _clean(model, api_base, input_price, output_price)
    with _lock:
        path = presets_path()
        presets = _read(path)
        if any(p.key == preset.key for p in presets):
            raise InvalidInputError(f"{preset.label} is already in the list")
        _write_logged(sessions, path, [*presets, preset], actor, "add to the model list",
                      preset, price_text(preset))
    return preset


def set_model_price(model: str, api_base: str | None, *, input_price: object,
                    output_price: object, actor: Actor,
                    sessions: SessionFactory) -> ModelPreset:
    """Set (or, with both None, clear) a listed preset's price per million tokens."""
    require(actor, Role.ADMIN, "change the model list")
    wanted = _clean(model, api_base, input_price, output_price)
    with _lock:
        path = presets_path()
        presets = _read(path)
        old = next((p for p in presets if p.key == wanted.key), None)
        if old is None:
            raise InvalidInputError(f"{wanted.label} is not in the list; add it first")
        if old.price != wanted.price:  # unchanged: nothing to write or to log
            _write_logged(sessions, path,
                          [wanted if p.key == wanted.key else p for p in presets],
                          actor, "set price", wanted,
                          f"{price_text(old)} → {price_text(wanted)}")
    return wanted


def remove_model_preset(model: str, api_base: str | None = None, *, actor: Actor,
                        sessions: SessionFactory) -> bool:
    """Remove a preset; False if it was not there."""
    require(actor, Role.ADMIN, "change the model list")
    preset = _clean(model, api_base)
    with _lock:
        path = presets_path()
        presets = _read(path)
        if all(p.key != preset.key for p in presets):
            return False
        _write_logged(sessions, path, [p for p in presets if p.key != preset.key], actor,
                      "remove from the model list", preset)
    return True
