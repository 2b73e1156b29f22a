"""A cap on how many bytes one provider answer may take (a broken or hostile server can send
hundreds of megabytes; a judge's answer is a few kilobytes)."""

from __future__ import annotations

import weakref
from typing import Any

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
TOO_LARGE_MARKER = "answer larger than"


class ResponseTooLargeError(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the provider's {TOO_LARGE_MARKER} {limit // (1024 * 1024)} MB; "
                         "reading stopped there")
        self.limit = limit


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

    class CappedTransport(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: Any) -> Any:
            response = await super().handle_async_request(request)
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

    return CappedTransport()


# OpenAI-protocol clients are bound to the event loop that made them; one per loop and target.
_clients: weakref.WeakKeyDictionary[Any, dict[tuple[str | None, str | None, int], Any]]
_clients = weakref.WeakKeyDictionary()


def capped_openai_client(loop: Any, *, api_base: str | None, api_key: str | None,
                         limit: int = MAX_RESPONSE_BYTES) -> Any:
    """An ``openai.AsyncOpenAI`` for litellm's ``client=`` that refuses oversized answers."""
    import httpx
    import openai

    per_loop = _clients.setdefault(loop, {})
    key = (api_base, api_key, limit)
    client = per_loop.get(key)
    if client is None:
        client = per_loop[key] = openai.AsyncOpenAI(
            api_key=api_key, base_url=api_base, max_retries=0,
            http_client=httpx.AsyncClient(transport=_capped_transport(limit),
                                          follow_redirects=True))
    return client


def is_too_large(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ResponseTooLargeError) or TOO_LARGE_MARKER in str(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
