"""The fake provider (tests/fake_provider.py) in a child process of its own.

In the test process, the provider's handler threads share the GIL with the client's event
loop: under load, a handler that has written its answer waits for the GIL to count the call
as ended while the client has already read the answer and sent its next request, and the
two take turns in ways a provider on another machine never would. Measurements of rates
(calls in flight, 429s) run it here, as the benchmark does; the parent configures it and
reads its counters over the child's stdin and stdout, one JSON line per command.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class ProviderProcess:
    """``reset(latency, cap)``, point litellm at ``api_base``, read ``stats()``, ``stop()``."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.provider_process"], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.api_base = self.process.stdout.readline().strip()
        if not self.api_base:
            self.stop()
            raise RuntimeError("the fake provider process did not start")

    def _ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stats(self) -> dict:
        """Requests, 429s and the most calls in flight since the last reset, and the
        provider's own CPU seconds."""
        return self._ask("stats")

    def sizes(self) -> dict:
        """Requests since the last reset and what they sent: prompt characters (every
        message) and structured-output schema characters, summed."""
        return self._ask("sizes")

    def reset(self, latency: float, cap: int | None, slots: int | None = None) -> None:
        """Fresh counters; answer after ``latency`` s, refuse calls beyond ``cap`` in flight;
        ``slots``: serve that many at once and queue the rest (``serve_at_once``)."""
        self._ask(f"reset {latency} {cap or 0} {slots or 0}")

    def stop(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.terminate()
        self.process.wait(10)


def _serve() -> None:
    from tests.fake_provider import FakeProvider

    provider = FakeProvider().start()
    print(provider.api_base, flush=True)
    for line in sys.stdin:
        command, *args = line.split()
        if command == "stats":
            print(json.dumps({"requests": provider.requests,
                              "rate_limited": provider.rate_limited,
                              "max_in_flight": provider.max_in_flight,
                              "levels": provider.levels,
                              "provider_cpu": time.process_time()}), flush=True)
        elif command == "sizes":
            bodies = list(provider.bodies)
            print(json.dumps({
                "requests": len(bodies),
                "prompt_chars": sum(len(str(m.get("content", ""))) for b in bodies
                                    for m in b.get("messages", [])),
                "schema_chars": sum(len(json.dumps(b["response_format"])) for b in bodies
                                    if b.get("response_format")),
            }), flush=True)
        elif command == "reset":
            provider.reset()
            provider.latency = float(args[0])
            provider.max_concurrency = int(args[1]) or None
            provider.serve_at_once(int(args[2]) or None if len(args) > 2 else None)
            print("{}", flush=True)
    provider.stop()


if __name__ == "__main__":
    _serve()
