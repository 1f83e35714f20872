"""Shared helpers of the MCP bridge tests: fixture paths, and where the external programs are."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from tests.conftest import FIXTURES

MCP_FIXTURES = FIXTURES / "mcp"
REPO = Path(__file__).resolve().parents[2]
PAL = [sys.executable, "-m", "runtime.cli"]
"""The `pal` command, run by this interpreter (no reliance on PATH)."""


def text_of(result: object) -> str:
    """The text blocks of a CallToolResult, joined."""
    return "\n".join(block.text for block in result.content if block.type == "text")  # type: ignore[attr-defined]


def agent_tasks(klass: str) -> list[asyncio.Task[object]]:
    """The running tasks of agents of one class (ProgramRun names them `agent <Class> <id>`)."""
    return [
        task
        for task in asyncio.all_tasks()
        if task.get_name().startswith(f"agent {klass} ") and not task.done()
    ]


def mcp_server_time() -> str | None:
    """The `mcp-server-time` executable: $PAL_TEST_MCP_SERVER_TIME, the venv .ci/run makes, or PATH."""
    configured = os.environ.get("PAL_TEST_MCP_SERVER_TIME")
    if configured:
        return configured
    local = REPO / ".venvs" / "mcp-server-time" / "bin" / "mcp-server-time"
    if local.is_file():
        return str(local)
    return shutil.which("mcp-server-time")


@asynccontextmanager
async def process_transport(process: Process, stdout_lines: list[str]) -> AsyncIterator[TransportStreams]:
    """An MCP client transport over a server process the test started itself (so the test has its pid and
    can signal it): newline-delimited JSON-RPC on the process's stdin/stdout. Every stdout line is kept
    in `stdout_lines`, so a test can check that nothing but the protocol was written there."""
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout() -> None:
        buffer = ""
        async with read_writer:
            async for chunk in TextReceiveStream(stdout):
                lines = (buffer + chunk).split("\n")
                buffer = lines.pop()
                for line in lines:
                    stdout_lines.append(line)
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as error:
                        message = error
                    try:
                        await read_writer.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
        if buffer:
            stdout_lines.append(buffer)

    async def write_stdin() -> None:
        async with write_reader:
            async for session_message in write_reader:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await stdin.send(data.encode())
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    return

    async with anyio.create_task_group() as group:
        group.start_soon(read_stdout)
        group.start_soon(write_stdin)
        try:
            yield read_stream, write_stream
        finally:
            group.cancel_scope.cancel()


EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31"
"""The MCP reference server the Makefile's `peers` target installs into .venvs/server-everything."""


def mcp_server_everything() -> str | None:
    """The `mcp-server-everything` executable: $PAL_TEST_MCP_EVERYTHING, the one `make peers` installs, or
    PATH."""
    configured = os.environ.get("PAL_TEST_MCP_EVERYTHING")
    if configured:
        return configured
    local = REPO / ".venvs" / "server-everything" / "node_modules" / ".bin" / "mcp-server-everything"
    if local.is_file():
        return str(local)
    return shutil.which("mcp-server-everything")
