"""Shared helpers of the MCP bridge tests: fixture paths, and where the external programs are."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

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
