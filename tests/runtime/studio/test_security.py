"""Who may use the studio: the MCP server's Host/Origin checks (the SDK's own, with the settings it gives an
MCP server on the same host), the token in the printed URL turned into a cookie, and the token in a header
for every action; security headers on every answer."""

from __future__ import annotations

import pytest

from runtime.store import open_store
from runtime.studio import Studio
from runtime.studio.security import SECURITY_HEADERS, mcp_security_settings
from tests.runtime.studio.threads import AUTH, TOKEN, client, desk_thread

pytestmark = pytest.mark.anyio


async def test_the_token_in_the_url_becomes_a_cookie() -> None:
    async with open_store("memory://") as store:
        studio = Studio(store, token=TOKEN)
        async with client(studio) as http:
            refused = await http.get("/")
            assert refused.status_code == 401 and "access token" in refused.text
            assert (
                (await http.get("/api/events", params={"id": "x"})).json()["error"].startswith("unauthorized")
            )
            wrong = await http.get("/", params={"token": TOKEN + "x"})
            assert wrong.status_code == 401
            admitted = await http.get("/thread", params={"token": TOKEN, "id": "d1"})
            assert admitted.status_code == 303
            assert admitted.headers["location"] == "/thread?id=d1"  # the token leaves the address bar
            cookie = admitted.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and f"={TOKEN};" in cookie
            name = cookie.split("=", 1)[0]
            assert studio.asgi.cookie == name
            http.cookies.set(name, TOKEN)
            assert (await http.get("/")).status_code == 200
            style = await http.get("/static/studio.css")
            assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
            # An action needs the token in a header: the cookie alone (which a page of another local port
            # could make the browser send) is not enough.
            await desk_thread(store, "d1")
            forked = await http.post("/api/fork", params={"id": "d1"}, json={"at": 1})
            assert forked.status_code == 401 and "Authorization: Bearer" in forked.json()["error"]
            allowed = await http.post("/api/fork", params={"id": "d1"}, json={"at": 1}, headers=AUTH)
            assert allowed.status_code == 200


async def test_host_and_origin_are_the_mcp_servers_checks() -> None:
    settings = mcp_security_settings("127.0.0.1")
    assert settings.enable_dns_rebinding_protection
    assert "127.0.0.1:*" in settings.allowed_hosts and "http://localhost:*" in settings.allowed_origins
    assert mcp_security_settings("0.0.0.0") is None  # as for the MCP server: off loopback, the token alone
    async with open_store("memory://") as store:
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            rebound = await http.get("/", headers={"host": "attacker.example:8760"})
            assert rebound.status_code == 421
            foreign = await http.get("/", headers={"origin": "http://attacker.example"})
            assert foreign.status_code == 403
            local = await http.get("/", headers={"host": "localhost:8760", "origin": "http://localhost:8760"})
            assert local.status_code == 200
            form = await http.post(
                "/api/resume",
                params={"id": "x"},
                content=b"a=b",
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert form.status_code == 400  # not JSON: a plain form of another page cannot post here


async def test_every_answer_carries_the_security_headers() -> None:
    async with open_store("memory://") as store:
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            for response in (await http.get("/"), await http.get("/thread", params={"id": "none"})):
                for name, value in SECURITY_HEADERS:
                    assert response.headers[name.decode()] == value.decode()
            assert "script-src 'self'" in response.headers["content-security-policy"]
