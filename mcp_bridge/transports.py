"""Serving a PlaybookServer over stdio or streamable HTTP.

HTTP binds 127.0.0.1 unless told otherwise; on a loopback address only loopback Host and Origin headers are
accepted (DNS-rebinding protection, runtime.serving.http, the same check the A2A server makes). With a
token, every HTTP request must carry `Authorization: Bearer <token>`; others get 401 before reaching MCP.
The listening socket is bound before the server starts, so the URL is known (port 0 picks a free port) and
a client may connect at once.

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
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from mcp_bridge.cli import TOKEN_ENV
from mcp_bridge.server import PlaybookServer
from mcp_bridge.stdio import StdioWire, claim_stdio, stdio_streams
from runtime.serving import http
from runtime.serving.http import (
    FORCE_EXIT_AFTER,
    GRACEFUL_SHUTDOWN,
    LOOPBACK_HOSTS,
    App,
    BearerTokenGate,
    ExposureRefused,
    HostOriginCheck,
    HttpEndpoint,
    nothing,
    serve_until_stopped,
    serving_app,
    warn_if_exposed,
)

logger = logging.getLogger(__name__)

__all__ = [
    "FORCE_EXIT_AFTER",
    "LOOPBACK_HOSTS",
    "ExposureRefused",
    "HttpEndpoint",
    "SessionLimits",
    "check_exposure",
    "http_app",
    "serve_http",
    "serve_stdio",
    "serving_http",
    "stopping_on_signals",
]

DEFAULT_HOST = "127.0.0.1"
"""HTTP binds the loopback address unless told otherwise."""
DEFAULT_PORT = 8000
"""The HTTP port when none is given (MCP servers' usual default)."""
MCP_PATH = "/mcp"
"""The streamable HTTP endpoint path."""
ANSWER_GRACE = 0.2
"""Seconds a stdio server that is stopping gives the last answers to reach the client."""
DEFAULT_MAX_SESSIONS = 1000
"""MCP sessions an HTTP server keeps open at once (each costs tens of KB; 4,000 idle ones took 150 MB)."""
DEFAULT_SESSION_IDLE_TIMEOUT = 600.0
"""Seconds an idle MCP session lives (the SDK's default is 30 minutes)."""


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

    with stopping_on_signals(server) if handle_signals else nothing():
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
    """runtime.serving.http.stopping_on_signals, for `pal mcp` (a forced exit says `pal mcp: ...`)."""
    with http.stopping_on_signals(server, force_exit_after=force_exit_after, command="pal mcp"):
        yield


def check_exposure(host: str, token: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to serve a host other machines can reach without a token, unless told to."""
    http.check_exposure(host, token, allow_unauthenticated, token_env=TOKEN_ENV)


def http_app(
    server: PlaybookServer,
    *,
    host: str = DEFAULT_HOST,
    token: str | None = None,
    limits: SessionLimits | None = None,
) -> App:
    """The ASGI app: MCP at /mcp and the metrics at /metrics (behind the token gate when a token is
    given, and the Host/Origin check on a loopback address), the probes /healthz and /readyz, and the access
    log (runtime.serving.operations)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from runtime.serving.operations import MetricsRoute, OperatorEndpoints

    limits = limits or SessionLimits()
    mcp_app: App = server.mcp_server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        max_sessions=limits.max_sessions,
        session_idle_timeout=limits.idle_timeout,
        # Host and Origin are checked in front of every path by HostOriginCheck (shared with A2A).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app: App = MetricsRoute(mcp_app, server)
    if token:
        app = BearerTokenGate(app, token, realm="pal-mcp")
    return OperatorEndpoints(HostOriginCheck.wrap(app, host), server, protocol="mcp")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionLimits:
    """How many MCP sessions an HTTP server keeps, and for how long an idle one lives."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    """Sessions open at once; a client that would open one more gets an error until one closes or expires."""
    idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    """Seconds a session may go without a request before the server closes it (a client that comes back
    later opens a new one)."""


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
    from runtime.serving.operations import metrics_available

    check_exposure(host, token, allow_unauthenticated)
    if server.metrics is None and metrics_available():
        server.enable_metrics()
    app = http_app(server, host=host, token=token, limits=limits)
    async with serving_app(app, host=host, port=port, path=MCP_PATH, name="MCP HTTP server") as endpoint:
        yield endpoint


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
    if allow_unauthenticated:
        warn_if_exposed(host, token)
    with stopping_on_signals(server) if handle_signals else nothing():
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
            await serve_until_stopped(server, endpoint)
