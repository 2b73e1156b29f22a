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


def _secrets_paths() -> tuple[str, ...]:
    return tuple(st.get_option("secrets.files") or ())


def secrets_problem(paths: tuple[str, ...]) -> str | None:
    """Why the secrets cannot be trusted, if they cannot. Streamlit only logs a secrets file
    it cannot read (or ignores one it does not look at) and goes on without any secrets,
    which would open a team's app to everyone in local mode."""
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            continue  # no file there: Streamlit looks in several places
        if stat_module.S_ISDIR(stat.st_mode) and path.endswith(".toml"):
            problem = f"{path} is a folder; it must be a TOML file"
        elif stat_module.S_ISDIR(stat.st_mode):
            problem = _folder_problem(path)
        elif not stat_module.S_ISREG(stat.st_mode):
            continue
        elif not path.endswith(".toml"):
            problem = (f"{path} is not read: Streamlit reads secrets only from a file whose "
                       f"name ends in .toml, or from a folder; rename it to {path}.toml (and "
                       "name that in secrets.files)")
        else:
            problem = _toml_problem(path, stat.st_mtime_ns, stat.st_size)
        if problem:
            return problem
    return _stray_auth_file(paths)


def _folder_problem(path: str) -> str | None:
    try:
        entries = sorted(os.listdir(path))
    except OSError as exc:
        return f"the secrets folder {path} cannot be read ({exc.strerror or exc})"
    for entry in entries:
        if not os.path.isdir(os.path.join(path, entry)):
            return (f"{os.path.join(path, entry)} is a file in the secrets folder {path}: "
                    "there every secret must be a subfolder (e.g. auth/), so Streamlit "
                    f"ignores the whole folder; move {entry} out of it")
    return None


@functools.lru_cache(maxsize=8)
def _toml_problem(path: str, mtime_ns: int, size: int) -> str | None:
    try:
        data = _read_toml(path)
    except tomllib.TOMLDecodeError as exc:
        return f"{path} cannot be read ({exc}); fix the TOML syntax"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path} cannot be read ({exc}); make it a readable UTF-8 TOML file"
    for key in data:
        if key.lower() == "auth" and key != "auth":
            return (f"{path} has a [{key}] section, which is not sign-in: section names are "
                    "case-sensitive; write it [auth]")
    return None


def _read_toml(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return tomllib.loads(handle.read())


def _stray_files(paths: tuple[str, ...]) -> list[str]:
    """Files next to a configured secrets.toml that look meant to be it (secrets,
    secrets.toml.txt, Secrets.TOML, ...) but that Streamlit never reads."""
    read = {os.path.abspath(p) for p in paths}
    stray: list[str] = []
    for folder in sorted({os.path.dirname(os.path.abspath(p)) for p in paths
                          if p.endswith(".toml")}):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            full = os.path.join(folder, name)
            if (name.lower().startswith("secret") and full not in read
                    and os.path.isfile(full)):
                stray.append(full)
    return stray


# A stray file with these in its name is a copy kept on purpose, not a misnamed secrets.toml.
_KEPT_COPIES = ("example", "sample", "template", "dist", "bak", "orig", "old")


def _has_auth(paths: tuple[str, ...]) -> bool:
    for path in paths:
        if os.path.isdir(path):
            if os.path.isdir(os.path.join(path, "auth")):
                return True
            continue
        try:
            if "auth" in _read_toml(path):
                return True
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
    return False


def _stray_auth_file(paths: tuple[str, ...]) -> str | None:
    """A misnamed secrets file holding sign-in settings, while the read ones have none:
    whoever wrote it meant sign-in on."""
    if _has_auth(paths):
        return None
    for full in _stray_files(paths):
        if any(word in os.path.basename(full).lower() for word in _KEPT_COPIES):
            continue
        try:
            data = _read_toml(full)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if any(key.lower() == "auth" for key in data):
            wanted = next(p for p in paths if os.path.dirname(os.path.abspath(p))
                          == os.path.dirname(full))
            return (f"{full} holds sign-in settings, but Streamlit reads only {wanted}; "
                    f"rename it to {os.path.basename(wanted)}")
    return None


def local_mode_findings() -> list[str]:
    return secrets_findings(_secrets_paths())


def secrets_findings(paths: tuple[str, ...]) -> list[str]:
    """What the secrets files hold instead of sign-in: for a page that must explain why the
    app stays closed when it finds no [auth]."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            found.append(f"the secrets folder {path} has no auth subfolder")
        elif not os.path.exists(path):
            found.append(f"there is no {path}")
        else:
            try:
                data = _read_toml(path)
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue  # reported by secrets_problem
            found.append(f"{path} is empty" if not data
                         else f"{path} has no [auth] section")
    found.extend(f"{full} is not read (Streamlit reads secrets only from the files named in "
                 "secrets.files)" for full in _stray_files(paths))
    return found


def auth_config() -> AuthConfig | None:
    """The sign-in configuration, or None for local mode (no [auth] section)."""
    unreadable = secrets_problem(_secrets_paths())
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
