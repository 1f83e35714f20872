"""A soak of servers that recover (issue 21): two `pal mcp serve` processes on one Postgres store answer
1,000 calls of 16 threads of calls while one server or the other is killed (kill -9) and replaced every
100 calls or so, and Postgres restarts once. Nothing is lost and nothing is done twice (each thread's
recorded results count 1, 2, 3, ... with no gap and no repeat, and every answer a client got is one of
them), and every call is answered or failed with a clear error. Bounded (a few minutes, loopback)."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.host import THREAD_META
from runtime.store import open_store
from tests.mcp_bridge.helpers import PAL, REPO, text_of
from tests.mcp_bridge.test_durable_serving import postgres  # noqa: F401 - the module's Postgres fixture
from tests.runtime.store.postgres_cluster import PostgresCluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TALLY = """# Tally
Adds numbers to a running total.

```python
@playbook(public=True)
async def Add(n: int) -> int:
    \"\"\"Adds n to the total and returns the total.\"\"\"
    variables = agent.state.variables
    variables["total"] = variables.get("total", 0) + n
    return variables["total"]
```
"""
CALLS = 1000
THREADS = 16
WORKERS = 8
KILL_EVERY = 100
LEASE = 2.0
CALL_TIMEOUT = 120.0


@dataclass
class Server:
    process: Process
    url: str
    log: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    thread: str
    began: float
    value: int | None = None
    error: str | None = None


async def _start(program: Path, store: str, group: anyio.abc.TaskGroup) -> Server:
    command = [*PAL, "mcp", "serve", str(program), "--transport", "http", "--port", "0", "--store", store]
    command += ["--lease", str(LEASE)]
    process = await anyio.open_process(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stderr is not None
    stream = TextReceiveStream(process.stderr)
    seen = ""
    async for chunk in stream:
        seen += chunk
        for line in seen.splitlines():
            if line.startswith("pal mcp: serving") and " at " in line:
                server = Server(process, line.split(" at ", 1)[1].split(": ", 1)[0], [seen])
                group.start_soon(_drain, stream, server.log)  # a full stderr pipe would stall the server
                return server
    raise AssertionError(f"the server ended without listening:\n{seen}")


def _said(error: BaseException) -> str:
    """What an error says, through the exception groups of task groups."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


def _listing(entries: list[Any]) -> str:
    """The thread's log, one short line per entry (what a failing check shows)."""
    return "\n".join(f"{e.number} {e.kind} {e.key} {str(e.payload)[:160]}" for e in entries)


async def _drain(stream: TextReceiveStream, log: list[str]) -> None:
    async for chunk in stream:
        log.append(chunk)


async def test_two_servers_a_thousand_calls_kills_and_a_postgres_restart(
    tmp_path: Path,
    postgres: PostgresCluster,  # noqa: F811
) -> None:
    program = tmp_path / "tally.pal"
    program.write_text(TALLY, encoding="utf-8")
    store = postgres.url()
    chance = random.Random(21)
    outcomes: list[Outcome] = []
    events: list[str] = []
    started = time.monotonic()
    with anyio.fail_after(900):
        async with anyio.create_task_group() as background, httpx2.AsyncClient(timeout=CALL_TIMEOUT) as http:
            servers = [await _start(program, store, background), await _start(program, store, background)]
            killed: list[Server] = []
            restarted: list[float] = []
            issued = 0

            async def call(number: int) -> None:
                thread = f"cart-{chance.randrange(THREADS)}"
                server = chance.choice(servers)
                outcome = Outcome(thread, time.monotonic())
                try:
                    with anyio.fail_after(CALL_TIMEOUT):
                        async with Client(streamable_http_client(server.url, http_client=http)) as client:
                            result = await client.call_tool("Add", {"n": 1}, meta={THREAD_META: thread})
                    if result.is_error:
                        outcome.error = f"tool error: {text_of(result)}"
                    else:
                        outcome.value = result.structured_content["result"]  # type: ignore[index]
                except Exception as error:  # a killed server: the client sees its connection go
                    outcome.error = _said(error)
                outcomes.append(outcome)

            async def worker() -> None:
                nonlocal issued
                while issued < CALLS:
                    issued += 1
                    number = issued
                    if number % KILL_EVERY == 0 and len(servers) == 2:
                        # Out of the list first: calls go to the other server while this one is replaced.
                        victim = servers.pop(chance.randrange(len(servers)))
                        os.kill(victim.process.pid, signal.SIGKILL)
                        killed.append(victim)
                        events.append(f"call {number}: killed a server")
                        servers.append(await _start(program, store, background))
                    if number == CALLS // 2:
                        events.append(f"call {number}: Postgres restarts")
                        await anyio.to_thread.run_sync(postgres.restart)
                        restarted.append(time.monotonic())
                    await call(number)

            try:
                async with anyio.create_task_group() as workers:
                    for _ in range(WORKERS):
                        workers.start_soon(worker)
                for server in servers:
                    assert server.process.returncode is None, "".join(server.log)  # none died on its own
            finally:  # whatever happened, no server outlives the test
                for server in servers:
                    if server.process.returncode is None:
                        server.process.terminate()
                for server in [*servers, *killed]:
                    await server.process.wait()
                background.cancel_scope.cancel()
    seconds = time.monotonic() - started

    assert len(outcomes) == CALLS
    answered = [outcome for outcome in outcomes if outcome.error is None]
    failed = Counter(outcome.error.split(":", 1)[0] for outcome in outcomes if outcome.error is not None)
    async with open_store(store) as opened:
        for number in range(THREADS):
            thread = f"cart-{number}"
            if await opened.find_thread(thread) is None:
                continue
            entries = await opened.read_entries(thread)
            results = [e for e in entries if e.kind == "result"]
            values = [entry.payload["value"] for entry in results if "error" not in entry.payload]
            # Nothing lost, nothing done twice: every finished call added exactly one, in order.
            assert values == list(range(1, len(values) + 1)), (thread, values, _listing(entries))
            got = sorted(outcome.value for outcome in answered if outcome.thread == thread)
            assert len(got) == len(set(got)) and set(got) <= set(values), (thread, got, values)
    # Every call was answered, or failed with an error that says what happened (never silence).
    assert all(outcome.error.strip() for outcome in outcomes if outcome.error is not None)
    # Once Postgres is back, the servers reconnect: no store error for a call begun 10 s after (generous).
    late = [o for o in outcomes if o.error and "postgresql://" in o.error and o.began > restarted[0] + 10]
    assert not late, [outcome.error for outcome in late]
    print(
        f"\nsoak: {CALLS} calls in {seconds:.1f} s; {len(answered)} answered, {CALLS - len(answered)} failed "
        f"({dict(failed)}); {len(killed)} kills, 1 Postgres restart"
    )
    for outcome in outcomes:
        if outcome.error is not None:
            print(f"  {outcome.thread}: {outcome.error[:200]}")
    assert len(answered) >= CALLS * 0.8, dict(failed)
