"""Which playbooks become tools, and their names."""

from __future__ import annotations

import pytest

from mcp_bridge.tools import playbook_tools, tools_by_name
from pal_core.ir import Metadata, Playbook, PlaybookKind
from pal_core.parser import parse_file
from tests.conftest import FIXTURES

MCP = FIXTURES / "mcp"


def _public(name: str, kind: PlaybookKind = PlaybookKind.MARKDOWN, description: str = "") -> Playbook:
    return Playbook(name=name, kind=kind, metadata=Metadata(public=True), description=description)


def test_only_public_markdown_and_python_playbooks_are_tools() -> None:
    program = parse_file(MCP / "calculator.pal")
    tools = playbook_tools((agent.name, agent.playbooks) for agent in program.agents)
    assert [tool.name for tool in tools] == ["Add", "Divide", "Tally", "Announce", "Double", "Greet"]
    add = tools[0]
    assert add.qualified_name == "Calculator.Add"
    assert add.description == "Adds two integers."
    assert add.input_schema["required"] == ["a", "b"]
    assert add.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools[3].output_schema is None  # Announce returns None


def test_remote_tools_are_not_served_again() -> None:
    remote = Playbook(name="get_time", kind=PlaybookKind.REMOTE, metadata=Metadata(public=True))
    assert playbook_tools([("Clock", [remote])]) == ()


def test_a_name_two_agents_share_is_qualified_for_both() -> None:
    tools = playbook_tools(
        [
            ("Front", [_public("Lookup"), _public("Hello")]),
            ("Back", [_public("Lookup")]),
        ]
    )
    assert [tool.name for tool in tools] == ["Front.Lookup", "Hello", "Back.Lookup"]


def test_names_keep_to_the_characters_mcp_allows_and_a_description_is_never_empty() -> None:
    (tool,) = playbook_tools([("Agent(v2)", [_public("Do It")])])
    assert tool.name == "Do_It"
    assert tool.description == "Runs the PAL playbook Agent(v2).Do It."


def test_two_tools_with_one_name_are_refused_with_both_playbooks_named() -> None:
    tools = playbook_tools([("A_1", [_public("X")]), ("A 1", [_public("X")])])
    with pytest.raises(ValueError, match=r"A_1\.X and A 1\.X both become the MCP tool 'A_1\.X'"):
        tools_by_name(tools)


@pytest.mark.anyio
async def test_an_input_schema_the_author_wrote_is_checked_in_full() -> None:
    import anyio
    from mcp import Client

    from mcp_bridge.server import PlaybookServer
    from pal_core.parser import parse

    program = parse(
        """# Planner
## Invoke($input:dict) -> dict
metadata:
  public: true
  mcp:
    tool: plan
    arguments: input
    input_schema:
      type: object
      properties:
        steps: {type: integer, minimum: 1, maximum: 10}
      required: [steps]
---
### Steps
01:RET $input
""",
        file="planner.pal",
    )
    async with PlaybookServer(program) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(30):
            fine = await client.call_tool("plan", {"steps": 3})
            refused = await client.call_tool("plan", {"steps": 0})
    assert fine.structured_content == {"result": {"steps": 3}}
    assert refused.is_error
    assert "plan: invalid arguments: steps: 0 is less than the minimum of 1" in refused.content[0].text
