"""The HTTP pieces every served program shares (runtime.serving.http): the Host/Origin check against DNS
rebinding, the bearer-token gate and the exposure rule, on a plain ASGI app in memory."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from runtime.serving.http import BearerTokenGate, ExposureRefused, HostOriginCheck, check_exposure

pytestmark = pytest.mark.anyio


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _status(app: Any, headers: dict[str, str]) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
    }
    with anyio.fail_after(10):
        await app(scope, receive, send)
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "127.0.0.1:8000"}, 200),
        ({"Host": "localhost:9999", "Origin": "http://localhost:3000"}, 200),
        ({"Host": "[::1]:80"}, 200),
        ({"Host": "127.0.0.1.evil.example:80"}, 421),
        ({"Host": "evil.example"}, 421),
        ({}, 421),
        ({"Host": "127.0.0.1:8000", "Origin": "http://evil.example"}, 403),
        ({"Host": "127.0.0.1:8000", "Origin": "https://127.0.0.1:8000"}, 403),
    ],
)
async def test_a_loopback_server_accepts_only_loopback_host_and_origin(
    headers: dict[str, str], status: int
) -> None:
    app = HostOriginCheck.wrap(_ok, "127.0.0.1")
    assert (await _status(app, headers))[0] == status


async def test_a_server_on_another_address_leaves_the_headers_to_its_token() -> None:
    assert HostOriginCheck.wrap(_ok, "0.0.0.0") is _ok


async def test_the_token_gate_takes_the_scheme_in_any_case_and_says_why_it_refuses() -> None:
    gate = BearerTokenGate(_ok, "s3cret", realm="pal-a2a")
    assert (await _status(gate, {"Authorization": "bearer s3cret"}))[0] == 200
    status, body = await _status(gate, {"Authorization": "Bearer nope"})
    assert status == 401 and b"the bearer token is wrong" in body
    status, body = await _status(gate, {})
    assert status == 401 and b"no bearer token was given" in body


def test_an_address_others_reach_needs_a_token_or_consent() -> None:
    check_exposure("127.0.0.1", None, False, token_env="T")
    check_exposure("0.0.0.0", "t", False, token_env="T")
    check_exposure("0.0.0.0", None, True, token_env="T")
    with pytest.raises(ExposureRefused, match=r"give --token \(or \$T\), or --allow-unauthenticated"):
        check_exposure("0.0.0.0", None, False, token_env="T")
