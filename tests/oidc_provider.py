"""Start the real OpenID Connect provider in tests/oidc (panva's oidc-provider on Node).

``npm install`` runs once (when tests/oidc/node_modules lacks the pinned package); after
that the provider starts offline. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

OIDC_DIR = Path(__file__).resolve().parent / "oidc"
CLIENT_ID = "rubric-workbench"
CLIENT_SECRET = "test-client-secret"  # a test-only client of a throwaway provider


class OidcUnavailable(RuntimeError):
    """Node, npm or the provider package is missing; the message says what to install."""


def _installed() -> bool:
    wanted = json.loads((OIDC_DIR / "package.json").read_text())["dependencies"]["oidc-provider"]
    manifest = OIDC_DIR / "node_modules" / "oidc-provider" / "package.json"
    return manifest.exists() and json.loads(manifest.read_text())["version"] == wanted


def ensure_installed() -> None:
    if shutil.which("node") is None:
        raise OidcUnavailable("node is not installed (apt-get install nodejs npm)")
    if _installed():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise OidcUnavailable("npm is not installed (apt-get install npm)")
    # Test workers run in parallel: ``npm ci`` first deletes node_modules, so a second worker's
    # install (or its check) would race the first. One installs; the others wait, then see it.
    with open(OIDC_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed():
            return
        # The lock file pins every package; --prefer-offline uses npm's cache when it can.
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
            cwd=OIDC_DIR, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0 or not _installed():
            raise OidcUnavailable(
                f"npm ci in {OIDC_DIR} failed:\n{done.stdout}\n{done.stderr}")


@dataclass
class OidcProvider:
    process: subprocess.Popen
    port: int

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()


def start(redirect_uri: str, *, id_token_ttl: int = 3600, log: Path | None = None,
          accounts: dict[str, dict] | None = None) -> OidcProvider:
    """A provider whose one client redirects to ``redirect_uri``; ready when this returns.
    ``accounts`` replaces claims per login (e.g. ``{"eve": {"email": "boss@example.org",
    "email_verified": False}}``); every other login gets its own verified e-mail."""
    ensure_installed()
    env = {**os.environ, "OIDC_PORT": "0", "OIDC_CLIENT_ID": CLIENT_ID,
           "OIDC_CLIENT_SECRET": CLIENT_SECRET, "OIDC_REDIRECT_URI": redirect_uri,
           "OIDC_ID_TOKEN_TTL": str(id_token_ttl), "OIDC_ACCOUNTS": json.dumps(accounts or {})}
    stderr = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - owned by the child
    process = subprocess.Popen(["node", "provider.mjs"], cwd=OIDC_DIR, env=env,
                               stdout=subprocess.PIPE, stderr=stderr, text=True)
    deadline = time.monotonic() + 30
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("READY "):
            return OidcProvider(process, int(line.split()[1]))
        if not line and process.poll() is not None:
            break
    process.kill()
    raise OidcUnavailable(f"the OpenID Connect provider did not start (exit {process.poll()})"
                          + (f"; see {log}" if log else ""))


def secrets_toml(provider_metadata_url: str, redirect_uri: str, **extra: str) -> str:
    """An [auth] section for the app, as a person would write it."""
    lines = ["[auth]", f'redirect_uri = "{redirect_uri}"',
             'cookie_secret = "test-only-cookie-secret-0123456789abcdef"',
             f'client_id = "{CLIENT_ID}"', f'client_secret = "{CLIENT_SECRET}"',
             f'server_metadata_url = "{provider_metadata_url}"',
             'client_kwargs = { prompt = "login" }']
    lines += [f'{k} = "{v}"' for k, v in extra.items()]
    return "\n".join(lines) + "\n"
