"""How a judge call asks for JSON, and what to fall back to when a server refuses the option.

Hosted providers, vLLM, Ollama and llama.cpp's own ``llama-server`` accept OpenAI's
``{"type": "json_schema", ...}``; llama-cpp-python's server answers HTTP 500 to it but accepts
``{"type": "json_object", "schema": ...}`` (grammar-enforced); some servers accept neither.
``auto`` starts with the schema and steps down once per refusal that names the option; what an
endpoint accepted is remembered for the process, so later calls go straight to it. Every prompt
already spells out the JSON it wants and the parser is tolerant, so ``off`` still grades.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal, get_args

StructuredOutput = Literal["auto", "json_schema", "json_object", "off"]
MODES: tuple[str, ...] = get_args(StructuredOutput)
# What ``auto`` tries next when a server refuses the current way of asking.
_NEXT: dict[str, str] = {"json_schema": "json_object", "json_object": "off"}
# Words a refusal of the option itself uses (llama-cpp-python: "Input should be 'text' or
# 'json_object'"; others: "response_format is not supported", "Unknown parameter: 'schema'").
_REFUSAL_HINTS = ("response_format", "response format", "json_schema", "json_object",
                  "structured output", "guided_json", "'schema'", "schema is not")

DESCRIPTIONS: dict[str, str] = {
    "auto": "JSON schema when the server accepts it, else JSON mode, else plain text",
    "json_schema": "always send the JSON schema (fails on servers that refuse it)",
    "json_object": "JSON mode with the schema as a hint (llama-cpp-python's server)",
    "off": "no response_format: the answer is parsed from the text",
}


def output_mode(value: bool | str | None) -> str:
    """The mode for a setting: ``True``/``None`` is ``auto`` (the old default), ``False`` off."""
    if value is None or value is True:
        return "auto"
    if value is False:
        return "off"
    mode = str(value).strip().lower().replace("-", "_")
    if mode not in MODES:
        raise ValueError(f"structured output must be one of {', '.join(MODES)}, not {value!r}")
    return mode


def request_format(mode: str, response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``response_format`` to send for ``mode`` (``auto`` must be resolved first)."""
    if response_format is None or mode == "off":
        return None
    if mode == "json_object":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return {"type": "json_object", **({"schema": schema} if schema else {})}
    return response_format


def refuses_option(message: str) -> bool:
    """Whether a provider's error answer is about the structured-output option itself."""
    lowered = message.lower()
    return any(hint in lowered for hint in _REFUSAL_HINTS)


# Schema keywords that only tighten an answer (a complete one-shot list, a reason that cannot
# be a placeholder). OpenAI's strict mode takes them; a provider that refuses one by name gets
# the same schema without them (the parser still checks what they would have enforced).
TIGHTENING_KEYWORDS = ("minItems", "maxItems", "pattern")


def refuses_tightening(message: str) -> bool:
    """Whether a provider's error answer names one of the tightening keywords."""
    lowered = message.lower()
    return any(keyword.lower() in lowered for keyword in TIGHTENING_KEYWORDS)


def loosened(value: Any) -> Any:
    """A copy of a ``response_format`` (or schema) without the tightening keywords."""
    if isinstance(value, dict):
        return {key: loosened(item) for key, item in value.items()
                if not (key in TIGHTENING_KEYWORDS and not isinstance(item, dict))}
    if isinstance(value, list):
        return [loosened(item) for item in value]
    return value


def next_mode(mode: str) -> str | None:
    return _NEXT.get(mode)


class EndpointFormats:
    """What each (model, api_base) accepted, learned by ``auto`` calls in this process.

    Until an endpoint has answered once, its ``auto`` calls go one at a time (``probing``):
    a judge that sends eight criteria at once to a server refusing the schema pays one refused
    probe, not eight.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._learned: dict[tuple[str, str | None], str] = {}
        self._loose: set[tuple[str, str | None]] = set()
        self._probes: dict[tuple[int, str, str | None], asyncio.Lock] = {}

    def known(self, model: str, api_base: str | None) -> str | None:
        with self._lock:
            return self._learned.get((model, api_base))

    def learn(self, model: str, api_base: str | None, mode: str) -> None:
        with self._lock:
            self._learned[(model, api_base)] = mode

    def loose(self, model: str, api_base: str | None) -> bool:
        """Whether the endpoint refused the tightening keywords (``loosened`` schemas)."""
        with self._lock:
            return (model, api_base) in self._loose

    def learn_loose(self, model: str, api_base: str | None) -> None:
        with self._lock:
            self._loose.add((model, api_base))

    def forget(self, model: str, api_base: str | None) -> None:
        with self._lock:
            self._learned.pop((model, api_base), None)

    def probing(self, model: str, api_base: str | None) -> asyncio.Lock:
        """The lock the running loop's first calls to an unknown endpoint take turns on."""
        key = (id(asyncio.get_running_loop()), model, api_base)
        with self._lock:
            return self._probes.setdefault(key, asyncio.Lock())

    def clear(self) -> None:
        with self._lock:
            self._learned.clear()
            self._loose.clear()
            self._probes.clear()


endpoint_formats = EndpointFormats()
