"""A served program with a playbook that loops without end (issue 13, finding 1), over real transports:
`pal mcp serve` in a subprocess, over streamable HTTP and over stdio. Another client's calls are answered
while the loop runs, the looping call ends at its step budget or when its client cancels it, and SIGTERM
stops the server within seconds. Bounds are generous (CI is a busy 2-core machine); what is asserted is
behaviour: a call answered *while* the loop is still counting, a count that stops moving after a cancel.

The program (tests/fixtures/mcp/spinner.pal): `Spinner.Spin` loops forever on the fast path calling
`Counter.Bump`; `Observer.Peek` returns the count. The Counter agent lives as long as the server, so Peek
shows whether a Spin is still running.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp_bridge.helpers import MCP_FIXTURES, PAL, process_transport, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SPINNER = MCP_FIXTURES / "spinner.pal"
NO_BUDGET = ["--max-steps", "none", "--max-seconds", "none"]
"""A loop that only a cancel or a signal can stop (so a count that stops moving proves the cancel worked)."""


class Served:
    """A `pal mcp serve` subprocess and a way to open clients to it."""

    def __init__(self, process: Process, connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
        self.process = process
        self.connect = connect
        self.stdout_lines: list[str] = []


@asynccontextmanager
async def served_over_http(*options: str) -> AsyncIterator[Served]:
    command = [*PAL, "mcp", "serve", str(SPINNER), "--transport", "http", "--port", "0", *options]
    async with await anyio.open_process(command) as process:
        try:
            url = await _announced_url(process)

            @asynccontextmanager
            async def connect() -> AsyncIterator[Client]:
                async with (
                    httpx2.AsyncClient() as http,
                    Client(streamable_http_client(url, http_client=http)) as c,
                ):
                    yield c

            yield Served(process, connect)
        finally:
            _stop(process)


@asynccontextmanager
async def served_over_stdio(*options: str) -> AsyncIterator[Served]:
    """Over stdio there is one client per server process: `connect` may be entered once."""
    command = [*PAL, "mcp", "serve", str(SPINNER), *options]
    async with await anyio.open_process(command) as process:
        served: Served

        @asynccontextmanager
        async def connect() -> AsyncIterator[Client]:
            async with Client(process_transport(process, served.stdout_lines)) as c:
                yield c

        served = Served(process, connect)
        try:
            yield served
        finally:
            _stop(process)


def _stop(process: Process) -> None:
    if process.returncode is None:
        process.kill()


async def _announced_url(process: Process) -> str:
    assert process.stderr is not None
    buffered = ""
    async for chunk in process.stderr:
        buffered += chunk.decode()
        for line in buffered.splitlines():
            if line.startswith("pal mcp: serving") and " at " in line:
                return line.split(" at ", 1)[1].split(": ", 1)[0]
    raise AssertionError(f"the server ended without listening; it wrote:\n{buffered}")


async def _peek(client: Client) -> int:
    result = await client.call_tool("Peek", {})
    assert not result.is_error, text_of(result)
    return int(result.structured_content["result"])  # type: ignore[index]


async def _count_moving(client: Client) -> tuple[int, int]:
    """Two counts read while the loop runs, the second larger: the loop was running between them."""
    first = await _peek(client)
    while first == 0:
        first = await _peek(client)
    second = await _peek(client)
    while second == first:
        second = await _peek(client)
    return first, second


async def _count_stopped(client: Client) -> int:
    """Read the count until three reads in a row agree (a running loop bumps it thousands of times between
    two calls): the loop has stopped."""
    readings = [await _peek(client)]
    while len(readings) < 3 or len(set(readings[-3:])) > 1:
        readings.append(await _peek(client))
    return readings[-1]


@asynccontextmanager
async def two_clients(served: Served, transport: str) -> AsyncIterator[tuple[Client, Client]]:
    """(the client that spins, the client that observes): two sessions over HTTP; over stdio, where a
    server process has one client, the same client's concurrent requests."""
    async with served.connect() as spinner:
        if transport == "stdio":
            yield spinner, spinner
        else:
            async with served.connect() as observer:
                yield spinner, observer


def _serving(transport: str) -> Callable[..., AbstractAsyncContextManager[Served]]:
    return served_over_http if transport == "http" else served_over_stdio


# --- the spinning call is served alongside others, and cancelling it stops it ------------------------


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_other_calls_are_answered_while_a_call_spins_and_a_cancel_stops_it(transport: str) -> None:
    spin_results: list[Any] = []
    with anyio.fail_after(120):
        async with (
            _serving(transport)(*NO_BUDGET) as served,
            two_clients(served, transport) as (spinner, observer),
        ):
            async with anyio.create_task_group() as group:

                async def spin() -> None:
                    spin_results.append(await spinner.call_tool("Spin", {}))

                group.start_soon(spin)
                first, second = await _count_moving(observer)
                group.cancel_scope.cancel()  # the client cancels Spin: notifications/cancelled
            stopped_at = await _count_stopped(observer)
            after = await _peek(observer)
    assert 0 < first < second <= stopped_at == after
    assert spin_results == []  # MCP: a cancelled request gets no response
    if transport == "stdio":
        assert served.stdout_lines and all(
            line.startswith('{"jsonrpc":"2.0"') for line in served.stdout_lines
        )


# --- the step budget ends the spinning call with a tool error ----------------------------------------


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_spinning_call_ends_at_its_step_budget_with_a_tool_error(transport: str) -> None:
    with anyio.fail_after(120):
        async with _serving(transport)("--max-steps", "3000") as served, served.connect() as client:
            spun = await client.call_tool("Spin", {})
            peeked = await _peek(client)
    assert spun.is_error
    message = text_of(spun)
    assert message.startswith("Spin failed: Spinner:Spin:")
    assert "budget max_steps=3000" in message and "--max-steps" in message
    # Three steps per turn of the loop (CND, EXE, JMP): about a thousand bumps, then the budget.
    assert 990 <= peeked <= 1001


# --- SIGTERM stops the server whatever its calls are doing -------------------------------------------


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_sigterm_stops_a_server_with_a_spinning_call_within_seconds(transport: str) -> None:
    spin_results: list[Any] = []
    with anyio.fail_after(120):
        async with (
            _serving(transport)(*NO_BUDGET) as served,
            two_clients(served, transport) as (spinner, observer),
            anyio.create_task_group() as group,
        ):

            async def spin() -> None:
                try:
                    spin_results.append(await spinner.call_tool("Spin", {}))
                except Exception as error:  # the connection may close before the answer arrives
                    spin_results.append(error)

            group.start_soon(spin)
            await _count_moving(observer)
            signalled = time.monotonic()
            served.process.send_signal(signal.SIGTERM)
            status = await served.process.wait()
            took = time.monotonic() - signalled
            group.cancel_scope.cancel()
    # The bound is 5 s; checked with room for a busy machine (the server's own deadline is 4 s).
    assert took < 15, f"the server took {took:.1f} s to stop"
    assert status == 0
    assert spin_results, "the spinning call got neither an answer nor a closed connection"
    if not isinstance(spin_results[0], Exception):
        assert spin_results[0].is_error and "the server is shutting down" in text_of(spin_results[0])


async def test_sigterm_stops_a_server_whose_python_playbook_blocks_the_event_loop() -> None:
    """`time.sleep` in a Python playbook: no budget or cancellation can reach it, the signal still does."""
    blocker = MCP_FIXTURES / "blocker.pal"
    stdout_lines: list[str] = []
    stderr_text: list[str] = []
    sleeping = anyio.Event()

    async def read_stderr(process: Process) -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            stderr_text.append(chunk.decode())
            if "Block: sleeping now" in "".join(stderr_text):
                sleeping.set()

    async def call_block(client: Client) -> None:
        with contextlib.suppress(Exception):  # the connection closes under the call
            await client.call_tool("Block", {"seconds": 600})

    with anyio.fail_after(120):
        async with await anyio.open_process([*PAL, "mcp", "serve", str(blocker)]) as process:
            try:
                async with (
                    anyio.create_task_group() as group,
                    Client(process_transport(process, stdout_lines)) as client,
                ):
                    group.start_soon(read_stderr, process)
                    group.start_soon(call_block, client)
                    await sleeping.wait()
                    signalled = time.monotonic()
                    process.send_signal(signal.SIGTERM)
                    status = await process.wait()
                    took = time.monotonic() - signalled
                    # The reader ends at the end of stderr, the call when the connection closes.
            finally:
                _stop(process)
    assert status == 1
    assert "pal mcp: exiting now: the calls did not stop within 4 s" in "".join(stderr_text)
    assert took < 15, f"the server took {took:.1f} s to stop"
