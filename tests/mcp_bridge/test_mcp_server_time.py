"""Consuming a real third-party MCP server: `mcp-server-time` from PyPI, started over stdio.

It needs mcp >= 2.3, so it lives in a venv of its own (.ci/run makes `.venvs/mcp-server-time`); the
tests find it there, through $PAL_TEST_MCP_SERVER_TIME, or on PATH, and are skipped when it is absent.
"""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from mcp_bridge.server import PlaybookServer
from pal_core.parser import parse_file
from runtime.api import run_playbook
from runtime.errors import PlaybookFailed
from runtime.models import ScriptedModel
from tests.mcp_bridge.helpers import MCP_FIXTURES, mcp_server_time, text_of

SERVER = mcp_server_time()
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        SERVER is None,
        reason="mcp-server-time is not installed: python3 -m venv .venvs/mcp-server-time && "
        ".venvs/mcp-server-time/bin/pip install mcp-server-time==2026.10.19",
    ),
]
CLOCK = parse_file(MCP_FIXTURES / "clock.pal")


@pytest.fixture(autouse=True)
def server_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAL_TEST_MCP_SERVER_TIME", str(SERVER))


async def test_a_step_calls_the_clock_tool_on_the_fast_path() -> None:
    model = ScriptedModel([])
    with anyio.fail_after(60):
        now = await run_playbook(CLOCK, "TimeKeeper.CurrentTime", "Europe/Paris", model=model)
        utc = await run_playbook(CLOCK, "TimeKeeper.UtcTime", model=model)
    assert set(now) == {"timezone", "datetime", "day_of_week", "is_dst"}
    assert now["timezone"] == "Europe/Paris"
    assert now["datetime"].endswith(("+01:00", "+02:00"))
    assert utc.endswith("+00:00")
    assert model.calls == 0


async def test_the_servers_own_error_reaches_the_program() -> None:
    with anyio.fail_after(60), pytest.raises(PlaybookFailed) as caught:
        await run_playbook(CLOCK, "TimeKeeper.CurrentTime", "Nowhere/Atlantis")
    assert str(caught.value).startswith("Clock:get_current_time: the tool reported an error: ")
    assert "Invalid timezone" in str(caught.value)


async def test_an_mcp_client_reaches_the_clock_through_a_served_program() -> None:
    # MCP client -> PAL server -> the TimeKeeper's step -> mcp-server-time, and back.
    async with PlaybookServer(CLOCK) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(60):
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            first = await client.call_tool("CurrentTime", {"zone": "Asia/Tokyo"})
            second = await client.call_tool("CurrentTime", {"zone": "UTC"})
    assert names == ["CurrentTime", "UtcTime"]  # the Clock's own tools are not served again
    assert not first.is_error, text_of(first)
    assert first.structured_content["result"]["timezone"] == "Asia/Tokyo"
    assert first.structured_content["result"]["datetime"].endswith("+09:00")
    assert second.structured_content["result"]["timezone"] == "UTC"
