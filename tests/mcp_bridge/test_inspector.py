"""A real third-party client, the MCP Inspector CLI (npm @modelcontextprotocol/inspector 0.15, Node 20),
lists and calls our tools over stdio and HTTP.

The inspector is found through $PAL_TEST_MCP_INSPECTOR (a command), `mcp-inspector` on PATH (.ci/run
installs it), or else `npx --yes @modelcontextprotocol/inspector@0.15.0`; without npx the tests are skipped.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from typing import Any

import anyio
import pytest

from mcp_bridge.server import PlaybookServer
from mcp_bridge.transports import serving_http
from pal_core.parser import parse_file
from tests.mcp_bridge.helpers import MCP_FIXTURES, PAL

INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@0.15.0"


def _inspector() -> list[str] | None:
    configured = os.environ.get("PAL_TEST_MCP_INSPECTOR")
    if configured:
        return shlex.split(configured)
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
