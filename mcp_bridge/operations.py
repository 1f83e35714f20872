"""What an operator of an HTTP server sees: `/healthz`, `/readyz`, `/metrics` and an access log.

- `GET /healthz`: 200 while the process serves (liveness; no check of anything else).
- `GET /readyz`: 200 when the server takes calls: open, not stopping, and its store (with `--store`)
  answers a read; else 503 with the reason (readiness: a load balancer sends calls elsewhere meanwhile).
- `GET /metrics`: Prometheus metrics (`pip install 'pal-bridge[metrics]'`, prometheus-client, imported only
  here): tool calls by outcome, failures by kind, call latency, calls in progress, model calls and tokens,
  and with a store the threads by status (counted in the store at each scrape). Behind the bearer token
  when the server has one; the two probes never are (they reveal nothing).
- the access log: one line per HTTP request on the logger `mcp_bridge.access` (INFO).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from pal_core.errors import PalError

if TYPE_CHECKING:
    from mcp_bridge.server import PlaybookServer
    from runtime.trace import TraceEvent

access_log = logging.getLogger("mcp_bridge.access")

METRICS_HINT = "metrics need prometheus-client: pip install 'pal-bridge[metrics]'"
HEALTH_PATH, READY_PATH, METRICS_PATH = "/healthz", "/readyz", "/metrics"
OPEN_PATHS = frozenset({HEALTH_PATH, READY_PATH})
"""Paths answered without the bearer token."""
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class ServerMetrics:
    """The Prometheus metrics of one served program, in a registry of its own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        """What `/metrics` shows."""
        self.calls = Counter(
            "pal_mcp_calls", "Tool calls answered, by tool and outcome (ok, error, cancelled)",
            ["tool", "outcome"], registry=self.registry,
        )  # fmt: skip
        self.failures = Counter(
            "pal_mcp_call_failures", "Tool calls that failed, by tool and kind of failure",
            ["tool", "kind"], registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "pal_mcp_call_seconds", "Seconds from a tool call's arrival to its answer", ["tool"],
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.in_progress = Gauge("pal_mcp_calls_in_progress", "Tool calls being run", registry=self.registry)
        self.model_calls = Counter("pal_model_calls", "Model calls made (replayed answers are not)",
                                   registry=self.registry)  # fmt: skip
        self.tokens = Counter("pal_model_tokens", "Tokens of the model calls made", ["kind"],
                              registry=self.registry)  # fmt: skip
        self.threads = Gauge("pal_threads", "Threads in the store, by status", ["status"],
                             registry=self.registry)  # fmt: skip

    def call_ended(self, tool: str, outcome: str, seconds: float, failure: str | None) -> None:
        """Count one answered (or cancelled) call."""
        self.calls.labels(tool, outcome).inc()
        self.latency.labels(tool).observe(seconds)
        if failure is not None:
            self.failures.labels(tool, failure).inc()

    def on_trace(self, event: TraceEvent) -> None:
        """A run's trace listener: counts live model calls and their tokens."""
        if event.event != "model_call" or not event.model_call:
            return
        self.model_calls.inc()
        for kind, count in (event.tokens or {}).items():
            if count:
                self.tokens.labels(kind).inc(count)

    async def render(self, server: PlaybookServer) -> bytes:
        """The metrics in Prometheus's text format, the thread counts read from the store now."""
        from prometheus_client import generate_latest

        store = server.host.opened_store
        if store is not None:
            try:
                counts = await store.count_threads()
            except PalError as error:
                access_log.warning("metrics: the store did not answer: %s", error)
            else:
                for status, count in counts.items():
                    self.threads.labels(status.value).set(count)
        return generate_latest(self.registry)


def metrics_available() -> bool:
    """Whether prometheus-client is installed."""
    import importlib.util

    return importlib.util.find_spec("prometheus_client") is not None


class OperatorEndpoints:
    """ASGI middleware: answers /healthz and /readyz itself, passes everything else to `app` (the MCP
    endpoint and /metrics, behind the token gate), and writes the access log line of every HTTP request."""

    def __init__(self, app: App, server: PlaybookServer) -> None:
        self.app = app
        """MCP and /metrics, behind the bearer token when the server has one."""
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: list[int] = []

        async def recorded(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        path = scope.get("path", "")
        try:
            if path in OPEN_PATHS and scope.get("method") in ("GET", "HEAD"):
                await self._probe(path, recorded)
            else:
                await self.app(scope, receive, recorded)
        finally:
            client = scope.get("client")
            access_log.info(
                "%s %s %s %.1f ms",
                scope.get("method"),
                path,
                status[0] if status else "-",
                (time.perf_counter() - started) * 1000,
                extra={
                    "method": scope.get("method"),
                    "path": path,
                    "status": status[0] if status else None,
                    "client": f"{client[0]}:{client[1]}" if client else None,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                },
            )

    async def _probe(self, path: str, send: Send) -> None:
        if path == HEALTH_PATH:
            await _json(send, 200, {"status": "ok"})
            return
        problem = await self.server.not_ready()
        if problem is None:
            await _json(send, 200, {"status": "ready"})
        else:
            await _json(send, 503, {"status": "not ready", "reason": problem})


async def metrics_app(server: PlaybookServer, scope: Scope, receive: Receive, send: Send) -> bool:
    """Answer GET /metrics (True), or leave the request to the MCP endpoint (False)."""
    if scope.get("path") != METRICS_PATH:
        return False
    metrics = server.metrics
    if metrics is None:
        await _text(send, 501, METRICS_HINT.encode(), "text/plain; charset=utf-8")
        return True
    from prometheus_client import CONTENT_TYPE_LATEST

    await _text(send, 200, await metrics.render(server), CONTENT_TYPE_LATEST)
    return True


class MetricsRoute:
    """ASGI middleware in front of the MCP app (and behind the token gate): serves /metrics."""

    def __init__(self, app: App, server: PlaybookServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and await metrics_app(self.server, scope, receive, send):
            return
        await self.app(scope, receive, send)


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    await _text(send, status, json.dumps(body).encode(), "application/json")


async def _text(send: Send, status: int, body: bytes, content_type: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
