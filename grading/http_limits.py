"""A cap on how many bytes one provider answer may take (a broken or hostile server can send
hundreds of megabytes; a judge's answer is a few kilobytes)."""

from __future__ import annotations

import atexit
import contextlib
import threading
from typing import Any

from grading.lean_completions import use_lean_completions

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
TOO_LARGE_MARKER = "answer larger than"


class ResponseTooLargeError(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the provider's {TOO_LARGE_MARKER} {limit // (1024 * 1024)} MB; "
                         "reading stopped there")
        self.limit = limit


def _litellm_transport() -> Any:
    """The transport litellm itself would use (aiohttp by default, with its SSL settings):
    httpx's own HTTP/1.1 code costs about five times its CPU per call."""
    try:
        import ssl

        from litellm.llms.custom_httpx.http_handler import (
            AsyncHTTPHandler,
            get_ssl_configuration,
        )

        ssl_config = get_ssl_configuration()
        return AsyncHTTPHandler.create_async_transport(
            ssl_context=ssl_config if isinstance(ssl_config, ssl.SSLContext) else None,
            ssl_verify=ssl_config if isinstance(ssl_config, bool) else None)
    except (ImportError, AttributeError, TypeError):  # another litellm: httpx's transport
        return None


def _capped_transport(limit: int) -> Any:
    import httpx

    class CappedStream(httpx.AsyncByteStream):
        def __init__(self, stream: Any):
            self._stream = stream

        async def __aiter__(self):  # type: ignore[override]
            total = 0
            async for chunk in self._stream:
                total += len(chunk)
                if total > limit:
                    raise ResponseTooLargeError(limit)
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    class CappedTransport(httpx.AsyncBaseTransport):
        def __init__(self, inner: httpx.AsyncBaseTransport):
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            if request.url.userinfo:
                # httpx already turned an api_base's user:password into the Authorization
                # header; aiohttp refuses a URL that still carries them next to that header.
                request.url = request.url.copy_with(userinfo=b"")
            response = await self.inner.handle_async_request(request)
            length = response.headers.get("content-length", "")
            if length.isdigit():
                if int(length) > limit:
                    await response.aclose()
                    raise ResponseTooLargeError(limit)
                # The HTTP framing reads no more than the announced length: nothing to count
                # (counting every chunk costs ~1 ms of CPU per call, a tenth of the call).
                return response
            return httpx.Response(
                status_code=response.status_code, headers=response.headers,
                stream=CappedStream(response.stream), extensions=response.extensions)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return CappedTransport(_litellm_transport() or httpx.AsyncHTTPTransport())


# OpenAI-protocol clients are bound to the event loop that made them; one per loop and
# target. Those of closed loops are disposed of when another loop asks (grade_sync makes a
# loop per call), the rest at exit.
_clients: dict[Any, dict[tuple[str | None, str | None, int], Any]] = {}
_clients_lock = threading.Lock()


def capped_openai_client(loop: Any, *, api_base: str | None, api_key: str | None,
                         limit: int = MAX_RESPONSE_BYTES) -> Any:
    """An ``openai.AsyncOpenAI`` for litellm's ``client=`` that refuses oversized answers (and
    sends plain requests past the SDK's transform: ``grading.lean_completions``)."""
    key = (api_base, api_key, limit)
    client = _clients.get(loop, {}).get(key)
    if client is not None:
        return client
    import httpx
    import openai

    with _clients_lock:
        if not _clients:
            atexit.register(_dispose_all)
        for old in [old for old in _clients if old is not loop and old.is_closed()]:
            _dispose(_clients.pop(old))
        per_loop = _clients.setdefault(loop, {})
        client = per_loop.get(key)
        if client is None:
            client = per_loop[key] = use_lean_completions(openai.AsyncOpenAI(
                api_key=api_key, base_url=api_base, max_retries=0,
                http_client=httpx.AsyncClient(transport=_capped_transport(limit),
                                              follow_redirects=True)))
    return client


def _dispose(clients: dict[Any, Any]) -> None:
    """Close the connections of clients whose loop is gone (or at exit), without it.

    litellm's aiohttp transport knows how to close its session from outside that session's
    loop (the way it recycles sessions itself); httpx's own transport needs nothing: its
    sockets close with the loop and it prints nothing.
    """
    for client in clients.values():
        inner = getattr(getattr(client._client, "_transport", None), "inner", None)
        session = getattr(inner, "client", None)
        close = getattr(inner, "_close_recycled_session", None)
        if close is None or session is None or not hasattr(session, "closed"):
            continue  # not litellm's aiohttp transport, or it never opened a session
        with contextlib.suppress(Exception):
            close(session)


def _dispose_all() -> None:
    with _clients_lock:
        for clients in _clients.values():
            _dispose(clients)
        _clients.clear()


def is_too_large(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLargeError) or TOO_LARGE_MARKER in str(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
