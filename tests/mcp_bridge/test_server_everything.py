"""Consuming the MCP reference server `@modelcontextprotocol/server-everything` (npm) over stdio: its tools
are named in kebab-case (`get-sum`), and a PAL agent calls them by their PAL names (`get_sum`).

The server is installed by `make peers` into .venvs/server-everything (a pinned version); the tests find
it there, through $PAL_TEST_MCP_EVERYTHING, or on PATH, and are skipped when npm could not install it.
"""

from __future__ import annotations

import anyio
import pytest

from mcp_bridge.server import PlaybookServer
from pal_core.parser import parse_file
from runtime.api import run_playbook
from runtime.errors import CallError
from runtime.models import ScriptedModel
from tests.mcp_bridge.helpers import EVERYTHING_PACKAGE, MCP_FIXTURES, mcp_server_everything

SERVER = mcp_server_everything()
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        SERVER is None,
        reason=f"{EVERYTHING_PACKAGE} is not installed (make peers installs it with npm; npm is missing?)",
    ),
]
PROGRAM = parse_file(MCP_FIXTURES / "everything.pal")


@pytest.fixture(autouse=True)
def server_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAL_TEST_MCP_EVERYTHING", str(SERVER))


async def test_a_pal_agent_calls_three_kebab_case_tools() -> None:
    with anyio.fail_after(120):
        total, weather, message = await run_playbook(PROGRAM, "Assistant.Report", model=ScriptedModel([]))
    assert total == "The sum of 2 and 40 is 42."
    assert set(weather) == {"temperature", "conditions", "humidity"}
    assert message == "Operation completed successfully"


async def test_a_wrong_name_lists_the_tools_by_pal_name() -> None:
    with anyio.fail_after(120), pytest.raises(CallError) as caught:
        await run_playbook(PROGRAM, "Assistant.Misspelled", model=ScriptedModel([]))
    message = str(caught.value)
    assert message.startswith("remote agent Everything has no tool get_summ; its tools, by PAL name: ")
    assert "echo, " in message
    assert "get_sum (the tool get-sum)" in message
    assert "get_structured_content (the tool get-structured-content)" in message


async def test_the_served_program_uses_the_mapped_names_too() -> None:
    """The same calls through `pal mcp serve` (remote agents borrowed from the server's pool)."""
    async with PlaybookServer(PROGRAM) as served:
        with anyio.fail_after(120):
            result = await served.call("Report", {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.structured_content["result"][0] == "The sum of 2 and 40 is 42."
