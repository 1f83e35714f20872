"""Serving an imported graph: the graph itself is the one tool, named after the graph, taking the input
state as its arguments; its subgraphs and LLM sub-agents are not tools (issue 14, finding 5)."""

from __future__ import annotations

import copy

import anyio
import pytest
from mcp import Client

from mcp_bridge.server import PlaybookServer
from pal_core.ir import Metadata, Parameter, Playbook
from pal_core.parser import parse
from pal_core.writer import write
from runtime.serving.playbooks import served_playbooks, serving_options

pytestmark = pytest.mark.anyio
langgraph = pytest.importorskip("langgraph")


async def test_the_graph_is_the_tool_and_subgraphs_are_not() -> None:
    from importers.langgraph import import_target
    from tests.fixtures.langgraph.subgraph import INPUTS, graph

    program = parse(write(import_target("tests.fixtures.langgraph.subgraph:graph").program))
    async with PlaybookServer(program) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(60):
            listed = (await client.list_tools()).tools
            results = [await client.call_tool("subgraph_graph", copy.deepcopy(state)) for state in INPUTS]
            wrong = await client.call_tool("subgraph_graph", {"text": 3})
            hidden = await client.call_tool("Invoke", {"input": {"text": "x"}})
    assert [tool.name for tool in listed] == ["subgraph_graph"]
    (tool,) = listed
    assert tool.title == "SubgraphGraph.Invoke"
    assert tool.input_schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}, "log": {"type": "array", "items": {"type": "string"}}},
    }
    for state, result in zip(INPUTS, results, strict=True):
        assert not result.is_error, result.content
        assert result.structured_content == {"result": graph.invoke(copy.deepcopy(state))}
    assert wrong.is_error
    assert wrong.content[0].text == "subgraph_graph: invalid arguments: text must be a string, got integer 3"
    assert hidden.is_error and hidden.content[0].text.startswith("Unknown tool: Invoke")


async def test_an_imported_llm_agent_graph_serves_one_tool() -> None:
    from importers.langgraph import import_target

    program = import_target("tests.fixtures.langgraph.prebuilt:supervisor_graph").program
    tools = served_playbooks((agent.name, agent.playbooks) for agent in program.agents)
    assert [tool.name for tool in tools] == ["supervisor_graph"]


def test_mcp_metadata_is_checked() -> None:
    def playbook(settings: object, parameters: tuple[str, ...] = ("input",)) -> Playbook:
        return Playbook(
            name="Invoke",
            parameters=tuple(Parameter(name=name, type="dict") for name in parameters),
            metadata=Metadata(public=True, extra={"mcp": settings}),
        )

    assert serving_options(playbook({"tool": False})).served is False
    assert serving_options(playbook({"tool": "g", "arguments": "input"})).arguments == "input"
    for settings, message in [
        ("yes", "must be a mapping"),
        ({"tool": 3}, "`tool` must be a tool name or false"),
        ({"tool": "g", "colour": "red"}, "unknown key(s) colour"),
        ({"arguments": "nope"}, "`arguments: nope` must name the playbook's one parameter (it has: input)"),
        ({"input_schema": {}}, "`input_schema` must be a JSON Schema object, given with `arguments`"),
    ]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            serving_options(playbook(settings))
