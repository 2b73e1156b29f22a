"""A litellm exception turned into our errors, with every secret of the call redacted."""

from __future__ import annotations

from grading.credentials import API_KEY_ENV, credential_problem, key_env_var
from grading.errors import FatalProviderError, ProviderError, TransientProviderError
from grading.http_limits import MAX_RESPONSE_BYTES, is_too_large
from grading.redact import call_secrets, redact, strip_url_credentials
from grading.retry import retry_after_from_headers

_MISSING_KEY_HINTS = ("missing credentials", "api_key client option must be set")
_UNKNOWN_PROVIDER_HINTS = ("llm provider not provided", "provider not provided")


class _AuthError(FatalProviderError):
    """Credentials were rejected or missing; raised without the original (it may echo the key)."""


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
