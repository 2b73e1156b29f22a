"""Is sign-in configured, and is the configuration usable? Read from ``[auth]`` in
``.streamlit/secrets.toml`` and checked here, so that a mistake becomes a page that says what
to fix instead of Streamlit's exception or a sign-in loop."""

from __future__ import annotations

import functools
import json
import os
import stat as stat_module
import tomllib
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

import streamlit as st

PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")
# Keys of [auth] that are settings, not named providers.
_SETTINGS = {"client_kwargs", "expose_tokens"}


@dataclass(frozen=True)
class Provider:
    name: str | None  # None: the default provider (keys directly under [auth])
    server_metadata_url: str

    @property
    def label(self) -> str:
        return self.name.replace("-", " ").title() if self.name else "your organisation"


@dataclass(frozen=True)
class AuthConfig:
    providers: tuple[Provider, ...]
    redirect_uri: str
    problems: tuple[str, ...]  # what to fix in [auth]; empty when usable
    unreadable: bool = False  # the secrets file itself cannot be read (problems say why)


def _auth_section() -> Mapping | None:
    """The [auth] section, or None when there is none (local mode). Never raises."""
    try:
        if not st.secrets.load_if_toml_exists():
            return None
        section = st.secrets.get("auth")
    except Exception:  # an unreadable secrets.toml is reported by _unreadable_secrets
        return None
    return section if isinstance(section, Mapping) else None


def _unreadable_secrets() -> str | None:
    """Why a secrets file cannot be read, if one cannot. Streamlit only logs this and goes on
    without any secrets, which would open a team's app to everyone in local mode."""
    for path in st.get_option("secrets.files") or ():
        try:
            stat = os.stat(path)
        except OSError:
            continue  # no file there: Streamlit looks in several places
        if not stat_module.S_ISREG(stat.st_mode):
            continue  # a folder of secrets: Streamlit reads it itself
        problem = _toml_problem(path, stat.st_mtime_ns, stat.st_size)
        if problem:
            return problem
    return None


@functools.lru_cache(maxsize=8)
def _toml_problem(path: str, mtime_ns: int, size: int) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            tomllib.loads(handle.read())
    except tomllib.TOMLDecodeError as exc:
        return f"{path} cannot be read ({exc}); fix the TOML syntax"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path} cannot be read ({exc}); make it a readable UTF-8 TOML file"
    return None


def auth_config() -> AuthConfig | None:
    """The sign-in configuration, or None for local mode (no [auth] section)."""
    unreadable = _unreadable_secrets()
    if unreadable:
        return AuthConfig(providers=(), redirect_uri="", problems=(unreadable,),
                          unreadable=True)
    section = _auth_section()
    if section is None:
        return None
    problems: list[str] = []
    for key in ("redirect_uri", "cookie_secret"):
        if not str(section.get(key) or "").strip():
            problems.append(f"[auth] has no {key}")
    redirect_uri = str(section.get("redirect_uri") or "").strip()
    if redirect_uri:
        parsed = urlparse(redirect_uri)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            problems.append(f"redirect_uri must be a full URL such as "
                            f"http://localhost:8501/oauth2callback, got {redirect_uri!r}")
        elif not parsed.path.endswith("/oauth2callback"):
            problems.append("redirect_uri must end with /oauth2callback (the address "
                            "Streamlit receives the sign-in on), e.g. "
                            f"{parsed.scheme}://{parsed.netloc}/oauth2callback")
    named = {name: value for name, value in section.items()
             if isinstance(value, Mapping) and name not in _SETTINGS}
    providers: list[Provider] = []
    if not named or any(key in section for key in PROVIDER_KEYS):
        missing = [k for k in PROVIDER_KEYS if not str(section.get(k) or "").strip()]
        problems.extend(f"[auth] has no {k}" for k in missing)
        if not missing:
            providers.append(Provider(None, str(section["server_metadata_url"]).strip()))
    if "client_kwargs" in section and named and not any(k in section for k in PROVIDER_KEYS):
        # Streamlit gives [auth]'s client_kwargs to the unnamed provider only: silently
        # dropped, a provider that refuses the default prompt would loop.
        problems.append(f"[auth] client_kwargs applies to no provider: with named providers, "
                        f"put it in each one's table ([auth.{next(iter(named))}] "
                        f"client_kwargs = ...)")
    for name, value in named.items():
        if "_" in name:
            problems.append(f"[auth.{name}]: provider names cannot contain '_'; "
                            f"use [auth.{name.replace('_', '-')}]")
            continue
        missing = [k for k in PROVIDER_KEYS if not str(value.get(k) or "").strip()]
        problems.extend(f"[auth.{name}] has no {k}" for k in missing)
        if not missing:
            providers.append(Provider(name, str(value["server_metadata_url"]).strip()))
    for provider in providers:
        parsed = urlparse(provider.server_metadata_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            problems.append(
                f"server_metadata_url must be the provider's discovery URL, ending in "
                f"/.well-known/openid-configuration; got {provider.server_metadata_url!r}")
    return AuthConfig(providers=tuple(providers), redirect_uri=redirect_uri,
                      problems=tuple(problems))


@st.cache_data(ttl=15, max_entries=16, show_spinner=False)
def provider_problem(server_metadata_url: str) -> str | None:
    """Why the provider cannot be used for sign-in right now (None when it answers)."""
    try:
        with urllib.request.urlopen(server_metadata_url, timeout=5) as reply:
            metadata = json.loads(reply.read(1_000_000).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        return f"{server_metadata_url} answered HTTP {exc.code}; check the URL"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{server_metadata_url} does not answer ({reason})"
    except ValueError:
        return f"{server_metadata_url} did not return OpenID Connect discovery JSON; check the URL"
    if not isinstance(metadata, dict) or "authorization_endpoint" not in metadata:
        return (f"{server_metadata_url} is not an OpenID Connect discovery document (it has "
                "no authorization_endpoint); check the URL")
    return None
