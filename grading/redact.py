"""Keep secrets out of everything stored, logged or shown.

A provider's error may echo the request (its Authorization header, its URL), so every text
that leaves a provider call goes through ``redact`` before anyone sees it. The secrets are
every value the call could have used: an explicit key, the workbench's own variable, the
provider's own variables (litellm reads several per provider) and any ``*_API_KEY``,
``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD`` set in the environment, plus credentials written
into an ``api_base`` (``user:pass@host``, ``?api-key=...``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# Environment variables whose values are secrets whatever the provider.
_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|SECRET_KEY|PASSWORD|PASS|PASSWD|CREDENTIALS?)$",
    re.IGNORECASE,
)
# Query parameters that carry credentials in a URL.
_SECRET_PARAM = re.compile(
    r"(key|token|secret|password|passwd|sig|signature|auth|credential)", re.IGNORECASE)
# Shorter values are too likely to occur in ordinary text to be replaced safely.
_MIN_SECRET_LENGTH = 6
# "Authorization: Bearer xxx", "api-key: xxx", "x-api-key": values we never saw in the env.
_HEADER_SECRET = re.compile(
    r"(?i)((?:authorization|proxy-authorization)\s*[\"']?\s*[:=]\s*[\"']?\s*"
    r"(?:bearer|basic|token)?\s*|(?:x-)?api[-_]?key\s*[\"']?\s*[:=]\s*[\"']?\s*)"
    r"([A-Za-z0-9._~+/=\-]{6,})")
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=\-]{6,})")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@")


def environment_secrets(environ: os._Environ[str] | dict[str, str] | None = None) -> set[str]:
    """Values of the environment variables that hold secrets (by name)."""
    environ = os.environ if environ is None else environ
    return {value.strip() for name, value in environ.items()
            if _SECRET_NAME.search(name) and len(value.strip()) >= _MIN_SECRET_LENGTH}


def url_secrets(url: str | None) -> set[str]:
    """Credentials written into a URL: the password of ``user:pass@``, secret query values."""
    if not url:
        return set()
    try:
        parts = urlsplit(url)
    except ValueError:
        return set()
    found = set()
    if parts.password:
        found.add(parts.password)
    if parts.username and parts.password:
        found.add(f"{parts.username}:{parts.password}")
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_PARAM.search(name) and value:
            found.add(value)
    return {s for s in found if len(s) >= 3}


def strip_url_credentials(url: str | None) -> str | None:
    """The URL with ``user:pass@`` and secret query values masked (safe to store and show)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(n, MASK if _SECRET_PARAM.search(n) and v else v) for n, v in pairs],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def has_url_credentials(url: str | None) -> bool:
    return bool(url) and strip_url_credentials(url) != url


def call_secrets(*, api_key: str | None = None, api_base: str | None = None,
                 extra: Iterable[str | None] = ()) -> set[str]:
    """Every secret a provider call could have used."""
    found = environment_secrets()
    found |= url_secrets(api_base)
    for value in (api_key, *extra):
        if value and len(value.strip()) >= 3:
            found.add(value.strip())
    return found


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret (default: those of the environment) and anything that looks
    like a credential header or URL credential masked."""
    if not text:
        return text
    values = environment_secrets() if secrets is None else set(secrets)
    for secret in sorted(values, key=len, reverse=True):  # longest first: no partial leftovers
        if secret:
            text = text.replace(secret, MASK)
    text = _HEADER_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _URL_USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:{MASK}@", text)


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in every record (message, arguments, traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg, record.args = redact(message), None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record.exc_info = None if record.exc_text else record.exc_info
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Mask secrets in what the handlers of ``logger`` (default: the root logger) write."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
