"""Serving a program over HTTP, whatever the protocol: the pieces the MCP and A2A servers share.

- `check_exposure`: an address other machines can reach is refused without a token, unless the operator
  says the network is trusted (`--allow-unauthenticated`).
- `BearerTokenGate`: with a token, every request but the probes must carry `Authorization: Bearer <token>`
  (the scheme in any case, compared in constant time); others get 401 with a JSON-RPC error body.
- `HostOriginCheck`: on a loopback address, only loopback `Host` and `Origin` headers are accepted (421 and
  403 otherwise), so a web page in a local browser cannot reach the server by DNS rebinding.
- `serving_app`: the app on a socket bound before uvicorn starts (port 0 picks a free one, so the URL is
  known at once), stopped gracefully when the block ends.
- `stopping_on_signals`: SIGINT and SIGTERM ask the server to stop, and a process still running a few
  seconds later (a Python playbook blocking the event loop) exits anyway.

Plain ASGI: uvicorn is imported only by `serving_app`.
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
from typing import TYPE_CHECKING, Any

from runtime.sockets import base_url, listening_socket

if TYPE_CHECKING:
    from runtime.serving.operations import Served

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts only this machine can reach."""
LOOPBACK_HOST_HEADERS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
"""The `Host` headers a loopback server accepts (`*`: any port)."""
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
"""The `Origin` headers a loopback server accepts (a request without one is accepted)."""
INVALID_REQUEST = -32600
"""The JSON-RPC error code of a refused request."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop a server gracefully."""
GRACEFUL_SHUTDOWN = 2.0
"""Seconds open HTTP requests get to finish when the server stops (calls in progress have been ended
already: what is left are idle streams)."""
FORCE_EXIT_AFTER = 4.0
"""Seconds after SIGINT/SIGTERM after which a `pal ... serve` process exits even if its calls did not stop."""
STOP_REASON = "the server is shutting down"
"""What a call stopped by SIGINT/SIGTERM says."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


# --- exposure and authentication ---------------------------------------------------------------------------


class ExposureRefused(ValueError):
    """Serving on an address other machines can reach, with no token and no explicit consent."""


def check_exposure(host: str, token: str | None, allow_unauthenticated: bool, *, token_env: str) -> None:
    """Refuse to serve a host other machines can reach without a token, unless told to; `token_env` is the
    environment variable the command reads the token from."""
    if token is None and host not in LOOPBACK_HOSTS and not allow_unauthenticated:
        raise ExposureRefused(
            f"serving on {host} without a token would let anyone who can reach that address call every "
            f"playbook it serves; give --token (or ${token_env}), or --allow-unauthenticated if only trusted "
            "machines can reach it"
        )


def warn_if_exposed(host: str, token: str | None) -> None:
    """Log a warning when a host other machines can reach is served without a token (allowed explicitly)."""
    if token is None and host not in LOOPBACK_HOSTS:
        logger.warning(
            "serving on %s without a token (--allow-unauthenticated): anyone who can reach this address "
            "can call every playbook it serves",
            host,
        )


class BearerTokenGate:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` (the scheme in any case) get 401."""

    def __init__(self, app: App, token: str, *, realm: str = "pal") -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self.app = app
        self._expected = token.encode()
        self._realm = realm.encode()

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
        # A JSON-RPC error body: clients show its message (a bare 401 reaches users as "error response").
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
                    (b"www-authenticate", b'Bearer realm="' + self._realm + b'"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class HostOriginCheck:
    """ASGI middleware against DNS rebinding: only the `Host` headers of `hosts` are accepted (421 "Invalid
    Host header" otherwise), and an `Origin` header, when there is one, must be one of `origins` (403
    "Invalid Origin header"). A pattern ending in `:*` accepts any port."""

    def __init__(self, app: App, *, hosts: tuple[str, ...], origins: tuple[str, ...]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins

    @classmethod
    def wrap(cls, app: App, host: str) -> App:
        """`app` checked as a server bound to `host` needs: loopback addresses accept only loopback Host and
        Origin headers; another address (reachable by name from elsewhere) is left to its token."""
        if host not in LOOPBACK_HOSTS:
            return app
        return cls(app, hosts=LOOPBACK_HOST_HEADERS, origins=LOOPBACK_ORIGINS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = None
        for name, value in scope.get("headers") or ():
            lowered = name.lower()
            if lowered == b"host":
                host = value.decode("latin-1")
            elif lowered == b"origin":
                origin = value.decode("latin-1")
        if not _allowed(host, self.hosts):
            logger.warning("refused a request with Host header %r (DNS rebinding protection)", host)
            await _plain(send, 421, b"Invalid Host header")
            return
        if origin and not _allowed(origin, self.origins):
            logger.warning("refused a request with Origin header %r (DNS rebinding protection)", origin)
            await _plain(send, 403, b"Invalid Origin header")
            return
        await self.app(scope, receive, send)


def _allowed(value: str | None, patterns: tuple[str, ...]) -> bool:
    if not value:
        return False
    for pattern in patterns:
        if value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1])):
            return True
    return False


async def _plain(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- serving -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpEndpoint:
    """A running HTTP server."""

    url: str
    """The protocol's endpoint: `http://127.0.0.1:PORT/mcp`, `http://127.0.0.1:PORT/`."""
    task: asyncio.Task[None]
    """The task serving it; it ends when the server stops (Ctrl-C, or leaving the serving block)."""


def socket_url(sock: socket.socket, path: str) -> str:
    """`http://HOST:PORT<path>` of a bound socket (an IPv6 host in brackets)."""
    return f"{base_url(sock)}{path}"


@asynccontextmanager
async def serving_app(
    app: App | Callable[[str], App], *, host: str, port: int, path: str, name: str, for_url: bool = False
) -> AsyncIterator[HttpEndpoint]:
    """Serve the ASGI `app` on (host, port) while the block runs (port 0: a free port); the endpoint's URL
    ends with `path`. With `for_url`, `app` is called with that URL (known once the socket is bound) to
    make the app (an A2A agent card names its URL). Leaving the block stops the server gracefully (open
    requests get GRACEFUL_SHUTDOWN seconds)."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            # Signals belong to the program embedding the server (`stopping_on_signals`).
            yield

    sock = listening_socket(host, port)
    url = socket_url(sock, path)
    try:
        served: App = app(url) if for_url else app  # type: ignore[call-arg, assignment]
    except BaseException:
        sock.close()
        raise
    config = uvicorn.Config(
        served,
        log_level="warning",
        log_config=None,  # the process's logging (runtime.serving.logs) decides where lines go
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=int(GRACEFUL_SHUTDOWN),
    )
    http = QuietServer(config)
    task = asyncio.create_task(http.serve(sockets=[sock]), name=name)
    try:
        yield HttpEndpoint(url=url, task=task)
    finally:
        http.should_exit = True
        try:
            async with asyncio.timeout(GRACEFUL_SHUTDOWN * 2):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        sock.close()


async def serve_until_stopped(server: Served, endpoint: HttpEndpoint) -> None:
    """Return when the server is asked to stop (`request_stop`) or its HTTP task ends."""
    stopping = asyncio.create_task(server.stopped())
    try:
        await asyncio.wait({stopping, endpoint.task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()


# --- signals -----------------------------------------------------------------------------------------------


@contextmanager
def stopping_on_signals(
    server: Served, *, force_exit_after: float | None = None, command: str = "pal"
) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM call `server.request_stop()` in the event loop, even
    when the loop is busy (the handler runs between Python bytecodes, not as a loop callback). With
    `force_exit_after`, a process still running that many seconds after the signal exits at once (status
    1), and a second signal exits at once: a Python playbook stuck in a blocking call cannot keep it alive."""
    loop = asyncio.get_running_loop()
    received: list[int] = []
    timers: list[threading.Timer] = []

    def on_signal(number: int, frame: FrameType | None) -> None:
        if received and force_exit_after is not None:
            _force_exit(command, f"second signal {signal.Signals(number).name}")
        received.append(number)
        loop.call_soon_threadsafe(server.request_stop, f"{STOP_REASON} ({signal.Signals(number).name})")
        if force_exit_after is not None and not timers:
            timer = threading.Timer(
                force_exit_after,
                _force_exit,
                (command, f"the calls did not stop within {force_exit_after:g} s"),
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


def _force_exit(command: str, why: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"{command}: exiting now: {why}\n".encode())
    os._exit(1)


@contextmanager
def nothing() -> Iterator[None]:
    """A block that does nothing around it (signals left alone)."""
    yield
