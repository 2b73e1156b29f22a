"""A local OpenAI-compatible chat-completions server for tests.

litellm talks to it over real HTTP (``openai/<model>`` with ``api_base=url + "/v1"``), so the
whole adapter path is exercised: request building, structured output, status codes, headers,
timeouts. Replies are scripted per test; what the server saw is recorded.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest


@dataclass
class Reply:
    """One scripted answer. ``hang`` holds the request open that long (or until reset)."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = "scripted error"
    delay: float = 0.0
    hang: float | None = None
    usage: dict[str, int] | None = None


ReplyFn = Callable[[dict[str, Any]], "Reply | str"]


def is_probe(body: dict[str, Any]) -> bool:
    """The one-token request sent before the next call to a server that may still be running
    calls we stopped waiting for (a timeout, a cancelled run: grading.busy_server), not a
    grading request."""
    return (body.get("max_tokens") == 1 and "response_format" not in body
            and body["messages"][-1]["content"] == "Say OK.")

_NUMBERED_CRITERION = re.compile(r'<criterion number="(\d+)"')


def _rated_numbers(schema: dict[str, Any]) -> dict[int, str]:
    """A one-shot mixed schema's rating criteria: number -> the first option label."""
    items = ((schema.get("properties") or {}).get("criteria") or {}).get("items") or {}
    rated: dict[int, str] = {}
    for variant in items.get("anyOf") or ():
        properties = variant.get("properties") or {}
        labels = (properties.get("option") or {}).get("enum")
        numbers = (properties.get("number") or {}).get("enum") or ()
        if labels and len(numbers) == 1:
            rated[numbers[0]] = labels[0]
    return rated


def judge_reply(body: dict[str, Any]) -> Reply:
    """A well-behaved judge: a valid answer for whichever grader's schema was requested."""
    schema_name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    labels = ((schema.get("properties") or {}).get("option") or {}).get("enum")
    if schema_name.startswith("pairwise") or "<response_b>" in prompt:
        return Reply(json.dumps({"reason": "it says more", "preference": longer(prompt)}))
    if labels:  # a rating: the first option listed
        return Reply(json.dumps({"reason": "the response does this", "option": labels[0]}))
    if schema_name == "holistic_score" or ('"score"' in prompt and "0 to 100" in prompt):
        return Reply(json.dumps({"score": 80, "reason": "mostly there"}))
    numbers = _NUMBERED_CRITERION.findall(prompt)
    if schema_name == "criteria_verdicts" or len(numbers) > 1:
        rated = _rated_numbers(schema)  # a mixed rubric: the first option of each rating
        answers = [{"number": int(n), "reason": "ok", "option": rated[int(n)]}
                   if int(n) in rated else {"number": int(n), "verdict": "MET", "reason": "ok"}
                   for n in numbers]
        return Reply(json.dumps({"criteria": answers}))
    return Reply(json.dumps({"verdict": "MET", "reason": "the response does this"}))


_SHOWN_PAIR = re.compile(r"<response_a>\n(.*?)\n</response_a>\n\n<response_b>\n(.*?)\n"
                         r"</response_b>", re.DOTALL)


def longer(prompt: str) -> str:
    """A pairwise judge's answer that depends on the responses, never on their order: the
    response with more words is better (A / B as shown), the same length a TIE; worked
    examples before "The pair to compare:" are not the pair."""
    prompt = prompt.split("The pair to compare:", 1)[-1]
    first, second = (len(text.split()) for text in _SHOWN_PAIR.search(prompt).groups())
    return "TIE" if first == second else "A" if first > second else "B"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    usage = reply.usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content or ""},
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


class ProviderHandler(BaseHTTPRequestHandler):
    """Serves ``POST .../chat/completions`` for ``provider`` (set by ``handler_for``): reads
    the request, asks the provider for its reply, waits as scripted, then ``answer``s.
    Subclasses change only ``answer`` (the fault provider breaks the answer in its ways)."""

    protocol_version = "HTTP/1.1"
    provider: FakeProvider

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self.send_json(400, {"error": {"message": "body is not JSON"}})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        provider = self.provider
        reply = provider._begin(body, headers)
        release = provider._release
        answering = False
        serving = provider._serving  # a server that runs so many requests at once
        if serving is not None:
            serving.acquire()  # the rest wait in its queue, as llama.cpp's one slot does
        try:
            if reply.hang is not None:
                release.wait(reply.hang)
            wait = provider.latency + reply.delay
            if wait:
                release.wait(wait)
            provider._answering()
            answering = True
            self.answer(reply, body, headers, release)
        except OSError:
            pass  # the client gave up (timeout, reset): nothing to answer
        finally:
            if not answering:
                provider._answering()
            if serving is not None:
                serving.release()
            provider._end()

    def answer(self, reply: Reply, body: dict[str, Any], headers: dict[str, str],
               release: threading.Event) -> None:
        if reply.status == 200:
            with self.provider._lock:
                self.provider.answered.append(body)
            self.send_json(200, _completion(body, reply), reply.headers)
        else:
            error = {"message": reply.error_message, "type": "fake_error",
                     "code": str(reply.status)}
            self.send_json(reply.status, {"error": error}, reply.headers)

    def send_json(self, status: int, payload: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(payload).encode(), headers)

    def send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None,
                   content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class FakeProvider:
    """Start with ``start()``, point litellm at ``url + "/v1"``, ``stop()`` when done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    handler: type[ProviderHandler] = ProviderHandler  # how requests are answered

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> Self:
        handler = type("Handler", (self.handler,), {"provider": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    @contextlib.contextmanager
    def running(self) -> Iterator[Self]:
        """Started for the ``with`` block (a session fixture's whole life)."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    @contextlib.contextmanager
    def clean(self) -> Iterator[Self]:
        """A fresh script and counters for the ``with`` block; requests a test left hanging
        are released at its end."""
        self.reset()
        try:
            yield self
        finally:
            self.reset()

    def stop(self) -> None:
        self._release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the fake provider first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_base(self) -> str:
        return self.url + "/v1"

    def reset(self) -> None:
        """Forget the script and counters; release any request still hanging."""
        with self._lock:
            old = getattr(self, "_release", None)
            if old is not None:
                old.set()
            self._release = threading.Event()
            self.script: deque[Reply] = deque()
            self.default: ReplyFn = judge_reply
            self.latency = 0.0
            self.max_concurrency: int | None = None
            self._serving: threading.Semaphore | None = None  # ``serve_at_once``
            self.over_limit_retry_after = "0"
            self.required_api_key: str | None = None
            # The ``response_format`` types the server accepts (None: any). Like
            # llama-cpp-python's server, a refused type gets HTTP 500 naming the types it takes.
            self.accepted_formats: set[str] | None = None
            self.format_refusal_status = 500
            self.requests = 0
            self.in_flight = 0
            self.max_in_flight = 0
            # Requests received and not yet being answered: ``in_flight`` counts a request
            # until its handler has written the answer and taken the lock again, so a client
            # that sends its next request the moment it reads an answer may show in
            # ``max_in_flight`` one above what it ever had outstanding.
            self.outstanding = 0
            self.max_outstanding = 0
            self.levels: list[int] = []  # ``outstanding`` as each request arrived, itself included
            self.rate_limited = 0
            self.bodies: list[dict[str, Any]] = []
            self.answered: list[dict[str, Any]] = []  # bodies that got a 200 answer
            self.headers_seen: list[dict[str, str]] = []
            self.request_times: list[float] = []

    # -- scripting ---------------------------------------------------------------------
    def enqueue(self, *replies: Reply | str) -> None:
        """Answer the next requests with these replies, in order, then fall back to default."""
        with self._lock:
            for reply in replies:
                self.script.append(Reply(reply) if isinstance(reply, str) else reply)

    def serve_at_once(self, slots: int | None) -> None:
        """Run at most ``slots`` requests at once and queue the rest, never refusing (a
        local server with ``slots`` slots: llama-cpp-python's runs one); ``latency`` is then
        each request's service time. None: every request at once."""
        with self._lock:
            self._serving = threading.Semaphore(slots) if slots else None

    @property
    def last_body(self) -> dict[str, Any]:
        return self.bodies[-1]

    # -- serving (called from handler threads) ------------------------------------------
    def _begin(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests += 1
            self.bodies.append(body)
            self.headers_seen.append(headers)
            self.request_times.append(time.monotonic())
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.outstanding += 1
            self.max_outstanding = max(self.max_outstanding, self.outstanding)
            self.levels.append(self.outstanding)
            if self.required_api_key is not None and (
                headers.get("authorization") != f"Bearer {self.required_api_key}"
            ):
                return Reply(status=401, error_message="Incorrect API key provided")
            kind = (body.get("response_format") or {}).get("type")
            if (kind is not None and self.accepted_formats is not None
                    and kind not in self.accepted_formats):
                allowed = " or ".join(f"'{t}'" for t in ["text", *sorted(self.accepted_formats)])
                return Reply(status=self.format_refusal_status,
                             error_message=f"1 validation error: response_format.type: "
                                           f"Input should be {allowed}")
            if self.max_concurrency is not None and self.in_flight > self.max_concurrency:
                self.rate_limited += 1
                return Reply(
                    status=429,
                    headers={"Retry-After": self.over_limit_retry_after},
                    error_message="too many concurrent requests",
                )
            if self.script:
                return self.script.popleft()
            default = self.default
        reply = default(body)
        return Reply(reply) if isinstance(reply, str) else reply

    def _answering(self) -> None:
        with self._lock:
            self.outstanding -= 1

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1


# -- pytest fixtures: import them into a conftest.py to use them ------------------------------
@pytest.fixture(scope="session")
def fake_provider_server():
    """One server for the whole session (starting one per test is slow under load)."""
    with FakeProvider().running() as server:
        yield server


@pytest.fixture
def fake_provider(fake_provider_server):
    """The session server with a clean script and counters for this test."""
    with fake_provider_server.clean() as server:
        yield server
