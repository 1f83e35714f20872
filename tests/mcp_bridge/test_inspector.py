"""A real third-party client, the MCP Inspector CLI (npm @modelcontextprotocol/inspector 0.15, Node 20),
lists and calls our tools over stdio and HTTP.

The inspector is found through $PAL_TEST_MCP_INSPECTOR (a command), .venvs/inspector (`make peers` installs
it), `mcp-inspector` on PATH, or else `npx --yes @modelcontextprotocol/inspector@0.15.0`; without npx the
tests are skipped.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_bridge.server import PlaybookServer
from mcp_bridge.transports import serving_http
from pal_core.parser import parse_file
from tests.mcp_bridge.helpers import MCP_FIXTURES, PAL, REPO

INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@0.15.0"


def _inspector() -> list[str] | None:
    configured = os.environ.get("PAL_TEST_MCP_INSPECTOR")
    if configured:
        return shlex.split(configured)
    local = REPO / ".venvs" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
    if local.is_file():
        return [str(local)]  # what `make peers` installs
    installed = shutil.which("mcp-inspector")
    if installed:
        return [installed]
    npx = shutil.which("npx")
    return [npx, "--yes", INSPECTOR_PACKAGE] if npx else None


INSPECTOR = _inspector()
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        INSPECTOR is None,
        reason=f"npx is not installed (Node.js 20 runs the MCP Inspector {INSPECTOR_PACKAGE})",
    ),
]
CALCULATOR_FILE = MCP_FIXTURES / "calculator.pal"
STDIO_TARGET = [*PAL, "mcp", "serve", str(CALCULATOR_FILE)]


async def _inspect(target: list[str], *options: str) -> dict[str, Any]:
    """Run `inspector --cli <target> <options>` and return the JSON it prints."""
    assert INSPECTOR is not None
    # npx may download the package on first use; later runs take seconds.
    with anyio.fail_after(300):
        result = await anyio.run_process([*INSPECTOR, "--cli", *target, *options], check=False)
    output = result.stdout.decode()
    assert result.returncode == 0, (
        f"inspector failed ({result.returncode}):\n{output}\n{result.stderr.decode()}"
    )
    return json.loads(output)


async def test_the_inspector_lists_and_calls_our_tools_over_stdio() -> None:
    listed = await _inspect(STDIO_TARGET, "--method", "tools/list")
    called = await _inspect(
        STDIO_TARGET,
        "--method",
        "tools/call",
        "--tool-name",
        "Add",
        "--tool-arg",
        "a=2",
        "--tool-arg",
        "b=40",
    )
    markdown = await _inspect(
        STDIO_TARGET, "--method", "tools/call", "--tool-name", "Double", "--tool-arg", "n=60"
    )
    refused = await _inspect(
        STDIO_TARGET, "--method", "tools/call", "--tool-name", "Private", "--tool-arg", "n=1"
    )
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert sorted(tools) == ["Add", "Announce", "Divide", "Double", "Greet", "Tally"]
    assert tools["Add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["Add"]["outputSchema"]["properties"] == {"result": {"type": "integer"}}
    assert called["structuredContent"] == {"result": 42}
    assert called["isError"] is False
    assert [block["text"] for block in markdown["content"]] == ["120", "that is a big number"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("Unknown tool: Private")


async def test_the_inspector_lists_and_calls_our_tools_over_http() -> None:
    async with (
        PlaybookServer(parse_file(CALCULATOR_FILE)) as served,
        serving_http(served, port=0) as endpoint,
    ):
        target = [endpoint.url, "--transport", "http"]
        listed = await _inspect(target, "--method", "tools/list")
        called = await _inspect(
            target, "--method", "tools/call", "--tool-name", "Tally", "--tool-arg", 'words=["a","b","a"]'
        )
    assert sorted(tool["name"] for tool in listed["tools"]) == [
        "Add",
        "Announce",
        "Divide",
        "Double",
        "Greet",
        "Tally",
    ]
    assert called["structuredContent"] == {"result": {"a": 2, "b": 1}}


def _inspector_proxy() -> list[str] | None:
    """The Inspector's proxy server (`mcp-inspector-server`), installed beside `mcp-inspector`: what its web
    UI talks to, passing the UI's `Authorization` header (Authentication -> Bearer Token) to the server."""
    if INSPECTOR is None or len(INSPECTOR) != 1:
        return None  # reached through npx: no installed proxy to start
    proxy = Path(INSPECTOR[0]).with_name("mcp-inspector-server")
    return [str(proxy)] if proxy.exists() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_inspector_reaches_a_server_started_with_a_token() -> None:
    """docs/mcp.md: `pal mcp serve --transport http --token T`, then the Inspector's UI with Transport
    "Streamable HTTP" and Authentication -> Bearer Token T. The UI's requests go through the Inspector's
    proxy, which sends `Authorization: Bearer T` on; here the requests the UI makes are made directly."""
    proxy = _inspector_proxy()
    if proxy is None:
        pytest.skip("the MCP Inspector is not installed locally (make peers installs it)")
    session = secrets.token_hex(16)
    port = _free_port()
    environment = {**os.environ, "PORT": str(port), "MCP_PROXY_TOKEN": session}
    async with (
        PlaybookServer(parse_file(CALCULATOR_FILE)) as served,
        serving_http(served, port=0, token="sesame") as endpoint,
        await anyio.open_process(proxy, env=environment) as process,
    ):
        try:
            with anyio.fail_after(60):
                assert process.stdout is not None
                async for line in TextReceiveStream(process.stdout):
                    if "listening on" in line:
                        break
            address = f"http://127.0.0.1:{port}/mcp?{urlencode({'url': endpoint.url, 'transportType': 'streamable-http'})}"
            results = {}
            for scheme in ("Bearer", "bearer"):
                headers = {"Authorization": f"{scheme} sesame", "X-MCP-Proxy-Auth": f"Bearer {session}"}
                with anyio.fail_after(60):
                    async with (
                        httpx2.AsyncClient(headers=headers) as http,
                        Client(streamable_http_client(address, http_client=http)) as client,
                    ):
                        results[scheme] = await client.call_tool("Add", {"a": 2, "b": 40})
        finally:
            process.terminate()
    assert results["Bearer"].structured_content == {"result": 42}
    assert results["bearer"].structured_content == {"result": 42}
