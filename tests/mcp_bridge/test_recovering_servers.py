"""Servers that recover (issue 21): a server sees a thread's new state when another process changed it (it
reads the store before refusing), a failed call never ruins a served thread, and of two servers on one
Postgres store, the survivor of a kill -9 takes a thread over once the dead one's lease lapses and answers
within the lease plus one call (not after the 300 s a call may wait)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.host import THREAD_META
from mcp_bridge.server import PlaybookServer
from runtime.session import CallSession, answer_thread
from runtime.store import open_store
from tests.mcp_bridge.helpers import PAL, REPO, text_of
from tests.mcp_bridge.test_durable_serving import postgres  # noqa: F401 - the module's Postgres fixture
from tests.runtime.session.programs import COUNTER
from tests.runtime.store.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.anyio


async def test_a_server_sees_a_wait_answered_by_another_process(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with PlaybookServer(COUNTER, store=store) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(60):
            waiting = await client.call_tool("Ask", {}, meta={THREAD_META: "t"})
            assert waiting.is_error and "waits for user input" in text_of(waiting)
            refused = await client.call_tool("Reset", {}, meta={THREAD_META: "t"})
            assert refused.is_error and "unfinished and waits for the user" in text_of(refused)
            # `pal resume t --message Bob` from another process: answered and finished there.
            async with open_store(store) as other:
                await answer_thread(other, "t", "Bob")
                async with await CallSession.open(COUNTER, store=other, thread="t") as session:
                    assert (await session.resume()).value == 1
            # The server's own run of t is stale now: it reads the thread again instead of refusing.
            reset = await client.call_tool("Reset", {}, meta={THREAD_META: "t"})
            assert not reset.is_error, text_of(reset)
            assert reset.structured_content == {"result": 0}


async def test_a_failed_call_does_not_ruin_a_served_thread(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with PlaybookServer(COUNTER, store=store) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(60):
            boom = await client.call_tool("Boom", {}, meta={THREAD_META: "t"})
            noted = await client.call_tool("Note", {"label": "x"}, meta={THREAD_META: "t"})
    assert boom.is_error and "the fuse was lit" in text_of(boom)
    assert not noted.is_error and noted.structured_content == {"result": "X"}, text_of(noted)


SLOW_TALLY = """# Tally
Adds numbers to a running total; the first call with `hold` holds on until its process is killed.

```python
import asyncio
import os
import sys
from pathlib import Path


@playbook(public=True)
async def Add(n: int, hold: bool = False) -> int:
    \"\"\"Adds n to the total and returns the total.\"\"\"
    variables = agent.state.variables
    variables["total"] = variables.get("total", 0) + n
    marker = Path(os.environ["PAL_TEST_HOLD_MARKER"])
    if hold and not marker.exists():
        marker.write_text("held")
        print("HOLDING", file=sys.stderr, flush=True)
        await asyncio.sleep(3600)  # until kill -9
    return variables["total"]
```
"""
LEASE = 4.0


async def _serve(program: Path, store: str, env: dict[str, str]) -> tuple[Process, str]:
    command = [*PAL, "mcp", "serve", str(program), "--transport", "http", "--port", "0", "--store", store]
    command += ["--lease", str(LEASE), "--log-level", "info"]
    process = await anyio.open_process(command, cwd=REPO, env=env)
    assert process.stderr is not None
    buffered = ""
    async for chunk in TextReceiveStream(process.stderr):
        buffered += chunk
        for line in buffered.splitlines():
            if line.startswith("pal mcp: serving") and " at " in line:
                return process, line.split(" at ", 1)[1].split(": ", 1)[0]
    raise AssertionError(f"the server ended without listening; it wrote:\n{buffered}")


async def _read_until(process: Process, marker: str) -> str:
    assert process.stderr is not None
    seen = ""
    async for chunk in TextReceiveStream(process.stderr):
        seen += chunk
        if marker in seen:
            return seen
    raise AssertionError(f"the server ended before writing {marker!r}:\n{seen}")


@pytest.mark.slow
async def test_the_survivor_takes_a_dead_servers_thread_over_within_its_lease(
    tmp_path: Path,
    postgres: PostgresCluster,  # noqa: F811
) -> None:
    program = tmp_path / "tally.pal"
    program.write_text(SLOW_TALLY, encoding="utf-8")
    env = {**os.environ, "PAL_TEST_HOLD_MARKER": str(tmp_path / "held"), "PYTHONPATH": str(REPO)}
    store = postgres.url()
    with anyio.fail_after(300):
        doomed, doomed_url = await _serve(program, store, env)
        survivor, survivor_url = await _serve(program, store, env)
        try:
            async with httpx2.AsyncClient() as http:
                async with Client(streamable_http_client(doomed_url, http_client=http)) as first:
                    await first.call_tool("Add", {"n": 1}, meta={THREAD_META: "cart"})  # total 1
                    async with anyio.create_task_group() as group:
                        group.start_soon(
                            lambda: first.call_tool(
                                "Add", {"n": 10, "hold": True}, meta={THREAD_META: "cart"}
                            )
                        )
                        await _read_until(doomed, "HOLDING")  # its call is in the log, running
                        os.kill(doomed.pid, signal.SIGKILL)
                        group.cancel_scope.cancel()
                await doomed.wait()
                started = time.monotonic()
                async with Client(streamable_http_client(survivor_url, http_client=http)) as second:
                    answer = await second.call_tool("Add", {"n": 100}, meta={THREAD_META: "cart"})
                waited = time.monotonic() - started
        finally:
            for process in (doomed, survivor):
                if process.returncode is None:
                    process.terminate()
                    await process.wait()
    assert not answer.is_error, text_of(answer)
    # The dead server's call was finished first (at least once), then the survivor's: 1 + 10 + 100.
    assert answer.structured_content == {"result": 111}
    # Within the lease plus one call, generously: far below the 300 s a call may wait for another's.
    assert waited < LEASE + 60, waited
    async with open_store(store) as opened:
        results = [entry for entry in await opened.read_entries("cart") if entry.kind == "result"]
    assert [entry.payload["value"] for entry in results] == [1, 11, 111]
