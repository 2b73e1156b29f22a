"""The default ``generate_fn``: one chat completion through litellm.

litellm is imported on the first call, never at ``import grading`` (it costs seconds and,
unless told otherwise, fetches a price map from the internet). Provider failures are turned
into ``TransientProviderError`` (worth retrying) or ``ProviderError`` (tell the user).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from grading.answer_budget import REASONING_TOKENS, answer_tokens
from grading.busy_server import busy_servers
from grading.credentials import (  # noqa: F401 - the names callers import from here
    API_BASE_ENV,
    API_KEY_ENV,
    _provider,
    credential_problem,
    key_env_var,
    missing_key_variables,
    resolve_api_base,
)
from grading.errors import FatalProviderError, ProviderError, TransientProviderError
from grading.http_limits import MAX_RESPONSE_BYTES, capped_openai_client
from grading.litellm_loader import load_litellm as _load_litellm
from grading.provider_errors import translate_error
from grading.redact import strip_url_credentials
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

# Sent to a server at an api_base when no key is configured: litellm's OpenAI client refuses
# to call without one, and servers that need no key ignore it.
PLACEHOLDER_KEY = "no-key-required"
# The cap of a call that is not one of the graders' (their answers have caps of their own,
# ``grading.answer_budget``); it keeps a runaway model from costing more.
DEFAULT_MAX_TOKENS = 4096
# Providers served through the OpenAI SDK, where the answer's size can be capped while reading.
_OPENAI_SDK_PROVIDERS = frozenset({"openai", "custom_openai"})
# What a probe that got no answer says (``storage.jobs.calls.outage_reason`` reads it).
BUSY_WORDS = "still busy with"
# The endpoint whose first-answer turn this task holds (``LiteLLMGenerate.first_answer``).
_turn: contextvars.ContextVar[tuple[str, str | None] | None] = contextvars.ContextVar(
    "first_answer_turn", default=None)


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

    @contextlib.asynccontextmanager
    async def first_answer(self, response_format: dict[str, Any] | None, *,
                           waiting: Callable[[int], None] | None = None
                           ) -> AsyncIterator[None]:
        """Take the endpoint's turn while no ``auto`` call to it was answered yet (its calls
        go one at a time until one teaches the format, ``EndpointFormats.probing``). Callers
        enter it before their limiter slot, so that calls waiting for the first answer hold
        no slot and a slot's clock starts when its request goes: taken inside the slot, the
        opening's calls started (level and clock) a whole answer before they were sent, and
        then raced to the server together. ``waiting``: told +1 / -1 as a call starts and
        stops waiting here (a limiter counts the work waiting, ``AdaptiveLimiter``)."""
        try:
            model, api_base = self.model, resolve_api_base(self.api_base)
        except FatalProviderError:
            # Credentials that are never stored and not in the environment: the call itself
            # raises it, in its slot, where the run's fatal-error handling fails the run.
            model, api_base = self.model, None
            unresolved = True
        else:
            unresolved = False
        if (unresolved or self.output_mode != "auto" or response_format is None
                or endpoint_formats.known(model, api_base) is not None):
            yield
            return
        probing = endpoint_formats.probing(model, api_base)
        if waiting is not None:
            waiting(1)
        try:
            await probing.acquire()
        finally:
            if waiting is not None:
                waiting(-1)
        if endpoint_formats.known(model, api_base) is not None:  # taught while it waited
            probing.release()
            yield
            return
        token = _turn.set((model, api_base))
        try:
            yield
        finally:
            _turn.reset(token)
            probing.release()

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
        if mode is None and _turn.get() == (model, api_base):  # its turn (``first_answer``)
            return await self._stepping(litellm, kwargs, response_format, "json_schema",
                                        model=model, api_base=api_base, api_key=api_key)
        if mode is None:  # a caller that took no turn before its slot: its turn now
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


default_generate_fn = LiteLLMGenerate()
