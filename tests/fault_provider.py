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
from typing import Any

import pytest

from tests.fake_provider import FakeProvider, ProviderHandler, Reply, _completion, judge_reply


@dataclass
class Fault(Reply):
    kind: str = "reset"
    interval: float = 1.0
    size: int = 0


class FaultHandler(ProviderHandler):
    """The fake provider's handler, answering a ``Fault`` in its broken way."""

    def answer(self, reply: Reply, body: dict[str, Any], headers: dict[str, str],
               release: threading.Event) -> None:
        if not isinstance(reply, Fault):
            super().answer(reply, body, headers, release)
            return
        kind = reply.kind
        if kind == "echo_auth":
            message = (f"invalid request (received headers: authorization: "
                       f"{headers.get('authorization', '')}, url: {self.path})")
            self.send_json(reply.status if reply.status != 200 else 400,
                           {"error": {"message": message, "type": "invalid_request_error"}})
        elif kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif kind == "truncate":
            data = self._promise_a_judge_answer(body)
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif kind == "html":
            page = b"<html><head><title>Bad gateway</title></head><body>oops</body></html>"
            self.send_bytes(reply.status, page, content_type="text/html")
        elif kind == "empty_choices":
            payload = _completion(body, Reply("x"))
            payload["choices"] = []
            self.send_json(200, payload)
        elif kind == "trickle":
            data = self._promise_a_judge_answer(body)
            self.wfile.flush()
            for index in range(len(data)):
                self.wfile.write(data[index:index + 1])
                self.wfile.flush()
                if release.wait(reply.interval):
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
            while sent < reply.size:
                piece = chunk[: min(len(chunk), reply.size - sent)]
                self.wfile.write(piece)
                sent += len(piece)
            self.wfile.write(after)
            self.wfile.flush()
        else:
            raise AssertionError(f"unknown fault {kind!r}")

    def _promise_a_judge_answer(self, body: dict[str, Any]) -> bytes:
        """Send the headers of a valid answer (its full length promised); return its body."""
        data = json.dumps(_completion(body, Reply(judge_reply(body).content))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return data


class FaultProvider(FakeProvider):
    handler = FaultHandler

    def always(self, fault: Reply | None) -> None:
        """Answer every request with ``fault`` (None: back to a well-behaved judge)."""
        with self._lock:
            self.default = judge_reply if fault is None else (lambda body: fault)


@pytest.fixture(scope="session")
def fault_provider_server():
    with FaultProvider().running() as server:
        yield server


@pytest.fixture
def fault_provider(fault_provider_server):
    with fault_provider_server.clean() as server:
        yield server


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
