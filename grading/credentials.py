"""Which key a model needs and whether a call to it can work, decided before calling."""

from __future__ import annotations

import os

from grading.errors import FatalProviderError
from grading.litellm_loader import load_litellm
from grading.redact import MASK, strip_url_credentials

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
_known_providers: dict[str, str | None] = {}


def key_env_var(model: str) -> str:
    """The environment variable litellm reads the key for ``model`` from."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return _KEY_ENV_BY_PROVIDER.get(provider, f"{provider.upper()}_API_KEY")


def _provider(model: str) -> str | None:
    """The litellm provider of ``model``; None when litellm does not know it."""
    if model not in _known_providers:
        litellm = load_litellm()
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
        missing = load_litellm().validate_environment(model).get("missing_keys") or []
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
