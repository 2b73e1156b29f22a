"""The default ``generate_fn``: one chat completion through litellm.

litellm is imported on the first call, never at ``import grading`` (it costs seconds and,
unless told otherwise, fetches a price map from the internet). Provider failures are turned
into ``TransientProviderError`` (worth retrying) or ``ProviderError`` (tell the user).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
import sys
import time
from typing import Any, Literal

from grading.answer_budget import REASONING_TOKENS, answer_tokens
from grading.busy_server import busy_servers
from grading.errors import FatalProviderError, ProviderError, TransientProviderError
from grading.http_limits import MAX_RESPONSE_BYTES, capped_openai_client, is_too_large
from grading.redact import MASK, call_secrets, redact, strip_url_credentials
from grading.retry import retry_after_from_headers
from grading.structured_output import (
    endpoint_formats,
    loosened,
    next_mode,
    output_mode,
    refuses_option,
    refuses_tightening,
    request_format,
)
from grading.types import GenerateResult, TokenUsage

DEFAULT_MODEL = "openai/gpt-4.1-mini"
MODEL_ENV = "RUBRIC_WORKBENCH_MODEL"
API_BASE_ENV = "RUBRIC_WORKBENCH_API_BASE"
API_KEY_ENV = "RUBRIC_WORKBENCH_API_KEY"

# Where litellm looks for each provider's key; anything else is "<PROVIDER>_API_KEY".
_KEY_ENV_BY_PROVIDER = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "azure": "AZURE_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
}
_MISSING_KEY_HINTS = ("missing credentials", "api_key client option must be set")
_UNKNOWN_PROVIDER_HINTS = ("llm provider not provided", "provider not provided")
# Sent to a server at an api_base when no key is configured: litellm's OpenAI client refuses
# to call without one, and servers that need no key ignore it.
PLACEHOLDER_KEY = "no-key-required"
# The cap of a call that is not one of the graders' (their answers have caps of their own,
# ``grading.answer_budget``); it keeps a runaway model from costing more.
DEFAULT_MAX_TOKENS = 4096
# Providers served through the OpenAI SDK, where the answer's size can be capped while reading.
_OPENAI_SDK_PROVIDERS = frozenset({"openai", "custom_openai"})
_known_providers: dict[str, str | None] = {}
# What a probe that got no answer says (``storage.jobs.calls.outage_reason`` reads it).
BUSY_WORDS = "still busy with"


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


def _load_litellm() -> Any:
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


class LiteLLMGenerate:
    """``async (system_prompt, user_prompt, *, response_format=None) -> GenerateResult``.

    Unset model/api_base/api_key are read from the environment at each call, so a long-lived
    instance follows configuration changes.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        structured_output: bool | str = "auto",
        max_tokens: int | Literal["auto"] | None = "auto",
        reasoning_tokens: int = REASONING_TOKENS,
        max_response_bytes: int | None = MAX_RESPONSE_BYTES,
        **extra: Any,
    ):
        self._model = model
        self._api_base = api_base
        self._api_key = api_key
        if max_tokens != "auto" and max_tokens is not None and (
                isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                or max_tokens < 1):
            raise ValueError(f"max_tokens must be 'auto', a whole number >= 1 or None, not "
                             f"{max_tokens!r}")
        # "auto": what the grader's answer needs (``grading.answer_budget``), plus
        # ``reasoning_tokens`` for a reasoning model; a number: that cap on every call;
        # None: no cap sent.
        self.max_tokens = max_tokens
        self.reasoning_tokens = reasoning_tokens
        self.max_response_bytes = max_response_bytes
        self.timeout = timeout
        self.temperature = temperature
        self.output_mode = output_mode(structured_output)
        self.extra = extra

    @property
    def model(self) -> str:
        return self._model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL

    @property
    def api_base(self) -> str | None:
        return self._api_base or os.environ.get(API_BASE_ENV) or None

    @property
    def structured_output(self) -> bool:
        """Whether calls ask for JSON at all (part of cache keys: kept a bool so the keys of
        runs made before the modes existed stay valid)."""
        return self.output_mode != "off"

    def __repr__(self) -> str:  # never show the key
        return (f"LiteLLMGenerate(model={self.model!r}, "
                f"api_base={strip_url_credentials(self.api_base)!r})")

    async def __call__(
        self,
        system_prompt: str,
        user_prompt: str,
        *,
        response_format: dict[str, Any] | None = None,
    ) -> GenerateResult:
        litellm = _load_litellm()
        model, api_base = self.model, resolve_api_base(self.api_base)
        api_key = self._api_key or os.environ.get(API_KEY_ENV) or None
        problem = credential_problem(model, api_base, api_key)
        if problem is not None:
            raise FatalProviderError(problem)
        if api_base and not api_key and not os.environ.get(key_env_var(model)):
            api_key = PLACEHOLDER_KEY
        kwargs: dict[str, Any] = {
            **self.extra,
            "model": model,
            "messages": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": user_prompt},
            ],
            "timeout": self.timeout,
            "num_retries": 0,  # the grader's retry loop owns retries
        }
        if self.temperature is not None:  # None: for models that reject a temperature
            kwargs["temperature"] = self.temperature
        cap = self.token_cap(model, response_format)
        if cap is not None and not ({"max_tokens", "max_completion_tokens"} & set(self.extra)):
            kwargs["max_tokens"] = cap
        if api_base:
            kwargs["api_base"] = api_base
        if api_key:
            kwargs["api_key"] = api_key
        # A call we gave up on may still be running at a server that cannot cancel it: the
        # next one waits until the server is free (``grading.busy_server``).
        await busy_servers.wait_free(model, api_base, lambda: self._probe(
            litellm, kwargs, model=model, api_base=api_base, api_key=api_key))
        response = await self._complete(litellm, kwargs, response_format,
                                         model=model, api_base=api_base, api_key=api_key)
        choices = getattr(response, "choices", None) or []
        if not choices:  # a provider hiccup (seen under load), not an answer: ask again
            raise TransientProviderError(
                f"model '{model}' answered without any choice (an empty reply)")
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None) or ""
        return GenerateResult(
            text=text, usage=_usage(response), cost=_cost(litellm, response), raw=response
        )

    def token_cap(self, model: str, response_format: dict[str, Any] | None) -> int | None:
        """The max_tokens a call sends (see ``max_tokens``)."""
        if self.max_tokens != "auto":
            return self.max_tokens
        answer = answer_tokens(response_format)
        if answer is None:
            return DEFAULT_MAX_TOKENS
        return answer + (self.reasoning_tokens if self._reasons(model) else 0)

    def _reasons(self, model: str) -> bool:
        """Whether the model thinks before answering (litellm's model map says so, or the
        call asks it to)."""
        if {"reasoning_effort", "thinking"} & set(self.extra):
            return True
        try:
            return bool(_load_litellm().supports_reasoning(model=model))
        except Exception:  # a model litellm does not know: no thinking budget
            return False

    async def _complete(self, litellm: Any, kwargs: dict[str, Any],
                        response_format: dict[str, Any] | None, *, model: str,
                        api_base: str | None, api_key: str | None) -> Any:
        """One completion; in ``auto`` a refusal of the JSON option is asked again, once per
        step down (schema, JSON mode, plain text), and what got an answer is remembered."""
        if response_format is not None and endpoint_formats.loose(model, api_base):
            response_format = loosened(response_format)
        if self.output_mode != "auto" or response_format is None:
            return await self._stepping(litellm, kwargs, response_format, self.output_mode,
                                        model=model, api_base=api_base, api_key=api_key)
        mode = endpoint_formats.known(model, api_base)
        if mode is None:
            async with endpoint_formats.probing(model, api_base):
                mode = endpoint_formats.known(model, api_base)
                if mode is None:
                    return await self._stepping(litellm, kwargs, response_format,
                                                "json_schema", model=model,
                                                api_base=api_base, api_key=api_key)
        return await self._stepping(litellm, kwargs, response_format, mode, model=model,
                                    api_base=api_base, api_key=api_key)

    async def _stepping(self, litellm: Any, kwargs: dict[str, Any],
                        response_format: dict[str, Any] | None, mode: str, *, model: str,
                        api_base: str | None, api_key: str | None) -> Any:
        while True:
            sent = request_format(mode, response_format)
            call = {**kwargs, **({"response_format": sent} if sent is not None else {})}
            try:
                response = await self._send(litellm, call, model=model, api_base=api_base,
                                            api_key=api_key)
            except (ProviderError, TransientProviderError) as error:
                message = str(error.__cause__ or error)
                if (sent is not None and response_format is not None
                        and loosened(response_format) != response_format
                        and refuses_tightening(message)):
                    # the schema's minItems/maxItems/pattern, not JSON output, were refused
                    response_format = loosened(response_format)
                    endpoint_formats.learn_loose(model, api_base)
                    continue
                fallback = next_mode(mode) if self.output_mode == "auto" else None
                if sent is None or fallback is None or not refuses_option(message):
                    raise
                mode = fallback
                continue
            if self.output_mode == "auto":  # learned from an answer, never from a refusal
                endpoint_formats.learn(model, api_base, mode)
            return response

    async def _probe(self, litellm: Any, kwargs: dict[str, Any], *, model: str,
                     api_base: str | None, api_key: str | None) -> None:
        """One token, no schema, queued behind what the server still runs for us: its
        answer (any answer: a refusal comes from a server that is free to refuse) says the
        server is free."""
        waiting = busy_servers.busy(model, api_base)
        limit = busy_servers.probe_timeout(model, api_base, self.timeout)
        call = {**{k: v for k, v in kwargs.items()
                   if k not in ("response_format", "max_completion_tokens")},
                "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1,
                "timeout": limit}
        try:
            await self._send(litellm, call, model=model, api_base=api_base, api_key=api_key,
                             timeout=limit, probe=True)
        except ProviderError:
            return
        except TransientProviderError as error:
            if error.status_code != 408:
                raise
            calls = f"{waiting} call{'s' if waiting != 1 else ''}"
            raise TransientProviderError(
                f"the server for model '{model}' is {BUSY_WORDS} {calls} we stopped "
                f"waiting for (a local server cannot cancel them); a one-token request got "
                f"no answer within {limit:.0f} s", status_code=408) from error

    async def _send(self, litellm: Any, kwargs: dict[str, Any], *, model: str,
                    api_base: str | None, api_key: str | None,
                    timeout: float | None = None, probe: bool = False) -> Any:
        timeout = self.timeout if timeout is None else timeout
        started = time.monotonic()
        try:
            if self.max_response_bytes and _provider(model) in _OPENAI_SDK_PROVIDERS:
                kwargs["client"] = capped_openai_client(
                    asyncio.get_running_loop(), api_base=api_base,
                    api_key=api_key or os.environ.get(key_env_var(model)),
                    limit=self.max_response_bytes)
            # litellm's timeout is per read: a server trickling a byte a second never trips
            # it. This one bounds the whole attempt.
            async with asyncio.timeout(timeout):
                response = await litellm.acompletion(**kwargs)
        except asyncio.CancelledError:  # the call deadline, or a run stopping
            if not probe:
                busy_servers.gave_up(model, api_base, cap_tokens=kwargs.get("max_tokens"),
                                     waited=time.monotonic() - started)
            raise
        except Exception as exc:
            error = translate_error(exc, model=model, api_base=api_base, api_key=api_key,
                                    timeout=timeout)
            if error is None:
                raise
            if (not probe and isinstance(error, TransientProviderError)
                    and error.status_code == 408):
                busy_servers.gave_up(model, api_base, cap_tokens=kwargs.get("max_tokens"),
                                     waited=time.monotonic() - started)
            raise error from (None if isinstance(error, FatalProviderError) else exc)
        if not probe:
            usage = getattr(response, "usage", None)
            busy_servers.answered(model, api_base,
                                  getattr(usage, "completion_tokens", None) or 0,
                                  time.monotonic() - started)
        return response


class _AuthError(FatalProviderError):
    """Credentials were rejected or missing; raised without the original (it may echo the key)."""


def _usage(response: Any) -> TokenUsage | None:
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return TokenUsage(
        prompt_tokens=getattr(usage, "prompt_tokens", None) or 0,
        completion_tokens=getattr(usage, "completion_tokens", None) or 0,
        total_tokens=getattr(usage, "total_tokens", None) or 0,
        cache_creation_input_tokens=getattr(usage, "cache_creation_input_tokens", None) or 0,
        cache_read_input_tokens=cached or getattr(usage, "cache_read_input_tokens", None) or 0,
    )


def _cost(litellm: Any, response: Any) -> float | None:
    """The call's cost in USD, or None when the model has no known price (never 0 for that)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden and hidden["response_cost"] is None:
        # litellm already tried its price map and found no price: asking again costs
        # ~1.5 ms of CPU per call (a fifth of the whole call) for the same answer.
        return None
    cost = hidden.get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown model or missing price data: the cost is unknown
            return None
    try:
        return float(cost)
    except (TypeError, ValueError):
        return None


def key_env_var(model: str) -> str:
    """The environment variable litellm reads the key for ``model`` from."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return _KEY_ENV_BY_PROVIDER.get(provider, f"{provider.upper()}_API_KEY")


def _provider(model: str) -> str | None:
    """The litellm provider of ``model``; None when litellm does not know it."""
    if model not in _known_providers:
        litellm = _load_litellm()
        try:
            _known_providers[model] = litellm.get_llm_provider(model)[1]
        except Exception:
            _known_providers[model] = None
    return _known_providers[model]


def _key_like(name: str) -> bool:
    return any(word in name for word in ("KEY", "TOKEN", "SECRET"))


def credential_problem(model: str, api_base: str | None = None,
                       api_key: str | None = None) -> str | None:
    """Why no call to ``model`` can work, decided before calling; None when it may work.

    The one place that decides: the library, the job runner, the CLI, the Grade page's
    pre-check and Settings' connection test all ask here. A server at an ``api_base`` needs
    no key (a placeholder is sent when the client library insists on one).
    """
    if _provider(model) is None:
        return (f"litellm does not know which provider serves model '{model}': write it as "
                "provider/model, e.g. openai/gpt-4.1-mini (or openai/<name> for a local "
                "OpenAI-compatible server at an api_base).")
    keys = missing_key_variables(model, api_base, api_key)
    if not keys:
        return None
    wanted = " or ".join(keys)
    return (f"No API key was found for model '{model}': set {wanted} in the environment "
            f"(or {API_KEY_ENV}).")


def missing_key_variables(model: str, api_base: str | None = None,
                          api_key: str | None = None) -> list[str]:
    """The key variables litellm wants for ``model`` and finds unset (empty when a key or
    an ``api_base`` makes them unnecessary, or litellm cannot tell)."""
    if api_key or os.environ.get(API_KEY_ENV, "").strip() or api_base:
        return []
    try:
        missing = _load_litellm().validate_environment(model).get("missing_keys") or []
    except Exception:
        return []
    return [name for name in missing if _key_like(name)]


def resolve_api_base(api_base: str | None) -> str | None:
    """An api_base whose credentials were masked for storage gets them back from
    ``RUBRIC_WORKBENCH_API_BASE`` (the only place they live)."""
    if not api_base or MASK not in api_base:
        return api_base
    full = os.environ.get(API_BASE_ENV, "")
    if full and strip_url_credentials(full) == api_base:
        return full
    raise FatalProviderError(
        f"The api_base {api_base} needs credentials that are never stored: set {API_BASE_ENV} "
        "to the full address, credentials included, in the environment of the process that "
        "grades.")


def _short(exc: BaseException, secrets: set[str], limit: int = 300) -> str:
    text = " ".join(str(getattr(exc, "message", None) or exc).split())
    text = redact(text, secrets)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _auth_message(model: str, api_base: str | None, what: str) -> str:
    env = key_env_var(model)
    where = (
        f"set {API_KEY_ENV} (or pass api_key=...) for the server at "
        f"{strip_url_credentials(api_base)}"
        if api_base
        else f"set {env} in the environment (or {API_KEY_ENV}, or pass api_key=...)"
    )
    return f"{what} for model '{model}': {where}."


def translate_error(
    exc: BaseException,
    *,
    model: str,
    api_base: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> ProviderError | TransientProviderError | None:
    """Map a litellm exception to our errors; None for exceptions that are not provider errors.

    Every message is redacted of every secret the call could have used.
    """
    secrets = call_secrets(api_key=api_key, api_base=api_base)
    shown_base = strip_url_credentials(api_base)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc).lower()
    if any(hint in text for hint in _UNKNOWN_PROVIDER_HINTS):
        return FatalProviderError(credential_problem(model) or (
            f"litellm does not know which provider serves model '{model}'"))
    if is_too_large(exc):
        return ProviderError(
            f"model '{model}' sent an answer larger than "
            f"{MAX_RESPONSE_BYTES // (1024 * 1024)} MB; it was not read to the end (a judge's "
            "answer is a few kilobytes: check the server)")
    if status == 401 or "AuthenticationError" in names or any(
        hint in text for hint in _MISSING_KEY_HINTS
    ):
        what = (
            "No API key was found"
            if any(hint in text for hint in _MISSING_KEY_HINTS)
            else "The provider rejected the API key (HTTP 401)"
        )
        return _AuthError(_auth_message(model, api_base, what))
    if status == 403 or "PermissionDeniedError" in names:
        return ProviderError(
            f"The provider denied access to model '{model}' (HTTP 403): {_short(exc, secrets)}"
        )
    if isinstance(exc, TimeoutError) or "Timeout" in names or "APITimeoutError" in names:
        limit = f" after {timeout:g} s" if timeout is not None else ""
        return TransientProviderError(
            f"model '{model}' did not answer{limit}", status_code=status or 408
        )
    if "APIConnectionError" in names or (status is not None and (status >= 500 or status in (
        408, 409, 425, 429
    ))):
        headers = getattr(exc, "litellm_response_headers", None)
        if headers is None:
            headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(
                exc, "headers", None
            )
        return TransientProviderError(
            f"model '{model}' failed (HTTP {status}): {_short(exc, secrets)}",
            retry_after=retry_after_from_headers(headers),
            status_code=status,
        )
    if status == 404 or "NotFoundError" in names:
        return ProviderError(
            f"Model '{model}' was not found (HTTP 404); check the model name"
            + (f" and the api_base {shown_base}" if api_base else "")
            + f": {_short(exc, secrets)}"
        )
    if status is not None or "BadRequestError" in names or "APIError" in names:
        return ProviderError(
            f"The provider rejected the request for model '{model}'"
            + (f" (HTTP {status})" if status else "")
            + f": {_short(exc, secrets)}"
        )
    return None


default_generate_fn = LiteLLMGenerate()
