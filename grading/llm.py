"""The default ``generate_fn``: one chat completion through litellm.

litellm is imported on the first call, never at ``import grading`` (it costs seconds and,
unless told otherwise, fetches a price map from the internet). Provider failures are turned
into ``TransientProviderError`` (worth retrying) or ``ProviderError`` (tell the user).
"""

from __future__ import annotations

import os
from typing import Any

from grading.errors import ProviderError, TransientProviderError
from grading.retry import retry_after_from_headers
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


def _load_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.disable_hf_tokenizer_download = True
    litellm.suppress_debug_info = True
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
        structured_output: bool = True,
        **extra: Any,
    ):
        self._model = model
        self._api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.temperature = temperature
        self.structured_output = structured_output
        self.extra = extra

    @property
    def model(self) -> str:
        return self._model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL

    @property
    def api_base(self) -> str | None:
        return self._api_base or os.environ.get(API_BASE_ENV) or None

    def __repr__(self) -> str:  # never show the key
        return f"LiteLLMGenerate(model={self.model!r}, api_base={self.api_base!r})"

    async def __call__(
        self,
        system_prompt: str,
        user_prompt: str,
        *,
        response_format: dict[str, Any] | None = None,
    ) -> GenerateResult:
        litellm = _load_litellm()
        model, api_base = self.model, self.api_base
        api_key = self._api_key or os.environ.get(API_KEY_ENV) or None
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
        if api_base:
            kwargs["api_base"] = api_base
        if api_key:
            kwargs["api_key"] = api_key
        if response_format is not None and self.structured_output:
            kwargs["response_format"] = response_format
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            error = translate_error(exc, model=model, api_base=api_base, api_key=api_key,
                                    timeout=self.timeout)
            if error is None:
                raise
            raise error from (None if isinstance(error, _AuthError) else exc)
        choice = response.choices[0]
        text = getattr(choice.message, "content", None) or ""
        return GenerateResult(
            text=text, usage=_usage(response), cost=_cost(litellm, response), raw=response
        )


class _AuthError(ProviderError):
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


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def _short(exc: BaseException, secret: str | None, limit: int = 300) -> str:
    text = " ".join(str(getattr(exc, "message", None) or exc).split())
    text = _redact(text, secret)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _auth_message(model: str, api_base: str | None, what: str) -> str:
    env = key_env_var(model)
    where = (
        f"set {API_KEY_ENV} (or pass api_key=...) for the server at {api_base}"
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
    """Map a litellm exception to our errors; None for exceptions that are not provider errors."""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc).lower()
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
            f"The provider denied access to model '{model}' (HTTP 403): {_short(exc, api_key)}"
        )
    if "Timeout" in names or "APITimeoutError" in names:
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
            f"model '{model}' failed (HTTP {status}): {_short(exc, api_key)}",
            retry_after=retry_after_from_headers(headers),
            status_code=status,
        )
    if status == 404 or "NotFoundError" in names:
        return ProviderError(
            f"Model '{model}' was not found (HTTP 404); check the model name"
            + (f" and the api_base {api_base}" if api_base else "")
            + f": {_short(exc, api_key)}"
        )
    if status is not None or "BadRequestError" in names or "APIError" in names:
        return ProviderError(
            f"The provider rejected the request for model '{model}'"
            + (f" (HTTP {status})" if status else "")
            + f": {_short(exc, api_key)}"
        )
    return None


default_generate_fn = LiteLLMGenerate()
