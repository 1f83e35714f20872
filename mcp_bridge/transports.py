"""Serving a PlaybookServer over stdio or streamable HTTP.

HTTP binds 127.0.0.1 unless told otherwise; on a loopback address the SDK's DNS-rebinding protection is
on (only loopback Host and Origin headers are accepted). With a token, every HTTP request must carry
`Authorization: Bearer <token>`; others get 401 before reaching MCP. The listening socket is bound before
the server starts, so the URL is known (port 0 picks a free port) and a client may connect at once.

Over stdio, standard output is the protocol (mcp_bridge.stdio): `claim_stdio()` takes the wire at the
file-descriptor level before anything else runs, and every line that is not a JSON-RPC message is answered
with its JSON-RPC error, as over HTTP.

SIGINT and SIGTERM stop either transport within seconds whatever the calls are doing (`stopping_on_signals`):
calls in progress end with a tool error, the server closes, and a process that still has not exited after
`force_exit_after` seconds (a Python playbook blocking the event loop) exits anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

from mcp_bridge.cli import TOKEN_ENV
from mcp_bridge.server import PlaybookServer
from mcp_bridge.stdio import StdioWire, claim_stdio, stdio_streams
from runtime.sockets import base_url, listening_socket

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
"""HTTP binds the loopback address unless told otherwise."""
DEFAULT_PORT = 8000
"""The HTTP port when none is given (MCP servers' usual default)."""
MCP_PATH = "/mcp"
"""The streamable HTTP endpoint path."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts only this machine can reach."""
INVALID_REQUEST = -32600
"""The JSON-RPC error code of a refused request."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop `serve_http` gracefully."""
GRACEFUL_SHUTDOWN = 2.0
"""Seconds open HTTP requests get to finish when the server stops (calls in progress have been ended
already: what is left are idle streams)."""
ANSWER_GRACE = 0.2
"""Seconds a stdio server that is stopping gives the last answers to reach the client."""
FORCE_EXIT_AFTER = 4.0
"""Seconds after SIGINT/SIGTERM after which `pal mcp serve` exits even if its calls did not stop."""
STOP_REASON = "the server is shutting down"
DEFAULT_MAX_SESSIONS = 1000
"""MCP sessions an HTTP server keeps open at once (each costs tens of KB; 4,000 idle ones took 150 MB)."""
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""Seconds an idle MCP session lives (the SDK's default is 30 minutes)."""
"""What a call stopped by SIGINT/SIGTERM says."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def serve_stdio(
    server: PlaybookServer, *, wire: StdioWire | None = None, handle_signals: bool = True
) -> None:
    """Serve MCP on this process's stdin/stdout (`wire`, from `claim_stdio`, which this claims when not
    given) until the client closes stdin or the server is asked to stop (`request_stop`; SIGINT/SIGTERM
    when `handle_signals`). Stray output of Python playbooks goes to stderr, so it cannot corrupt the wire;
    a line that is not a JSON-RPC message gets its JSON-RPC error (mcp_bridge.stdio)."""
    mcp_server = server.mcp_server
    wire = wire or claim_stdio()

    async def serve() -> None:
        async with stdio_streams(wire) as (read_stream, write_stream):
            await mcp_server.run(read_stream, write_stream, mcp_server.create_initialization_options())

    with stopping_on_signals(server) if handle_signals else _nothing():
        await _until_stopped(server, serve())


async def _until_stopped(server: PlaybookServer, serving: Awaitable[None]) -> None:
    """Run `serving` until it ends or the server is asked to stop (then cancel it)."""
    task = asyncio.ensure_future(serving)
    stopping = asyncio.ensure_future(server.stopped())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not task.done():
            # The calls in progress end with tool errors: let them finish and their answers go out.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.host.calls_done(), timeout=GRACEFUL_SHUTDOWN)
                await asyncio.wait_for(asyncio.wait({task}), timeout=ANSWER_GRACE)
            task.cancel()
        await asyncio.gather(task, stopping, return_exceptions=True)
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]


@contextmanager
def stopping_on_signals(server: PlaybookServer, *, force_exit_after: float | None = None) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM call `server.request_stop()` in the event loop, even
    when the loop is busy (the handler runs between Python bytecodes, not as a loop callback). With
    `force_exit_after`, a process still running that many seconds after the signal exits at once (status
    1), and a second signal exits at once: a Python playbook stuck in a blocking call cannot keep it alive."""
    loop = asyncio.get_running_loop()
    received: list[int] = []
    timers: list[threading.Timer] = []

    def on_signal(number: int, frame: FrameType | None) -> None:
        if received and force_exit_after is not None:
            _force_exit(f"second signal {signal.Signals(number).name}")
        received.append(number)
        loop.call_soon_threadsafe(server.request_stop, f"{STOP_REASON} ({signal.Signals(number).name})")
        if force_exit_after is not None and not timers:
            timer = threading.Timer(
                force_exit_after, _force_exit, (f"the calls did not stop within {force_exit_after:g} s",)
            )
            timer.daemon = True
            timers.append(timer)
            timer.start()

    previous = {number: signal.signal(number, on_signal) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for timer in timers:
            timer.cancel()


def _force_exit(why: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"pal mcp: exiting now: {why}\n".encode())
    os._exit(1)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


class ExposureRefused(ValueError):
    """Serving on an address other machines can reach, with no token and no explicit consent."""


def check_exposure(host: str, token: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to serve a host other machines can reach without a token, unless told to."""
    if token is None and host not in LOOPBACK_HOSTS and not allow_unauthenticated:
        raise ExposureRefused(
            f"serving on {host} without a token would let anyone who can reach that address call every "
            f"tool; give --token (or ${TOKEN_ENV}), or --allow-unauthenticated if only trusted machines can "
            "reach it"
        )


class BearerTokenGate:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` (the scheme in any case) get 401."""

    def __init__(self, app: App, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                given = value
                break
        # The scheme is case-insensitive (RFC 9110 section 11.1): `bearer`, `Bearer` and `BEARER` all work.
        scheme, _, credentials = given.strip().partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._expected):
            await self.app(scope, receive, send)
            return
        reason = "no bearer token was given" if not given else "the bearer token is wrong"
        # A JSON-RPC error body: MCP clients show its message (a bare 401 reaches users as "error response").
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": INVALID_REQUEST,
                    "message": f"Unauthorized: this server needs `Authorization: Bearer <token>`; {reason}",
                },
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="pal-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(
    server: PlaybookServer,
    *,
    host: str = DEFAULT_HOST,
    token: str | None = None,
    limits: SessionLimits | None = None,
) -> App:
    """The ASGI app: MCP at /mcp and the metrics at /metrics (behind the token gate when a token is
    given), the probes /healthz and /readyz, and the access log (mcp_bridge.operations)."""
    from mcp_bridge.operations import MetricsRoute, OperatorEndpoints

    limits = limits or SessionLimits()
    mcp_app: App = server.mcp_server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        max_sessions=limits.max_sessions,
        session_idle_timeout=limits.idle_timeout,
    )
    app: App = MetricsRoute(mcp_app, server)
    return OperatorEndpoints(BearerTokenGate(app, token) if token else app, server)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionLimits:
    """How many MCP sessions an HTTP server keeps, and for how long an idle one lives."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    """Sessions open at once; a client that would open one more gets an error until one closes or expires."""
    idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    """Seconds a session may go without a request before the server closes it (a client that comes back
    later opens a new one)."""


def _url(sock: socket.socket) -> str:
    return f"{base_url(sock)}{MCP_PATH}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpEndpoint:
    """A running HTTP server."""

    url: str
    """The MCP endpoint, `http://127.0.0.1:PORT/mcp`."""
    task: asyncio.Task[None]
    """The task serving it; it ends when the server stops (Ctrl-C, or leaving `serving_http`)."""


@asynccontextmanager
async def serving_http(
    server: PlaybookServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    limits: SessionLimits | None = None,
    allow_unauthenticated: bool = False,
) -> AsyncIterator[HttpEndpoint]:
    """Serve over streamable HTTP while the block runs (port 0: a free port). A host other machines can
    reach needs a token, or `allow_unauthenticated` (ExposureRefused otherwise)."""
    import uvicorn

    from mcp_bridge.operations import metrics_available

    check_exposure(host, token, allow_unauthenticated)
    if server.metrics is None and metrics_available():
        server.enable_metrics()

    class QuietServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # Signals belong to the program embedding the server (serve_http handles Ctrl-C itself).
            yield

    sock = listening_socket(host, port)
    config = uvicorn.Config(
        http_app(server, host=host, token=token, limits=limits),
        log_level="warning",
        log_config=None,  # the process's logging (mcp_bridge.logs) decides where lines go
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(GRACEFUL_SHUTDOWN),
    )
    http = QuietServer(config)
    task = asyncio.create_task(http.serve(sockets=[sock]), name="MCP HTTP server")
    try:
        yield HttpEndpoint(url=_url(sock), task=task)
    finally:
        http.should_exit = True
        try:
            async with asyncio.timeout(GRACEFUL_SHUTDOWN * 2):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        sock.close()


async def serve_http(
    server: PlaybookServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
    handle_signals: bool = True,
    limits: SessionLimits | None = None,
    allow_unauthenticated: bool = False,
) -> None:
    """Serve over streamable HTTP until the server is asked to stop (`request_stop`; SIGINT or SIGTERM
    when `handle_signals`), then stop gracefully; `announce(url)` is called once listening."""
    if token is None and host not in LOOPBACK_HOSTS and allow_unauthenticated:
        logger.warning(
            "serving on %s without a token (--allow-unauthenticated): anyone who can reach this address "
            "can call every tool",
            host,
        )
    with stopping_on_signals(server) if handle_signals else _nothing():
        async with serving_http(
            server,
            host=host,
            port=port,
            token=token,
            limits=limits,
            allow_unauthenticated=allow_unauthenticated,
        ) as endpoint:
            if announce is not None:
                announce(endpoint.url)
            stopping = asyncio.create_task(server.stopped())
            try:
                await asyncio.wait({stopping, endpoint.task}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
