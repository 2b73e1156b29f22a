"""Models (and optional ``api_base``s) the user can pick from, kept in a small JSON file.

The file lives in ``storage.config.data_dir()`` rather than the database so that presets need
no migration. API keys are never stored here: they come from the environment at call time.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from storage import limits
from storage.config import data_dir
from storage.errors import InvalidInputError
from storage.services.reviewers import Actor, Role, require

PRESETS_FILENAME = "model_presets.json"
_lock = threading.Lock()


@dataclass(frozen=True)
class ModelPreset:
    """A model name as litellm spells it (``openai/gpt-4.1-mini``) and where to reach it."""

    model: str
    api_base: str | None = None

    @property
    def label(self) -> str:
        return f"{self.model} @ {self.api_base}" if self.api_base else self.model


def presets_path() -> Path:
    return data_dir() / PRESETS_FILENAME


def _clean(model: str, api_base: str | None) -> ModelPreset:
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
        if parsed.username or parsed.password:
            raise InvalidInputError("api_base must not contain a user name or password; "
                                    "put the key in an environment variable instead")
    return ModelPreset(model=model, api_base=base)


def _read(path: Path) -> list[ModelPreset]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"the model list at {path} cannot be read ({exc}); fix or delete the file"
        ) from None
    items = data.get("presets", []) if isinstance(data, dict) else []
    presets: list[ModelPreset] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("model"), str):
            try:
                preset = _clean(item["model"], item.get("api_base"))
            except InvalidInputError:
                continue  # a hand-edited bad entry is left out rather than breaking the app
            if preset not in presets:
                presets.append(preset)
    return presets


def _write(path: Path, presets: list[ModelPreset]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"presets": [{"model": p.model, "api_base": p.api_base} for p in presets]}
    # Write then rename, so a crash never leaves half a file behind.
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".presets-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=2)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def list_model_presets() -> tuple[ModelPreset, ...]:
    """The saved presets, in the order they were added."""
    return tuple(_read(presets_path()))


def add_model_preset(model: str, api_base: str | None = None, *, actor: Actor) -> ModelPreset:
    """Add a preset (raises InvalidInputError if it is malformed or already listed)."""
    require(actor, Role.ADMIN, "change the model list")
    preset = _clean(model, api_base)
    with _lock:
        path = presets_path()
        presets = _read(path)
        if preset in presets:
            raise InvalidInputError(f"{preset.label} is already in the list")
        _write(path, [*presets, preset])
    return preset


def remove_model_preset(model: str, api_base: str | None = None, *, actor: Actor) -> bool:
    """Remove a preset; False if it was not there."""
    require(actor, Role.ADMIN, "change the model list")
    preset = _clean(model, api_base)
    with _lock:
        path = presets_path()
        presets = _read(path)
        if preset not in presets:
            return False
        _write(path, [p for p in presets if p != preset])
    return True
