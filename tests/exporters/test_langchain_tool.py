"""exporters.langgraph.as_langchain_tool: PAL playbooks as LangChain tools, called by real agents."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import anyio
import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from exporters import ExportError, FrameworkNotInstalled
from exporters.langgraph import PalTool, as_langchain_tool
from pal_core.ir import Program
from pal_core.parser import parse


class ToolCallingFakeModel(FakeMessagesListChatModel):
    """A scripted chat model that agents can bind tools to (binding changes nothing: the answers are set)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:
        return self


def calls_then_answers(tool: str, arguments: dict[str, Any], final: str) -> ToolCallingFakeModel:
    """A model that asks for one tool call, then answers `final`."""
    return ToolCallingFakeModel(
        responses=[
            AIMessage(content="", tool_calls=[{"name": tool, "args": arguments, "id": "call_1"}]),
            AIMessage(content=final),
        ]
    )


def create_react_agent(model: Any, tools: list[BaseTool]) -> Any:
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():
        # Deprecated in LangGraph 1.x in favour of langchain's create_agent, still shipped and widely used.
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        from langgraph.prebuilt import create_react_agent as create

        return create(model, tools)


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [message for message in result["messages"] if isinstance(message, ToolMessage)]


# --- the tool ------------------------------------------------------------------------------------------


def test_the_tool_has_the_playbooks_name_description_and_argument_schema(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Score")
    assert isinstance(tool, PalTool)
    assert isinstance(tool, BaseTool)
    assert tool.name == "Score"
    assert tool.description == "Score two numbers: their total and their product."
    assert convert_to_openai_tool(tool) == {
        "type": "function",
        "function": {
            "name": "Score",
            "description": "Score two numbers: their total and their product.",
            "parameters": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
        },
    }


def test_name_and_description_can_be_given(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Visit", name="visit-once", description="Visit once.")
    assert (tool.name, tool.description) == ("visit-once", "Visit once.")
    assert as_langchain_tool(scorer, playbook="Leave").description == "Ends the program."
    # A playbook without a description is described by its name.
    bare = parse("# Bare\n\n## Nothing() -> None\n### Steps\n01:RET\n")
    assert as_langchain_tool(bare, playbook="Nothing").description == "Runs the PAL playbook Bare.Nothing."
    with pytest.raises(ExportError, match=r"tool name 'a b' \(Scorer.Visit\) must be 1-64 letters"):
        as_langchain_tool(scorer, playbook="Visit", name="a b")


def test_invoke_and_ainvoke_run_the_playbook(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Double")
    try:
        assert tool.invoke({"n": 4}) == 8
        assert tool.invoke({"n": 4.0}) == 8  # 4.0 is an integer in JSON; coerced to the declared int
    finally:
        tool.close()


@pytest.mark.anyio
async def test_ainvoke_runs_on_the_callers_loop(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Visit")
    try:
        with anyio.fail_after(10):
            assert await tool.ainvoke({"mark": "a"}) == [None, "a"]
            assert await tool.ainvoke({"mark": "b"}) == [None, "b"]  # fresh variables per call
    finally:
        with anyio.fail_after(30):
            await tool.aclose()


def test_a_playbook_that_returns_nothing_answers_with_what_it_said(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Announce")
    try:
        assert tool.invoke({"who": "Ann"}) == "Ann\nis here"
    finally:
        tool.close()


def test_wrong_arguments_and_failures_are_tool_errors(scorer: Program) -> None:
    score = as_langchain_tool(scorer, playbook="Score")
    explode = as_langchain_tool(scorer, playbook="Explode")
    try:
        with pytest.raises(ToolException, match=r"tool 'Score': x must be an integer, got string \"a\""):
            score.invoke({"x": "a", "y": 1})
        with pytest.raises(ToolException, match=r"y is required; z is not a parameter \(parameters: x, y\)"):
            score.invoke({"x": 1, "z": 1})
        with pytest.raises(ToolException, match=r"tool 'Explode': .*ValueError: bang"):
            explode.invoke({"reason": "bang"})
        # With handle_tool_error the model sees the message instead.
        score.handle_tool_error = True
        assert "x must be an integer" in score.invoke({"x": "a", "y": 1})
    finally:
        score.close()
        explode.close()


# --- agents calling the tool ---------------------------------------------------------------------------


def test_create_react_agent_calls_the_tool(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Score")
    agent = create_react_agent(calls_then_answers("Score", {"x": 6, "y": 7}, "6 and 7 total 13."), [tool])
    try:
        result = agent.invoke({"messages": [HumanMessage(content="Score 6 and 7")]})
    finally:
        tool.close()
    [answer] = tool_messages(result)
    assert answer.name == "Score"
    assert answer.tool_call_id == "call_1"
    assert answer.status == "success"
    assert answer.content == '{"total": 13, "product": 42}'
    assert result["messages"][-1].content == "6 and 7 total 13."


@pytest.mark.anyio
async def test_create_react_agent_calls_the_tool_with_ainvoke(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Double")
    agent = create_react_agent(calls_then_answers("Double", {"n": 21}, "It is 42."), [tool])
    try:
        with anyio.fail_after(20):
            result = await agent.ainvoke({"messages": [HumanMessage(content="Double 21")]})
    finally:
        with anyio.fail_after(30):
            await tool.aclose()
    [answer] = tool_messages(result)
    assert (answer.name, answer.content) == ("Double", "42")


def test_a_bad_call_from_the_model_is_reported_back_to_it(scorer: Program) -> None:
    tool = as_langchain_tool(scorer, playbook="Score")
    tool.handle_tool_error = True
    agent = create_react_agent(calls_then_answers("Score", {"x": "six", "y": 7}, "Sorry."), [tool])
    try:
        result = agent.invoke({"messages": [HumanMessage(content="Score six and 7")]})
    finally:
        tool.close()
    [answer] = tool_messages(result)
    assert answer.content == "tool 'Score': x must be an integer, got string \"six\""


def test_langchains_create_agent_calls_the_tool(scorer: Program) -> None:
    from langchain.agents import create_agent

    tool = as_langchain_tool(scorer, playbook="Visit")
    agent = create_agent(calls_then_answers("Visit", {"mark": "here"}, "Visited."), [tool])
    try:
        result = agent.invoke({"messages": [HumanMessage(content="Visit")]})
    finally:
        tool.close()
    [answer] = tool_messages(result)
    assert answer.content == '[null, "here"]'


# --- imports ---------------------------------------------------------------------------------------------


def test_importing_the_exporters_loads_no_framework() -> None:
    code = (
        "import sys, exporters, exporters.langgraph, runtime.embedding\n"
        "exporters.get_exporter('langgraph')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain_core', 'langgraph', 'pydantic'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_missing_framework_says_how_to_install_it(scorer: Program, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core", None)  # import langchain_core now fails
    with pytest.raises(FrameworkNotInstalled, match=r"pip install 'pal-bridge\[langgraph\]'"):
        as_langchain_tool(scorer, playbook="Score")
    from exporters.langgraph import as_langgraph_node

    with pytest.raises(ImportError, match="langchain-core"):
        as_langgraph_node(scorer, playbook="Score")
