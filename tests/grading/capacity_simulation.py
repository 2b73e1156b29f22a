"""A simulated provider with a concurrency cap (429 beyond it) and a latency, driving
``grading.capacity.CapacityEstimate`` clients on a fake clock: the capacity tests and
``benchmarks/limiter_simulation.py`` run the estimate against it."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from grading.capacity import Call, CapacityEstimate
from grading.limiter import CPU_BUSY, CPU_WINDOW


@dataclass
class Simulation:
    """Clients that each keep calls in flight up to their estimate's slots, against one
    provider with ``cap`` (refusing beyond it). ``work``: calls to make in all (refused ones
    are made again after a short backoff, as the retry loop does); None: without end."""

    estimate: CapacityEstimate
    cap: Callable[[float], int | None]
    latency: Callable[[float, int], float]
    retry_after: float | None = None
    refusal_latency: float | None = 0.002  # None: a refused call is held as long as others
    work: int | None = None
    peers: list[CapacityEstimate] = field(default_factory=list)
    share_refusals: bool = False  # peers learn each other's refusals (through the database)
    client_lag: float = 0.0  # up to this long between the provider's answer and our seeing it
    # Up to this long between a call's start and its arrival at the provider (a busy event
    # loop sends a burst's requests one after another), so calls arrive in another order
    # than their levels and the provider's count at arrival is not the call's level.
    send_lag: float = 0.0
    # Our own CPU (one core for every client): launching a call and taking in its answer
    # each cost this long, one after another, as litellm's per-call work does in one event
    # loop. With them the clients feed their estimates ``own_cpu`` as ``grading.limiter``
    # does (busy for CPU_BUSY of each CPU_WINDOW). 0: a client with CPU to spare.
    launch_cpu: float = 0.0
    answer_cpu: float = 0.0
    join_at: float | None = None  # the peers start calling then (work=None only)
    on_join: Callable[[], None] | None = None  # called then
    peers_ready: Callable[[], bool] | None = None  # after join_at, the peers wait for this
    now: float = 0.0
    server: int = 0
    calls: int = 0
    refused: int = 0
    successes: int = 0
    timeline: list[tuple[float, float]] = field(default_factory=list)
    _events: list[tuple[float, int, int, Call, bool, bool]] = field(default_factory=list)
    _waiting: list[int] = field(default_factory=list)  # queued calls per client
    _retries: list[tuple[float, int]] = field(default_factory=list)
    _arrivals: list[tuple[float, int, int, Call]] = field(default_factory=list)
    _seq: int = 0
    _joining: bool = False
    _core_free: float = 0.0  # our CPU is busy until then
    _busy: float = 0.0  # CPU seconds used so far
    _cpu_mark: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        self.clients = [self.estimate, *self.peers]
        per_client = None if self.work is None else self.work // len(self.clients)
        self._waiting = [per_client if per_client is not None else -1] * len(self.clients)
        if self.join_at is not None:
            self._waiting[1:] = [0] * len(self.peers)

    def _use_cpu(self, seconds: float) -> float:
        """Queue ``seconds`` of work on our core; when it is done."""
        self._core_free = max(self.now, self._core_free) + seconds
        self._busy += seconds
        mark = self._cpu_mark
        if mark is None:
            self._cpu_mark = (self.now, self._busy)
        elif self.now - mark[0] >= CPU_WINDOW:
            busy = (self._busy - mark[1]) / (self.now - mark[0]) >= CPU_BUSY
            for estimate in self.clients:
                estimate.own_cpu(busy)
            self._cpu_mark = (self.now, self._busy)
        return self._core_free

    def _start(self, client: int) -> None:
        call = self.clients[client].start(self.now)
        self.calls += 1
        self._seq += 1
        if self.launch_cpu:
            heapq.heappush(self._arrivals,
                           (self._use_cpu(self.launch_cpu), self._seq, client, call))
        elif self.send_lag:
            lag = self.send_lag * ((self._seq * 17) % 11) / 10
            heapq.heappush(self._arrivals, (self.now + lag, self._seq, client, call))
        else:
            self._arrive(self._seq, client, call)

    def _arrive(self, seq: int, client: int, call: Call) -> None:
        self.server += 1
        cap = self.cap(self.now)
        refused = cap is not None and self.server > cap
        jitter = 1.0 + 0.2 * ((seq * 7919) % 101) / 100  # calls do not end in lockstep
        normal = self.latency(self.now, self.server) * jitter
        if refused and self.refusal_latency is not None:
            delay = self.refusal_latency
        else:
            delay = normal
        heapq.heappush(self._events, (self.now + delay, seq, client, call, refused, True))

    def _fill(self) -> None:
        if self.join_at is not None and self.now >= self.join_at:
            self.join_at = None
            if self.on_join is not None:
                self.on_join()
            self._joining = True
        if self._joining and (self.peers_ready is None
                                                 or self.peers_ready()):
            self._joining = False
            self._waiting[1:] = [-1] * len(self.peers)
        while self._retries and self._retries[0][0] <= self.now:
            _at, client = heapq.heappop(self._retries)
            self._waiting[client] += 1
        for client, estimate in enumerate(self.clients):
            while self._waiting[client] != 0 and estimate.can_start(self.now):
                self._waiting[client] -= 1 if self._waiting[client] > 0 else 0
                self._start(client)

    def finished(self) -> bool:
        return self.work is not None and self.successes >= self.work - self.work % len(
            self.clients)

    def run(self, until: float = 3600.0) -> Simulation:
        while self.now < until and not self.finished():
            self._fill()
            times = [until] if self.join_at is None else [min(until, self.join_at)]
            if self._events:
                times.append(self._events[0][0])
            if self._retries:
                times.append(self._retries[0][0])
            if self._arrivals:
                times.append(self._arrivals[0][0])
            times += [e.paused_until for e in self.clients if e.paused_until > self.now]
            self.now = max(self.now, min(times))
            while self._arrivals and self._arrivals[0][0] <= self.now:
                _at, seq, client, call = heapq.heappop(self._arrivals)
                self._arrive(seq, client, call)
            while self._events and self._events[0][0] <= self.now:
                _at, seq, client, call, refused, at_server = heapq.heappop(self._events)
                if at_server:
                    self.server -= 1
                    if self.answer_cpu:  # the answer waits for our core
                        heapq.heappush(self._events, (self._use_cpu(self.answer_cpu), seq,
                                                      client, call, refused, False))
                        continue
                    if self.client_lag:  # the answer waits for our busy event loop
                        lag = self.client_lag * ((seq * 13) % 7) / 6
                        heapq.heappush(self._events,
                                       (self.now + lag, seq, client, call, refused, False))
                        continue
                estimate = self.clients[client]
                if refused:
                    self.refused += 1
                    estimate.refused(call, self.now, self.retry_after)
                    if self.share_refusals:
                        for peer in self.clients:
                            if peer is not estimate:
                                peer.peer_refused(self.now, round_time=0.2)
                    if self.work is not None:
                        backoff = 0.25 * ((self._seq * 31) % 97) / 97
                        heapq.heappush(self._retries, (self.now + backoff, client))
                else:
                    self.successes += 1
                    estimate.succeeded(call, self.now)
                self._fill()  # the freed slot is taken at once, as a saturated client does
            self.timeline.append((self.now, self.estimate.limit))
        return self

    @property
    def refused_share(self) -> float:
        return self.refused / self.calls

    def limit_at(self, when: float) -> float:
        return [limit for at, limit in self.timeline if at <= when][-1]

    def average_limit(self, start: float, end: float) -> float:
        values = [limit for at, limit in self.timeline if start <= at <= end]
        return sum(values) / len(values)


def flat(latency: float) -> Callable[[float, int], float]:
    return lambda _now, _in_flight: latency


def cap_of(value: int | None) -> Callable[[float], int | None]:
    return lambda _now: value


HELD = None  # the refused call is held as long as an answered one (tests/fake_provider.py)
