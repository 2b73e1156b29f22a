"""Secrets files as people get them wrong: each made the app open to anyone with every role
(local mode) before sign-in failed closed (issue 40, item 2)."""

from __future__ import annotations

from pathlib import Path

AUTH = ('[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\n'
        'cookie_secret = "0123456789abcdef0123456789abcdef"\nclient_id = "rubric-workbench"\n'
        'client_secret = "s3cret-value"\n'
        'server_metadata_url = "http://127.0.0.1:1/.well-known/openid-configuration"\n')


def folder_of_secrets(tmp_path: Path) -> Path:
    """A Kubernetes-style secrets folder: one subfolder per secret."""
    folder = tmp_path / "secrets"
    (folder / "db").mkdir(parents=True)
    (folder / "db" / "password").write_text("x")
    return folder


def broken(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """(the path given as secrets.files, what the problem must name)."""
    if kind == "no-toml-extension":
        path = tmp_path / "secrets"
        path.write_text(AUTH)
        return path, "name ends in .toml"
    if kind == "folder-with-stray-file":
        folder = folder_of_secrets(tmp_path)
        (folder / "secrets.toml").write_text(AUTH)
        return folder, "secrets.toml is a file in the secrets folder"
    if kind == "capital-auth":
        path = tmp_path / "secrets.toml"
        path.write_text(AUTH.replace("[auth]", "[Auth]"))
        return path, "has a [Auth] section, which is not sign-in"
    if kind == "empty-file":
        path = tmp_path / "secrets.toml"
        path.write_text("")
        return path, "secrets.toml is empty"
    raise AssertionError(kind)


BROKEN = ["no-toml-extension", "folder-with-stray-file", "capital-auth", "empty-file"]
