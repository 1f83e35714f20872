"""PAL playbooks in AutoGen teams and ag2 group chats (exporters.autogen): an agent that takes turns in a
RoundRobinGroupChat and a SelectorGroupChat, hands off in a Swarm and joins an ag2 GroupChat, and a tool an
AssistantAgent calls. Every playbook here runs without a model."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from exporters import ExportError, get_exporter
from exporters.autogen import as_ag2_agent, as_autogen_agent, as_autogen_tool
from tests.conftest import FIXTURES
from tests.fixtures.autogen.agents import Counter, Router

pytestmark = pytest.mark.anyio

AGENTS = FIXTURES / "exporters" / "chat_agents.pal"
RUN_SECONDS = 60


def texts(result: Any) -> list[tuple[str, str]]:
    from autogen_agentchat.messages import BaseChatMessage

    return [(m.source, m.to_text()) for m in result.messages if isinstance(m, BaseChatMessage)]


async def test_our_agent_takes_turns_in_a_round_robin_team() -> None:
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    reviewer = as_autogen_agent(AGENTS, playbook="Review", name="reviewer")
    team = RoundRobinGroupChat(
        [Counter("writer"), reviewer], termination_condition=TextMentionTermination("APPROVE")
    )
    with anyio.fail_after(RUN_SECONDS):
        result = await team.run(task="Draft the notes")
    said = texts(result)
    assert [source for source, _ in said] == [
        "user",
        "writer",
        "reviewer",
        "writer",
        "reviewer",
        "writer",
        "reviewer",
    ]
    # The reviewer sees the whole conversation (AutoGen gives it only what is new; the agent keeps the rest).
    assert said[2][1] == "reviewed 2 messages, last from writer"
    assert said[4][1] == "reviewed 4 messages, last from writer"
    assert said[-1][1].endswith("APPROVE")
    await reviewer.close()


async def test_our_agent_is_picked_by_a_selector_func() -> None:
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import SelectorGroupChat
    from autogen_ext.models.replay import ReplayChatCompletionClient

    reviewer = as_autogen_agent(AGENTS, playbook="Review", name="reviewer")

    def pick(messages: Any) -> str:
        return "reviewer" if messages[-1].source != "reviewer" else "analyst"

    team = SelectorGroupChat(
        [Counter("analyst"), reviewer],
        model_client=ReplayChatCompletionClient([]),
        selector_func=pick,
        termination_condition=MaxMessageTermination(4),
    )
    with anyio.fail_after(RUN_SECONDS):
        result = await team.run(task="Check the numbers")
    assert [source for source, _ in texts(result)] == ["user", "reviewer", "analyst", "reviewer"]
    await reviewer.close()


async def test_our_agent_hands_off_in_a_swarm() -> None:
    from autogen_agentchat.conditions import HandoffTermination, MaxMessageTermination
    from autogen_agentchat.messages import HandoffMessage
    from autogen_agentchat.teams import Swarm

    dispatcher = as_autogen_agent(AGENTS, playbook="Dispatch", name="dispatcher", handoffs=["coder", "user"])
    coder = Router("coder", {1: "dispatcher", 2: "dispatcher"})
    team = Swarm(
        [dispatcher, coder], termination_condition=HandoffTermination("user") | MaxMessageTermination(12)
    )
    with anyio.fail_after(RUN_SECONDS):
        result = await team.run(task="Fix the bug")
    handoffs = [(m.source, m.target) for m in result.messages if isinstance(m, HandoffMessage)]
    assert handoffs[0] == ("dispatcher", "coder")
    assert ("coder", "dispatcher") in handoffs
    assert handoffs[-1] == ("dispatcher", "user")
    assert result.stop_reason == "Handoff to user from dispatcher detected."
    await dispatcher.close()


async def test_a_hand_off_to_an_agent_not_listed_is_refused() -> None:
    from autogen_agentchat.messages import TextMessage
    from autogen_core import CancellationToken

    dispatcher = as_autogen_agent(AGENTS, playbook="Dispatch", name="dispatcher", handoffs=["user"])
    with pytest.raises(ExportError, match="not among its handoffs"):
        await dispatcher.on_messages([TextMessage(source="user", content="go")], CancellationToken())
    await dispatcher.close()


def test_our_agent_joins_an_ag2_group_chat() -> None:
    from autogen import GroupChat, GroupChatManager

    from tests.fixtures.autogen.ag2_chats import agent, user

    checker = as_ag2_agent(AGENTS, playbook="Review", name="reviewer")
    chat = GroupChat(
        agents=[agent("planner"), checker], messages=[], max_round=5, speaker_selection_method="round_robin"
    )
    manager = GroupChatManager(groupchat=chat, llm_config=False)
    user().initiate_chat(manager, message="Plan the release", silent=True)
    said = [(m["name"], m["content"]) for m in chat.messages]
    assert [name for name, _ in said] == ["user", "planner", "reviewer", "planner", "reviewer"]
    assert said[2][1] == "reviewed 2 messages, last from planner"
    checker.embedded.close()


async def test_an_assistant_agent_calls_our_tool() -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ToolCallExecutionEvent
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    tool = as_autogen_tool(AGENTS, playbook="Add")
    assert tool.name == "Add"
    assert tool.schema["parameters"]["properties"] == {
        "a": {"type": "integer", "title": "A"},
        "b": {"type": "integer", "title": "B"},
    }
    client = ReplayChatCompletionClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[FunctionCall(id="1", name="Add", arguments='{"a": 2, "b": 40}')],
                usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                cached=False,
            )
        ],
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": "unknown",
            "structured_output": False,
        },
    )
    assistant = AssistantAgent("assistant", model_client=client, tools=[tool])
    with anyio.fail_after(RUN_SECONDS):
        result = await assistant.run(task="What is 2 + 40?")
    executions = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert executions[0].content[0].content == "42"
    assert not executions[0].content[0].is_error
    assert result.messages[-1].to_text() == "42"
    await tool.embedded.aclose()


async def test_wrong_tool_arguments_are_reported_to_the_model() -> None:
    from autogen_core import CancellationToken
    from pydantic import ValidationError

    tool = as_autogen_tool(AGENTS, playbook="Add")
    with pytest.raises(ValidationError, match="valid integer"):
        await tool.run_json({"a": "two", "b": 1}, CancellationToken())
    await tool.embedded.aclose()


def test_a_playbook_a_chat_cannot_call_is_refused_when_exported() -> None:
    with pytest.raises(ExportError, match="needs \\$a, \\$b"):
        as_autogen_agent(AGENTS, playbook="Add", name="adder")
    with pytest.raises(ExportError, match="Python identifier"):
        as_autogen_agent(AGENTS, playbook="Echo", name="not an identifier")


def test_the_exporter_is_registered() -> None:
    exporter = get_exporter("autogen")
    assert sorted(exporter.makers) == ["ag2_agent", "agent", "tool"]
    echo = exporter.make("agent", AGENTS, playbook="Echo", name="echo")
    assert echo.name == "echo" and echo.conversation.text_parameter == "text"
    echo.embedded.close()
