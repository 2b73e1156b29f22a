"""Which provider keys are present (names only) and a one-call "test connection"."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from grading.errors import ProviderError, TransientProviderError
from grading.llm import (
    API_BASE_ENV,
    API_KEY_ENV,
    LiteLLMGenerate,
    _load_litellm,
    credential_problem,
    key_env_var,
    missing_key_variables,
    resolve_api_base,
)
from grading.prompts import per_criterion_response_format
from grading.structured_output import endpoint_formats
from storage.model_presets import ModelPreset

# The variables litellm reads for the common providers, plus the workbench's own.
KNOWN_KEY_VARIABLES: tuple[str, ...] = (
    API_KEY_ENV, "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "AZURE_API_KEY", "OPENROUTER_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY",
    "TOGETHERAI_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "COHERE_API_KEY",
)
_KEY_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")


@dataclass(frozen=True)
class KeyVariable:
    name: str
    present: bool


@dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    message: str
    latency_s: float | None = None
    # How calls ask this endpoint for JSON ("json_schema", "json_object", "off"), when it answered
    structured_output: str | None = None


def key_variables() -> tuple[KeyVariable, ...]:
    """Known key variables and any other ``*_API_KEY`` set; names and presence, never values."""
    present = {name for name, value in os.environ.items()
               if _KEY_NAME.match(name) and value.strip()}
    names = list(KNOWN_KEY_VARIABLES) + sorted(present - set(KNOWN_KEY_VARIABLES))
    return tuple(KeyVariable(name, name in present) for name in names)


def needed_key_variable(preset: ModelPreset) -> str:
    """The variable a preset's key is read from (a local api_base uses the workbench's own)."""
    return API_KEY_ENV if preset.api_base else key_env_var(preset.model)


def default_api_base() -> str | None:
    return os.environ.get(API_BASE_ENV) or None


# One long-lived loop for the checks: litellm keeps async clients bound to the loop that
# made them, so a fresh asyncio.run() per click would leave dead clients behind.
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _run(coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="connection-check",
                             daemon=True).start()
    return asyncio.run_coroutine_threadsafe(coro, _loop).result(timeout)


def check_connection(preset: ModelPreset, *, timeout: float = 20.0) -> ConnectionResult:
    """Make one tiny call to the preset's model; say in plain words what went wrong if it fails."""
    missing = _missing_key(preset)
    if missing:
        return ConnectionResult(False, missing)
    _load_litellm()  # seconds on the first check: not part of the model's answer time
    started = time.monotonic()
    # The check asks what a run asks (the same JSON option, stepping down the same way), so it
    # never passes where grading would fail; what the endpoint takes is found afresh.
    endpoint_formats.forget(preset.model, resolve_api_base(preset.api_base))
    try:
        try:
            _call(preset, timeout, max_tokens=CHECK_MAX_TOKENS)
        except ProviderError as exc:
            # Some models refuse a token limit by that name; the key and address are fine,
            # so ask once more without it rather than report a false failure.
            if "max_tokens" not in str(exc) and "max_completion_tokens" not in str(exc):
                raise
            _call(preset, timeout, max_tokens=None)
    except (ProviderError, TransientProviderError) as exc:
        return ConnectionResult(False, _plain(str(exc), preset))
    except TimeoutError:
        return ConnectionResult(False, f"{preset.label} did not answer within {timeout:g} s. "
                                       "Check that the server is running and reachable.")
    except Exception as exc:  # a diagnostic: report anything, never a traceback
        return ConnectionResult(
            False, f"The call to {preset.label} failed ({type(exc).__name__}). "
                   "Check the model name (litellm spells it provider/model) and the api_base."
        )
    latency = time.monotonic() - started
    mode = endpoint_formats.known(preset.model, resolve_api_base(preset.api_base))
    return ConnectionResult(True, f"{preset.label} answered in {latency:.1f} s. "
                                  f"{_SUPPORT.get(mode or '', '')}".strip(), latency, mode)


# What the check found the endpoint takes, in the words the Settings page shows.
_SUPPORT = {
    "json_schema": "It accepts a JSON schema: answers are constrained to the verdict format.",
    "json_object": "No JSON schema: it refuses OpenAI's json_schema option but takes JSON mode "
                   "(runs use that by themselves).",
    "off": "No JSON schema and no JSON mode: answers will be parsed from text (runs do that by "
           "themselves; small models then fail to answer in the format more often).",
}
CHECK_MAX_TOKENS = 40  # room for a short JSON verdict; the answer itself is not read


def _call(preset: ModelPreset, timeout: float, *, max_tokens: int | None) -> None:
    generate = LiteLLMGenerate(preset.model, api_base=preset.api_base, timeout=timeout,
                               structured_output="auto", max_tokens=max_tokens)
    _run(generate("You are a connection check. Answer in JSON.",
                  'Reply with {"verdict": "MET", "reason": "ok"}.',
                  response_format=per_criterion_response_format()), timeout + 5)


def _missing_key(preset: ModelPreset) -> str | None:
    """What no call can work without, decided where the run and the Grade page decide it."""
    problem = credential_problem(preset.model, preset.api_base)
    keys = missing_key_variables(preset.model, preset.api_base) if problem else []
    if not keys:
        return problem
    return (f"No API key was found for {preset.label}. Set {' or '.join(keys)} (or "
            f"{API_KEY_ENV}) in the environment of the process that runs the app, then "
            "restart the app.")


def _plain(message: str, preset: ModelPreset) -> str:
    """The provider error with a next step for the failures people hit most."""
    text = message.replace(", or pass api_key=...", "").replace(" (or pass api_key=...)", "")
    text = text.rstrip(".") + "."
    lowered = text.lower()
    if "provider not provided" in lowered:
        return (f"litellm does not know which provider serves {preset.model!r}: write the "
                "model as provider/model, e.g. openai/gpt-4.1-mini, or openai/<name> for a "
                "local OpenAI-compatible server.")
    if any(hint in lowered for hint in ("connection error", "cannot connect", "connect call",
                                        "name or service")):
        where = preset.api_base or "the provider"
        return (f"Could not reach {where}. Check that the server is running, that the "
                "address is right and that this machine can reach it.")
    return text
