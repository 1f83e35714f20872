"""Who may use the studio: the MCP server's Host/Origin checks, then an access token.

Host and Origin are checked by the MCP SDK's own `TransportSecurityMiddleware`, with the settings the SDK
gives an MCP server bound to the same host (`mcp_security_settings`): on a loopback address only loopback
`Host` and `Origin` headers pass (421, 403), so a web page elsewhere cannot reach the studio through DNS
rebinding. The settings are taken from the SDK, not written here, so the two servers cannot drift apart.

Then the token, as Jupyter does it: the URL `pal studio` prints carries `?token=...`; the first request with
it gets an HttpOnly, SameSite=Strict cookie (named after the token, so two studios do not clash) and is
redirected to the same URL without the token. Later pages, the script, the style and the live updates send
the cookie. A request that changes something (POST: answer, resume, fork) must also carry the token in an
`Authorization: Bearer` header, which the page's script takes from the page: a page of another local port
could make the browser send the cookie (cookies are per host, not per port), but cannot read the token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_BYTES = 24
"""Random bytes of a generated token (32 URL-safe characters)."""
TOKEN_ENV = "PAL_STUDIO_TOKEN"
"""The environment variable that fixes the token (else a new one each start)."""
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Hosts only this machine can reach."""
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)
"""Sent with every response: the page loads only what the studio serves, and nothing frames it."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def mcp_security_settings(host: str) -> Any:
    """The Host/Origin settings the MCP SDK gives an MCP server bound to `host` (None off loopback, where
    the SDK checks neither and the token is the only gate)."""
    from mcp.server.lowlevel import Server

    probe = Server("pal-studio")
    probe.streamable_http_app(host=host)
    return probe.session_manager.security_settings


class StudioGate:
    """ASGI middleware in front of the studio: Host/Origin, then the token; security headers on every answer."""

    def __init__(self, app: App, *, token: str, host: str) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        if not token:
            raise ValueError("the studio's access token must not be empty")
        self.app = app
        self._token = token.encode()
        self.cookie = "pal_studio_" + hashlib.sha256(self._token).hexdigest()[:12]
        """The cookie that carries the token after the first visit."""
        self._checks = TransportSecurityMiddleware(mcp_security_settings(host))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request

        request = Request(scope)
        post = request.method not in ("GET", "HEAD")
        refused = await self._checks.validate_request(request, is_post=post)
        if refused is not None:
            await _plain(send, refused.status_code, bytes(refused.body), "text/plain; charset=utf-8")
            return
        bearer = _bearer(request.headers.get("authorization", ""))
        if post:
            if bearer is None or not self._matches(bearer):
                await _refuse(send, scope, "this action needs the studio's token in `Authorization: Bearer`")
                return
        elif not (self._matches(request.cookies.get(self.cookie)) or (bearer and self._matches(bearer))):
            given = request.query_params.get("token")
            if given is not None and self._matches(given):
                await self._admit(send, scope)
                return
            await _refuse(send, scope, "open the URL `pal studio` printed: it carries the access token")
            return
        await self.app(scope, receive, _with_headers(send))

    def _matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self._token)

    async def _admit(self, send: Send, scope: Scope) -> None:
        """The first visit: set the cookie and send the browser to the URL without the token."""
        query = [
            (name, value)
            for name, value in parse_qsl(scope.get("query_string", b"").decode())
            if name != "token"
        ]
        location = scope.get("path", "/") + (f"?{urlencode(query)}" if query else "")
        cookie = f"{self.cookie}={self._token.decode()}; Path=/; HttpOnly; SameSite=Strict"
        headers = [
            (b"location", location.encode()),
            (b"set-cookie", cookie.encode()),
            (b"cache-control", b"no-store"),
        ]
        await send(
            {"type": "http.response.start", "status": 303, "headers": [*headers, (b"content-length", b"0")]}
        )
        await send({"type": "http.response.body", "body": b""})


def _bearer(header: str) -> str | None:
    scheme, _, credentials = header.strip().partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def _with_headers(send: Send) -> Send:
    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return sending


async def _refuse(send: Send, scope: Scope, why: str) -> None:
    path = str(scope.get("path", ""))
    if path.startswith("/api/") or scope.get("method") not in ("GET", "HEAD"):
        body = json.dumps({"error": f"unauthorized: {why}"}).encode()
        await _plain(send, 401, body, "application/json")
        return
    page = (
        "<!doctype html><html lang=en><meta charset=utf-8><title>pal studio: token needed</title>"
        f"<h1>pal studio</h1><p>This page needs the studio's access token: {why}.</p></html>"
    )
    await _plain(send, 401, page.encode(), "text/html; charset=utf-8")


async def _plain(send: Send, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
