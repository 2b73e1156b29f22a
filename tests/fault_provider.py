"""A fault-injecting OpenAI-compatible server: the fake provider, plus the ways real servers
break. Script a ``Fault`` like any ``Reply`` (``enqueue``), or make every answer one with
``always``.

Kinds: ``echo_auth`` (an error whose body repeats the request's Authorization header),
``reset`` (the connection is dropped without an answer), ``truncate`` (half the promised body,
then close), ``html`` (an HTML page, with ``status`` 200 or 502), ``trickle`` (a valid answer at
one byte per ``interval`` seconds), ``huge`` (a valid answer of ``size`` bytes, with no
Content-Length), ``empty_choices`` (``choices: []``). A 429 with a bad Retry-After is a plain
``Reply(status=429, headers={"Retry-After": ...})``; a hang is ``Reply(hang=...)``.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, Reply, _completion, _Server, judge_reply


@dataclass
class Fault(Reply):
    kind: str = "reset"
    interval: float = 1.0
    size: int = 0


class FaultProvider(FakeProvider):
    def start(self) -> FaultProvider:
        self._httpd = _Server(("127.0.0.1", 0), _fault_handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def always(self, fault: Reply | None) -> None:
        """Answer every request with ``fault`` (None: back to a well-behaved judge)."""
        with self._lock:
            self.default = judge_reply if fault is None else (lambda body: fault)


def _fault_handler_for(provider: FaultProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = provider._begin(body, headers)
            release = provider._release
            try:
                if reply.hang is not None:
                    release.wait(reply.hang)
                if reply.delay or provider.latency:
                    release.wait(reply.delay + provider.latency)
                if isinstance(reply, Fault):
                    self._fault(reply, body, headers, release)
                elif reply.status == 200:
                    self._send(200, json.dumps(_completion(body, reply)).encode(),
                               reply.headers)
                else:
                    error = {"error": {"message": reply.error_message, "type": "fake_error",
                                       "code": str(reply.status)}}
                    self._send(reply.status, json.dumps(error).encode(), reply.headers)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass
            finally:
                provider._end()

        def _send(self, status: int, data: bytes, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _fault(self, fault: Fault, body: dict, headers: dict[str, str],
                   release: threading.Event) -> None:
            kind = fault.kind
            if kind == "echo_auth":
                message = (f"invalid request (received headers: authorization: "
                           f"{headers.get('authorization', '')}, url: {self.path})")
                error = {"error": {"message": message, "type": "invalid_request_error"}}
                self._send(fault.status if fault.status != 200 else 400,
                           json.dumps(error).encode())
            elif kind == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
            elif kind == "truncate":
                data = json.dumps(_completion(body, Reply(judge_reply(body).content))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif kind == "html":
                page = b"<html><head><title>Bad gateway</title></head><body>oops</body></html>"
                self._send(fault.status, page, content_type="text/html")
            elif kind == "empty_choices":
                payload = _completion(body, Reply("x"))
                payload["choices"] = []
                self._send(200, json.dumps(payload).encode())
            elif kind == "trickle":
                data = json.dumps(_completion(body, Reply(judge_reply(body).content))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.flush()
                for index in range(len(data)):
                    self.wfile.write(data[index:index + 1])
                    self.wfile.flush()
                    if release.wait(fault.interval):
                        return
            elif kind == "huge":
                head = json.dumps(_completion(body, Reply("@@"))).encode()
                before, after = head.split(b"@@")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                self.wfile.write(before)
                chunk = b"x" * (1024 * 1024)
                sent = 0
                while sent < fault.size:
                    piece = chunk[: min(len(chunk), fault.size - sent)]
                    self.wfile.write(piece)
                    sent += len(piece)
                self.wfile.write(after)
                self.wfile.flush()
            else:
                raise AssertionError(f"unknown fault {kind!r}")

    return Handler


@pytest.fixture(scope="session")
def fault_provider_server():
    server = FaultProvider().start()
    yield server
    server.stop()


@pytest.fixture
def fault_provider(fault_provider_server):
    fault_provider_server.reset()
    yield fault_provider_server
    fault_provider_server.reset()


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
