"""Chat completions through the OpenAI SDK without its request transform for plain messages.

Before sending, the SDK walks every request against its typed parameters (``maybe_transform``:
key aliases, date and file formats), trying each message type of a union in turn: 0.38 ms of
CPU for a judge's request timed alone here, about a ninth of a call's CPU
(``benchmarks/lean_requests.py``, the library's 800 calls with no cap, the SDK's path and
this one taking turns in one run: medians 3.16 and 2.77 ms per call, walls 2.53 and 2.24 s).
For messages whose every value is a string, and a ``response_format`` that is a plain dict,
the walk changes nothing. Those go to the SDK as
``extra_body`` ("additional JSON properties", sent as given and taking precedence), so the
walk sees an empty list; anything else (content parts, images, tool calls) takes the SDK's
own path. The request sent is the same JSON either way: tested against the SDK itself.
"""

from __future__ import annotations

from typing import Any


def plain_messages(messages: Any) -> bool:
    """Messages the SDK's transform leaves as they are: a list of dicts of strings."""
    return isinstance(messages, list) and all(
        isinstance(message, dict) and all(isinstance(value, str) for value in message.values())
        for message in messages)


def lean_completions_class() -> type:
    """A subclass of the SDK's ``AsyncCompletions`` whose ``create`` sends plain requests
    past the transform (imported here: the SDK is imported with litellm, never before)."""
    from openai import omit
    from openai.resources.chat import AsyncCompletions

    class LeanCompletions(AsyncCompletions):
        async def create(self, *, messages: Any, response_format: Any = omit,  # type: ignore[override]
                         extra_body: Any = None, **params: Any) -> Any:
            if not (plain_messages(messages)
                    and (response_format is omit or isinstance(response_format, dict))
                    and (extra_body is None or isinstance(extra_body, dict))):
                return await super().create(messages=messages, response_format=response_format,
                                            extra_body=extra_body, **params)
            # extra_body's own keys win, as they do over the SDK's parameters
            plain = {"messages": messages}
            if response_format is not omit:
                plain["response_format"] = response_format
            return await super().create(messages=[], extra_body={**plain, **(extra_body or {})},
                                        **params)

    return LeanCompletions


_lean_class: type | None = None


def use_lean_completions(client: Any) -> Any:
    """``client`` (an ``openai.AsyncOpenAI``) with its ``chat.completions`` lean; returns it."""
    global _lean_class
    if _lean_class is None:
        _lean_class = lean_completions_class()
    # ``chat`` and ``chat.completions`` are cached properties of the SDK: the instance's own
    # attribute takes their place.
    client.chat.__dict__["completions"] = _lean_class(client)
    return client
