"""A counting pass-through in front of the real model's server, on 127.0.0.1.

``enforce_schema=False`` forwards requests as they are: the stock llama-cpp-python server,
which answers HTTP 500 to OpenAI's ``json_schema`` option. ``enforce_schema=True`` turns that
option into the server's grammar-enforced JSON mode with the same schema: a server that takes
``json_schema`` and enforces it, as llama.cpp's own ``llama-server``, Ollama and vLLM do.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


def _usage(data: bytes) -> list[dict[str, int]]:
    try:
        usage = json.loads(data).get("usage")
    except (ValueError, AttributeError):
        return []
    return [usage] if isinstance(usage, dict) else []


class CountingProxy:
    def __init__(self, upstream: str, *, enforce_schema: bool) -> None:
        self.upstream = upstream.rstrip("/")
        self.enforce_schema = enforce_schema
        self.bodies: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.usages: list[dict[str, int]] = []  # the ``usage`` of each answer that had one
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with proxy._lock:
                    proxy.bodies.append(body)
                if proxy.enforce_schema:
                    body = proxy.translate(body)
                path = self.path.removeprefix("/v1")
                request = urllib.request.Request(
                    proxy.upstream + path, data=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json"}, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=600) as answer:
                        status, data = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                with proxy._lock:
                    proxy.statuses.append(status)
                    proxy.usages.extend(_usage(data))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @staticmethod
    def translate(body: dict[str, Any]) -> dict[str, Any]:
        response_format = body.get("response_format") or {}
        if response_format.get("type") != "json_schema":
            return body
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        return {**body, "response_format": {"type": "json_object", "schema": schema}}

    @property
    def api_base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reset(self) -> None:
        with self._lock:
            self.bodies.clear()
            self.statuses.clear()
            self.usages.clear()

    def kinds(self) -> list[str | None]:
        with self._lock:
            return [(b.get("response_format") or {}).get("type") for b in self.bodies]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
