"""Serving a Studio over HTTP with uvicorn: the socket is bound first (port 0 picks a free one), so the URL
is known before the first request; leaving `serving_studio` ends the live updates at once, stops the runs
the studio started (each records that it was interrupted) and closes the server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from urllib.parse import quote

from runtime.sockets import base_url, listening_socket

from .app import Studio

DEFAULT_HOST = "127.0.0.1"
"""The studio binds the loopback address unless told otherwise."""
DEFAULT_PORT = 8760
"""The port when none is given."""
SHUTDOWN_WAIT = 5.0
"""Seconds open requests get to finish when the server stops."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StudioEndpoint:
    """A studio being served."""

    base: str
    """`http://127.0.0.1:PORT`."""
    url: str
    """The URL to open: the base with the access token (`/?token=...`)."""
    task: asyncio.Task[None]
    """The task serving it."""


@asynccontextmanager
async def serving_studio(
    studio: Studio, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> AsyncIterator[StudioEndpoint]:
    """Serve the studio while the block runs."""
    import uvicorn

    class QuietServer(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # signals belong to the program serving the studio (`pal studio` handles Ctrl-C)

    sock = listening_socket(host, port, backlog=128)
    base = base_url(sock)
    config = uvicorn.Config(
        studio.asgi,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=int(SHUTDOWN_WAIT),
    )
    server = QuietServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="pal studio")
    try:
        yield StudioEndpoint(base=base, url=f"{base}/?token={quote(studio.token)}", task=task)
    finally:
        await studio.close()
        server.should_exit = True
        try:
            async with asyncio.timeout(SHUTDOWN_WAIT * 2):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        sock.close()
