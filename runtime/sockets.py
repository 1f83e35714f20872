"""Listening sockets for the servers pal-bridge runs (`pal mcp serve --transport http`, `pal studio`): bound
before the server starts, so its URL is known (port 0 picks a free port) and a client may connect at once."""

from __future__ import annotations

import socket


def listening_socket(host: str, port: int, *, backlog: int = 1024) -> socket.socket:
    """A non-blocking TCP socket listening on `host:port` (IPv4 or IPv6, as the host resolves)."""
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, protocol)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def base_url(sock: socket.socket) -> str:
    """`http://HOST:PORT` of a listening socket (an IPv6 host in brackets)."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
