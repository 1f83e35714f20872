"""What an operator of `pal mcp serve --transport http` has (issue 21): /healthz, /readyz (the store
answers), Prometheus metrics, an access and a call log (text or JSON lines), a cap on MCP sessions, no
unauthenticated exposure beyond loopback, and a clear error for a `_meta` thread that is not an id."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.host import THREAD_META
from mcp_bridge.logs import configure
from mcp_bridge.server import PlaybookServer
from mcp_bridge.transports import ExposureRefused, SessionLimits, serving_http
from pal_core.parser import parse, parse_file
from runtime.store import StoreUnavailable
from runtime.store.memory import MemoryStore
from tests.mcp_bridge.helpers import MCP_FIXTURES, text_of

pytestmark = pytest.mark.anyio

CALCULATOR = parse_file(MCP_FIXTURES / "calculator.pal")
TALLY = parse(
    '''# Tally
```python
@playbook(public=True)
async def Add(n: int) -> int:
    """Adds n to the total."""
    variables = agent.state.variables
    variables["total"] = variables.get("total", 0) + n
    return variables["total"]
```
''',
    file="tally.pal",
)


class FlakyStore(MemoryStore):
    """A memory store whose reads fail while `down` is set (a database that went away)."""

    down = False

    async def _get(self, thread_id: str) -> Any:
        if self.down:
            raise StoreUnavailable("the database went away (a test's flaky store)")
        return await super()._get(thread_id)


@asynccontextmanager
async def _serving(server: PlaybookServer, **options: Any) -> AsyncIterator[tuple[str, httpx2.AsyncClient]]:
    async with server, serving_http(server, port=0, **options) as endpoint, httpx2.AsyncClient() as http:
        yield endpoint.url.removesuffix("/mcp"), http


async def test_health_and_readiness_follow_the_store() -> None:
    store = FlakyStore()
    await store.open()
    async with _serving(PlaybookServer(TALLY, store=store)) as (base, http):
        with anyio.fail_after(30):
            assert (await http.get(f"{base}/healthz")).json() == {"status": "ok"}
            ready = await http.get(f"{base}/readyz")
            assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
            store.down = True
            down = await http.get(f"{base}/readyz")
            assert down.status_code == 503
            assert "the store does not answer: the database went away" in down.json()["reason"]
            assert (await http.get(f"{base}/healthz")).status_code == 200  # alive, just not ready
            store.down = False
            assert (await http.get(f"{base}/readyz")).status_code == 200
    await store.close()


async def test_metrics_count_calls_failures_latency_and_threads() -> None:
    async with (
        open_memory() as store,
        _serving(PlaybookServer(TALLY, store=store)) as (base, http),
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        with anyio.fail_after(30):
            await client.call_tool("Add", {"n": 1}, meta={THREAD_META: "cart"})
            await client.call_tool("Add", {"n": 2}, meta={THREAD_META: "cart"})
            refused = await client.call_tool("Add", {"n": "two"})
            metrics = (await http.get(f"{base}/metrics")).text
    assert refused.is_error
    assert 'pal_mcp_calls_total{outcome="ok",tool="Add"} 2.0' in metrics
    assert 'pal_mcp_calls_total{outcome="error",tool="Add"} 1.0' in metrics
    assert 'pal_mcp_call_failures_total{kind="InvalidArguments",tool="Add"} 1.0' in metrics
    assert 'pal_mcp_call_seconds_count{tool="Add"} 3.0' in metrics
    assert 'pal_threads{status="finished"} 1.0' in metrics  # "cart" (the refused call made no thread)
    assert "pal_mcp_calls_in_progress 0.0" in metrics


async def test_a_token_guards_the_metrics_but_not_the_probes() -> None:
    async with _serving(PlaybookServer(CALCULATOR), token="s3cret") as (base, http):
        with anyio.fail_after(30):
            assert (await http.get(f"{base}/healthz")).status_code == 200
            assert (await http.get(f"{base}/readyz")).status_code == 200
            assert (await http.get(f"{base}/metrics")).status_code == 401
            allowed = await http.get(f"{base}/metrics", headers={"Authorization": "Bearer s3cret"})
            assert allowed.status_code == 200 and "pal_mcp_calls" in allowed.text


async def test_the_access_and_call_logs_as_json_lines() -> None:
    stream = io.StringIO()
    configure("info", "json", stream=stream)
    try:
        async with _serving(PlaybookServer(CALCULATOR, log_calls=True)) as (base, http):
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                with anyio.fail_after(30):
                    await client.call_tool("Add", {"a": 1, "b": 2})
                    await client.call_tool("Divide", {"a": 1, "b": 0})
            await http.get(f"{base}/healthz")
    finally:
        logging.getLogger().handlers.clear()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    calls = [line for line in lines if line["logger"] == "mcp_bridge.calls"]
    assert [(c["tool"], c["outcome"], c["level"]) for c in calls] == [
        ("Add", "ok", "info"),
        ("Divide", "error", "warning"),  # a failure shows at the default level
    ]
    assert calls[1]["error"] == "PlaybookFailed" and calls[0]["duration_ms"] >= 0
    access = [line for line in lines if line["logger"] == "mcp_bridge.access"]
    assert {"method": "GET", "path": "/healthz", "status": 200}.items() <= access[-1].items()
    assert any(line["method"] == "POST" and line["path"] == "/mcp" for line in access)


async def test_sessions_are_capped() -> None:
    server = PlaybookServer(CALCULATOR)
    opening = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    async with _serving(server, limits=SessionLimits(max_sessions=2, idle_timeout=60)) as (base, http):
        with anyio.fail_after(30):
            answers = [await http.post(f"{base}/mcp", json=opening, headers=accept) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 503]
    assert all(answer.headers.get("mcp-session-id") for answer in answers[:2])
    assert "Too many open sessions" in answers[2].text


async def test_serving_beyond_loopback_needs_a_token_or_consent() -> None:
    async with PlaybookServer(CALCULATOR) as served:
        with pytest.raises(ExposureRefused, match=r"give --token .* or --allow-unauthenticated"):
            async with serving_http(served, host="0.0.0.0", port=0):
                pass
        async with serving_http(served, host="0.0.0.0", port=0, token="t") as endpoint:
            assert endpoint.url.startswith("http://0.0.0.0:")
        async with serving_http(served, host="0.0.0.0", port=0, allow_unauthenticated=True):
            pass


async def test_a_meta_thread_that_is_not_an_id_is_a_tool_error() -> None:
    async with open_memory() as store, PlaybookServer(TALLY, store=store) as served:
        async with Client(served.mcp_server) as client:
            with anyio.fail_after(30):
                number = await client.call_tool("Add", {"n": 1}, meta={THREAD_META: 7})
                spaced = await client.call_tool("Add", {"n": 1}, meta={THREAD_META: "has space"})
        assert await store.list_threads() == []  # neither started a thread
    assert number.is_error and "`_meta` 'pal/thread' must be a thread id (a string), not int 7" in text_of(
        number
    )
    assert spaced.is_error and "'has space' must be a string of 1 to 200 characters" in text_of(spaced)


@asynccontextmanager
async def open_memory() -> AsyncIterator[MemoryStore]:
    store = MemoryStore()
    await store.open()
    try:
        yield store
    finally:
        await store.close()
