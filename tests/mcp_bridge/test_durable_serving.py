"""`pal mcp serve --store`: every call recorded as a thread (issue 17). A call continues the thread its
`_meta` names and the result names its thread; a `state: shared` program keeps all calls in one thread;
two server processes on one Postgres store serve calls of one program concurrently with nothing lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.server import THREAD_META, PlaybookServer
from pal_core.parser import parse
from runtime.session.view import read_state
from runtime.store import ThreadStatus, open_store
from tests.mcp_bridge.helpers import PAL, REPO, text_of
from tests.runtime.store.postgres_cluster import PostgresCluster, running_cluster

pytestmark = pytest.mark.anyio

TALLY = """# Tally
Adds numbers to a running total.

```python
@playbook(public=True)
async def Add(n: int) -> int:
    \"\"\"Adds n to the agent's total and returns the total.\"\"\"
    variables = agent.state.variables
    variables["total"] = variables.get("total", 0) + n
    return variables["total"]
```
"""
SHARED = "---\nmcp:\n  state: shared\n---\n" + TALLY


async def test_a_call_continues_the_thread_its_meta_names(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    served = PlaybookServer(parse(TALLY, file="tally.pal"), store=store)
    async with served, Client(served.mcp_server) as client:
        with anyio.fail_after(30):
            first = await client.call_tool("Add", {"n": 2}, meta={THREAD_META: "cart-1"})
            second = await client.call_tool("Add", {"n": 3}, meta={THREAD_META: "cart-1"})
            alone = await client.call_tool("Add", {"n": 7})
            other = await client.call_tool("Add", {"n": 7})
    assert [first.structured_content, second.structured_content] == [{"result": 2}, {"result": 5}]
    assert second.meta and second.meta[THREAD_META] == "cart-1"
    # Without a thread, each call is a thread of its own (fresh state), named in the result.
    assert alone.structured_content == other.structured_content == {"result": 7}
    assert alone.meta and other.meta and alone.meta[THREAD_META] != other.meta[THREAD_META]
    async with open_store(store) as opened:
        threads = {thread.id: thread for thread in await opened.list_threads()}
        assert set(threads) == {"cart-1", alone.meta[THREAD_META], other.meta[THREAD_META]}
        assert all(thread.status is ThreadStatus.FINISHED for thread in threads.values())
        assert (await read_state(opened, "cart-1")).result == 5


async def test_a_shared_program_keeps_every_call_in_one_thread(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    program = parse(SHARED, file="tally.pal")
    served = PlaybookServer(program, store=store, name="tally")
    async with served, Client(served.mcp_server) as client:
        with anyio.fail_after(30):
            for n in (1, 2, 3):
                result = await client.call_tool("Add", {"n": n})
    assert result.structured_content == {"result": 6}
    assert result.meta and result.meta[THREAD_META] == "mcp-tally"
    # A server started later (another process) goes on from the thread's log.
    served = PlaybookServer(program, store=store, name="tally")
    async with served, Client(served.mcp_server) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("Add", {"n": 4})
    assert result.structured_content == {"result": 10}


async def test_a_thread_named_without_a_store_is_a_tool_error() -> None:
    served = PlaybookServer(parse(TALLY, file="tally.pal"))
    async with served, Client(served.mcp_server) as client:
        refused = await client.call_tool("Add", {"n": 1}, meta={THREAD_META: "t"})
    assert refused.is_error and "keeps no threads (start it with --store)" in text_of(refused)


# --- two server processes, one Postgres store ------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresCluster]:
    with running_cluster() as cluster:
        yield cluster


@asynccontextmanager
async def _server(program: Path, store: str) -> AsyncIterator[str]:
    """`pal mcp serve program --transport http --port 0 --store store` in a process of its own; its URL."""
    command = [*PAL, "mcp", "serve", str(program), "--transport", "http", "--port", "0", "--store", store]
    async with await anyio.open_process(command, cwd=REPO) as process:
        try:
            yield await _url(process)
        finally:
            process.terminate()
            await process.wait()


async def _url(process: Process) -> str:
    assert process.stderr is not None
    buffered = ""
    async for chunk in TextReceiveStream(process.stderr):
        buffered += chunk
        for line in buffered.splitlines():
            if line.startswith("pal mcp: serving") and " at " in line:
                return line.split(" at ", 1)[1].split(": ", 1)[0]
    raise AssertionError(f"the server ended without listening; it wrote:\n{buffered}")


@pytest.mark.slow
async def test_two_servers_on_one_postgres_store_lose_nothing(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    fresh = tmp_path / "tally.pal"
    fresh.write_text(TALLY, encoding="utf-8")
    shared = tmp_path / "shared.pal"
    shared.write_text(SHARED, encoding="utf-8")
    store = postgres.url()
    per_server = 10
    with anyio.fail_after(240):
        async with (
            _server(fresh, store) as url_a,
            _server(fresh, store) as url_b,
            _server(shared, store) as shared_a,
            _server(shared, store) as shared_b,
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(url_a, http_client=http)) as client_a,
            Client(streamable_http_client(url_b, http_client=http)) as client_b,
            Client(streamable_http_client(shared_a, http_client=http)) as shared_client_a,
            Client(streamable_http_client(shared_b, http_client=http)) as shared_client_b,
        ):
            # Fresh calls on both servers at once: a thread each.
            fresh_results = await asyncio.gather(
                *(
                    client.call_tool("Add", {"n": n})
                    for n in range(per_server)
                    for client in (client_a, client_b)
                )
            )
            # A client's thread, continued by whichever server its calls reach, concurrently.
            cart = await asyncio.gather(
                *(
                    client.call_tool("Add", {"n": 1}, meta={THREAD_META: "cart"})
                    for _ in range(per_server)
                    for client in (client_a, client_b)
                )
            )
            # A shared program's one thread, served by two processes at once.
            counted = await asyncio.gather(
                *(
                    client.call_tool("Add", {"n": 1})
                    for _ in range(per_server)
                    for client in (shared_client_a, shared_client_b)
                )
            )
    assert not any(result.is_error for result in (*fresh_results, *cart, *counted)), [
        text_of(result) for result in (*fresh_results, *cart, *counted) if result.is_error
    ]
    calls = 2 * per_server
    # Each call saw the total of the calls before it, whichever server made them: nothing lost or doubled.
    assert sorted(result.structured_content["result"] for result in cart) == list(range(1, calls + 1))
    assert sorted(result.structured_content["result"] for result in counted) == list(range(1, calls + 1))
    async with open_store(store) as opened:
        fresh_threads = {result.meta[THREAD_META] for result in fresh_results}
        assert len(fresh_threads) == calls
        for thread in [*fresh_threads, "cart", "mcp-shared"]:
            record = await opened.get_thread(thread)
            assert record.status is ThreadStatus.FINISHED, thread
        cart_entries = await opened.read_entries("cart")
        assert sum(entry.kind == "result" for entry in cart_entries) == calls
        assert sum(entry.kind == "input" for entry in cart_entries) == calls
