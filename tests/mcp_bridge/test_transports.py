"""The server over real transports: `pal mcp serve` in a subprocess over stdio, streamable HTTP on
127.0.0.1 with an ephemeral port (in process and as `pal mcp serve --transport http`), the bearer token,
and a load of 500 concurrent calls."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.server import PlaybookServer
from mcp_bridge.transports import serving_http
from pal_core.parser import parse_file
from tests.mcp_bridge.helpers import MCP_FIXTURES, PAL, process_transport, text_of

pytestmark = pytest.mark.anyio

CALCULATOR_FILE = MCP_FIXTURES / "calculator.pal"
CALCULATOR = parse_file(CALCULATOR_FILE)


@asynccontextmanager
async def _http_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP, sending the bearer token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


@pytest.mark.slow
async def test_pal_mcp_serve_over_stdio_in_a_subprocess() -> None:
    command, *args = PAL
    parameters = StdioServerParameters(command=command, args=[*args, "mcp", "serve", str(CALCULATOR_FILE)])
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    with anyio.fail_after(60):
        async with Client(parameters) as client:
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            added = await client.call_tool("Add", {"a": 20, "b": 22})
            doubled = await client.call_tool("Double", {"n": 4}, progress_callback=on_progress)
            refused = await client.call_tool("Add", {"a": "twenty"})
            private = await client.call_tool("Private", {"n": 1})
            announced = await client.call_tool("Announce", {"text": "over stdio"})
    assert names == ["Add", "Announce", "Divide", "Double", "Greet", "Tally"]
    assert added.structured_content == {"result": 42}
    assert doubled.structured_content == {"result": 8}
    assert progress == [
        "Calculator.Double:01:EXE fast path",
        "Calculator.Double:02:CND condition fails",
        "Calculator.Double:03:RET return 8",
    ]
    assert (
        refused.is_error
        and "a must be an integer" in text_of(refused)
        and "b is required" in text_of(refused)
    )
    assert private.is_error and text_of(private).startswith("Unknown tool: Private")
    assert text_of(announced) == "over stdio"


async def test_http_on_an_ephemeral_loopback_port() -> None:
    async with PlaybookServer(CALCULATOR) as served, serving_http(served, port=0) as endpoint:
        assert endpoint.url.startswith("http://127.0.0.1:")
        assert endpoint.url.endswith("/mcp")
        with anyio.fail_after(30):
            async with _http_client(endpoint.url) as client:
                names = sorted(tool.name for tool in (await client.list_tools()).tools)
                added = await client.call_tool("Add", {"a": 1, "b": 2})
    assert names == ["Add", "Announce", "Divide", "Double", "Greet", "Tally"]
    assert added.structured_content == {"result": 3}


async def test_with_a_token_http_requests_without_it_are_refused() -> None:
    async with PlaybookServer(CALCULATOR) as served, serving_http(served, port=0, token="t0ken") as endpoint:
        with anyio.fail_after(30):
            async with httpx2.AsyncClient() as http:
                missing = await http.post(
                    endpoint.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                )
                wrong = await http.post(
                    endpoint.url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Authorization": "Bearer nope"},
                )
            async with _http_client(endpoint.url, "t0ken") as client:
                added = await client.call_tool("Add", {"a": 1, "b": 2})
            # The scheme is case-insensitive (RFC 9110): clients that send `bearer` are let in.
            async with (
                httpx2.AsyncClient(headers={"Authorization": "bearer t0ken"}) as http,
                Client(streamable_http_client(endpoint.url, http_client=http)) as lower,
            ):
                lowered = await lower.call_tool("Add", {"a": 2, "b": 2})
    assert lowered.structured_content == {"result": 4}
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "no bearer token was given" in missing.json()["error"]["message"]
    assert wrong.status_code == 401
    assert "the bearer token is wrong" in wrong.json()["error"]["message"]
    assert added.structured_content == {"result": 3}


@pytest.mark.slow
async def test_500_concurrent_calls_over_http_give_500_correct_results() -> None:
    sessions, calls_per_session = 5, 100
    results: dict[tuple[int, int], object] = {}
    async with PlaybookServer(CALCULATOR) as served, serving_http(served, port=0) as endpoint:

        async def session(number: int) -> None:
            async with _http_client(endpoint.url) as client:

                async def call(index: int) -> None:
                    result = await client.call_tool("Add", {"a": number * 1000, "b": index})
                    results[number, index] = result.structured_content

                async with anyio.create_task_group() as group:
                    for index in range(calls_per_session):
                        group.start_soon(call, index)

        with anyio.fail_after(180):
            async with anyio.create_task_group() as group:
                for number in range(sessions):
                    group.start_soon(session, number)
    assert len(results) == 500
    assert results == {
        (number, index): {"result": number * 1000 + index}
        for number in range(sessions)
        for index in range(calls_per_session)
    }


async def test_malformed_requests_over_http_are_refused_and_the_server_still_answers() -> None:
    async with PlaybookServer(CALCULATOR) as served, serving_http(served, port=0) as endpoint:
        with anyio.fail_after(30):
            async with _http_client(endpoint.url) as client:
                bad = await client.call_tool("Add", {"a": [1], "b": {"x": 1}})
                after = await client.call_tool("Add", {"a": 1, "b": 2})
            async with httpx2.AsyncClient() as http:
                garbage = await http.post(
                    endpoint.url,
                    content=b"{not json",
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                    },
                )
            async with _http_client(endpoint.url) as client:
                again = await client.call_tool("Add", {"a": 2, "b": 2})
    assert bad.is_error
    assert text_of(bad) == (
        'Add: invalid arguments: a must be an integer, got array [1]; b must be an integer, got object {"x": 1}'
    )
    assert after.structured_content == {"result": 3}
    assert garbage.status_code == 400
    assert again.structured_content == {"result": 4}


async def _serving_line(process: Process) -> str:
    """The `pal mcp: serving ... at URL: ...` line the server writes to stderr once it listens."""
    assert process.stderr is not None
    buffered = ""
    async for chunk in TextReceiveStream(process.stderr):
        buffered += chunk
        for line in buffered.splitlines():
            if line.startswith("pal mcp: serving"):
                return line
    raise AssertionError(f"the server ended without listening; it wrote:\n{buffered}")


@pytest.mark.slow
async def test_pal_mcp_serve_over_http_in_a_subprocess_and_ctrl_c_stops_it() -> None:
    command = [
        *PAL,
        "mcp",
        "serve",
        str(CALCULATOR_FILE),
        "--transport",
        "http",
        "--port",
        "0",
        "--token",
        "abc",
    ]
    with anyio.fail_after(60):
        async with await anyio.open_process(command) as process:
            line = await _serving_line(process)
            url = line.split(" at ", 1)[1].split(": ", 1)[0]
            assert url.startswith("http://127.0.0.1:")
            async with _http_client(url, "abc") as client:
                added = await client.call_tool("Add", {"a": 5, "b": 6})
            process.send_signal(signal.SIGINT)
            status = await process.wait()
    assert added.structured_content == {"result": 11}
    assert status == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--token", "x"], "error: --token applies to --transport http"),
        (
            ["--transport", "http", "--port", "70000"],
            "error: argument --port: must be a port number 0-65535, got '70000'",
        ),
    ],
)
async def test_pal_mcp_serve_refuses_bad_options(extra: list[str], message: str) -> None:
    with anyio.fail_after(60):
        result = await anyio.run_process([*PAL, "mcp", "serve", str(CALCULATOR_FILE), *extra], check=False)
    assert result.returncode == 2
    assert message in result.stderr.decode()


@pytest.mark.slow
async def test_pal_mcp_serve_reports_a_program_it_cannot_load(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pal"
    broken.write_text("no agent header\n", encoding="utf-8")
    with anyio.fail_after(60):
        result = await anyio.run_process([*PAL, "mcp", "serve", str(broken)], check=False)
    assert result.returncode == 2
    assert result.stderr.decode().startswith(
        f"error: {broken}:1:1: PAL001 text before the first agent header"
    )


@pytest.mark.slow
async def test_over_stdio_stdout_carries_only_the_protocol_even_while_python_blocks_load() -> None:
    """A python block that prints at import time and during calls (print, sys.stdout, os.write on fd 1):
    every line on the server's stdout is JSON-RPC, and what the code printed went to stderr."""
    noisy = MCP_FIXTURES / "noisy.pal"
    stdout_lines: list[str] = []
    with anyio.fail_after(60):
        async with await anyio.open_process([*PAL, "mcp", "serve", str(noisy)]) as process:
            async with Client(process_transport(process, stdout_lines)) as client:
                shouted = await client.call_tool("Shout", {"text": "hello"})
            assert process.stdin is not None and process.stderr is not None
            await process.stdin.aclose()  # end of input: the server stops
            stderr = b"".join([chunk async for chunk in process.stderr]).decode()
            status = await process.wait()
    assert shouted.structured_content == {"result": "HELLO"}
    assert stdout_lines and all(line.startswith('{"jsonrpc":"2.0"') for line in stdout_lines), stdout_lines
    for printed in (
        "noisy: printed while the python block is imported",
        "noisy: written to fd 1 while imported",
        "noisy: sys.stdout.write while imported",
        "noisy: printed during a call: hello",
        "noisy: fd 1 during a call: hello",
    ):
        assert printed in stderr
    assert status == 0
