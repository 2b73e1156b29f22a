"""The provider request cache, stored in the database.

The key is the sha256 of everything that decides the answer: model, messages, the response
schema and the sampling parameters, and, for the second and later samples of a criterion,
the sample's index (``sample_key``). Only answers the provider actually gave are stored.
Writes are buffered and flushed in batches (one transaction per batch, at least every half
second), so caching adds no per-call transaction to a run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from storage import models as m
from storage.engine import SessionFactory
from storage.id_chunks import id_chunks


@dataclass(frozen=True)
class CachedAnswer:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None


def cache_key(
    model: str, messages: Sequence[Mapping[str, Any]],
    response_format: Mapping[str, Any] | None, sampling: Mapping[str, Any],
) -> str:
    """sha256 over a canonical JSON of the request's answer-deciding parts."""
    payload = json.dumps(
        {"model": model, "messages": list(messages), "response_format": response_format,
         "sampling": dict(sampling)},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def sample_key(key: str, sample: int) -> str:
    """The key of sample ``sample`` (grading.samples) of the request keyed ``key``: sample 0
    is the request itself, so runs asking once keep every key they had; sample ``i`` gets its
    own key, so a re-run replays the same answers and more samples add only the new ones."""
    if sample == 0:
        return key
    return hashlib.sha256(f"{key}:sample:{sample}".encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


class KeyMaker:
    """``cache_key`` for many calls that differ mostly in their messages: the same text is
    hashed, but the response schema and sampling are serialised once, not per call."""

    def __init__(self, sampling: Mapping[str, Any]):
        self._sampling = _canonical(dict(sampling))
        self._tails: dict[tuple[str, int], tuple[Any, str]] = {}

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]],
                 response_format: Mapping[str, Any] | None) -> str:
        # sort_keys orders the payload's keys: messages, model, response_format, sampling.
        cached = self._tails.get((model, id(response_format)))
        if cached is None or cached[0] is not response_format:
            tail = (f',"model":{_canonical(model)},"response_format":'
                    f'{_canonical(response_format)},"sampling":{self._sampling}}}')
            cached = self._tails[(model, id(response_format))] = (response_format, tail)
        payload = '{"messages":' + _canonical(list(messages)) + cached[1]
        return hashlib.sha256(payload.encode()).hexdigest()


def lookup(sessions: SessionFactory, key: str) -> CachedAnswer | None:
    with sessions() as session:
        row = session.execute(
            select(m.ProviderCacheRow.text, m.ProviderCacheRow.prompt_tokens,
                   m.ProviderCacheRow.completion_tokens, m.ProviderCacheRow.cost)
            .where(m.ProviderCacheRow.key == key)
        ).first()
    return None if row is None else CachedAnswer(*row)


def lookup_many(sessions: SessionFactory, keys: Sequence[str]) -> dict[str, CachedAnswer]:
    found: dict[str, CachedAnswer] = {}
    with sessions() as session:
        for chunk in id_chunks(keys):
            for key, *answer in session.execute(
                select(m.ProviderCacheRow.key, m.ProviderCacheRow.text,
                       m.ProviderCacheRow.prompt_tokens, m.ProviderCacheRow.completion_tokens,
                       m.ProviderCacheRow.cost)
                .where(m.ProviderCacheRow.key.in_(chunk))
            ):
                found[key] = CachedAnswer(*answer)
    return found


class BatchedReader:
    """Lookups made in the same turn of the event loop share one query, run in a thread.

    A per-criterion grade asks for all its criteria at once, so a response costs one query
    instead of one per criterion.
    """

    def __init__(self, sessions: SessionFactory):
        self._sessions = sessions
        self._pending: dict[str, list[asyncio.Future[CachedAnswer | None]]] = {}
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def get(self, key: str) -> CachedAnswer | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[CachedAnswer | None] = loop.create_future()
        self._pending.setdefault(key, []).append(future)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._launch)
        return await future

    def _launch(self) -> None:
        self._scheduled = False
        batch, self._pending = self._pending, {}
        task = asyncio.get_running_loop().create_task(self._read(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read(self, batch: dict[str, list[asyncio.Future[CachedAnswer | None]]]) -> None:
        try:
            found = await asyncio.to_thread(lookup_many, self._sessions, list(batch))
        except BaseException as exc:
            for futures in batch.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for key, futures in batch.items():
            for future in futures:
                if not future.done():
                    future.set_result(found.get(key))


def store_many(sessions: SessionFactory, entries: Mapping[str, tuple[str, CachedAnswer]]) -> None:
    """Insert or replace entries ``{key: (model, answer)}`` in one transaction."""
    if not entries:
        return
    rows = [
        {"key": key, "model": model, "text": answer.text,
         "prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens,
         "cost": answer.cost, "created_at": m.utcnow()}
        for key, (model, answer) in entries.items()
    ]
    with sessions.begin() as session:
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        statement = insert(m.ProviderCacheRow)
        # A newer answer replaces an older one (an unusable cached answer is re-asked).
        statement = statement.on_conflict_do_update(
            index_elements=[m.ProviderCacheRow.key],
            set_={name: statement.excluded[name] for name in
                  ("model", "text", "prompt_tokens", "completion_tokens", "cost", "created_at")},
        )
        session.execute(statement, rows)


class WriteBuffer:
    """Collects new answers from the event loop; ``flush()`` (in a thread) writes them."""

    def __init__(self, sessions: SessionFactory, *, batch: int = 200):
        self._sessions = sessions
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, CachedAnswer]] = {}
        self.batch = batch

    def add(self, key: str, model: str, answer: CachedAnswer) -> bool:
        """Queue one entry; True when a flush is due."""
        with self._lock:
            self._pending[key] = (model, answer)
            return len(self._pending) >= self.batch

    @property
    def pending(self) -> int:
        return len(self._pending)

    def get(self, key: str) -> CachedAnswer | None:
        """An answer queued and not yet written."""
        with self._lock:
            entry = self._pending.get(key)
        return None if entry is None else entry[1]

    def flush(self) -> int:
        """Write what is pending; on failure it stays pending (paid answers are not dropped)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        try:
            store_many(self._sessions, pending)
        except BaseException:
            with self._lock:
                self._pending = {**pending, **self._pending}
            raise
        return len(pending)


def clear_cache(sessions: SessionFactory, model: str | None = None) -> int:
    """Forget cached answers (of one model, or all); returns how many were removed."""
    from sqlalchemy import delete

    with sessions.begin() as session:
        statement = delete(m.ProviderCacheRow)
        if model is not None:
            statement = statement.where(m.ProviderCacheRow.model == model)
        return session.execute(statement).rowcount or 0
