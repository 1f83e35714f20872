"""Imported AutoGen teams and ag2 group chats give the same transcript under PAL as under the framework.

Every team here is deterministic: custom agents and ag2 reply functions, which the program runs through
their own code, so the runs make no model call (a ScriptedModel without answers fails on any call). The
AssistantAgent test scripts the model on both sides: ReplayChatCompletionClient for AutoGen, the line
contract for PAL; both call the same tool.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from importers.autogen import import_target
from pal_core.parser import parse
from pal_core.validate import validate
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.models import ScriptedModel

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TASK = "Plan a picnic for Saturday"
RUN_SECONDS = 60
TEAMS = (
    "round_robin_max",
    "round_robin_text",
    "round_robin_turns",
    "swarm",
    "graph_flow",
    "graph_lambdas",
    "graph_fan_out",
    "selector",
)
AG2_CHATS = ("round_robin_manager", "transitions_manager")


def autogen_transcript(result: Any) -> dict[str, Any]:
    """A TaskResult as the imported program returns it: chat messages (not agent events) and the stop reason."""
    from tests.importers.autogen_scripts import transcript

    return transcript(result)


def ag2_transcript(manager: Any, task: str) -> list[dict[str, Any]]:
    """Run an ag2 group chat from a user outside the group, as the imported program does."""
    from tests.fixtures.autogen.ag2_chats import user

    manager.groupchat.reset()
    user().initiate_chat(manager, message=task, silent=True)
    return [
        {"source": message["name"], "content": message["content"]} for message in manager.groupchat.messages
    ]


async def run_imported(
    target: str, task: str = TASK, model: ScriptedModel | None = None
) -> tuple[Any, ScriptedModel]:
    """Import, write the program as text, read it back, run `Run(task)`: what `pal run --input` does."""
    result = import_target(target)
    assert [item for item in validate(result.program) if item.severity.name == "ERROR"] == []
    text = write(result.program)
    program = parse(text)
    assert program == result.program
    model = model if model is not None else ScriptedModel([])
    with anyio.fail_after(RUN_SECONDS):
        value = await run_playbook(program, "Run", task=task, model=model)
    return value, model


PARALLEL_SPEAKERS = {"graph_fan_out": frozenset({"left", "right"})}
"""Speakers AutoGen runs concurrently: it defines no order between them (on a busy machine either may
finish first), so their messages, and the order others heard them in, are compared as unordered."""


def _unordered(result: dict[str, Any], parallel: frozenset[str]) -> dict[str, Any]:
    if not parallel:
        return result
    messages: list[Any] = []
    for message in result["messages"]:
        content = re.sub(
            r"\[([^\]]*)\]",
            lambda found: "[" + ",".join(sorted(found.group(1).split(","))) + "]",
            message["content"],
        )
        entry = {**message, "content": content}
        if messages and message["source"] in parallel and isinstance(messages[-1], list):
            messages[-1].append(entry)
        elif message["source"] in parallel:
            messages.append([entry])
        else:
            messages.append(entry)
    canonical = [
        sorted(item, key=lambda m: m["source"]) if isinstance(item, list) else item for item in messages
    ]
    return {**result, "messages": canonical}


@pytest.mark.parametrize("name", TEAMS)
async def test_a_deterministic_team_gives_the_same_transcript_with_no_model_call(name: str) -> None:
    import tests.fixtures.autogen.teams as teams

    team = getattr(teams, name)
    await team.reset()
    expected = autogen_transcript(await team.run(task=TASK))
    await team.reset()
    actual, model = await run_imported(f"tests.fixtures.autogen.teams:{name}")
    parallel = PARALLEL_SPEAKERS.get(name, frozenset())
    assert _unordered(actual, parallel) == _unordered(expected, parallel)
    assert model.calls == 0
    assert len(expected["messages"]) >= 4


async def test_the_teams_exercise_what_they_are_for() -> None:
    """Guard against a fixture that stops too early to test anything: hand-offs, a cycle, an approval."""
    import tests.fixtures.autogen.teams as teams

    swarm, _ = await run_imported("tests.fixtures.autogen.teams:swarm")
    assert [(entry["source"], entry.get("handoff")) for entry in swarm["messages"][1:]] == [
        ("planner", "coder"),
        ("coder", "planner"),
        ("planner", None),  # no hand-off: the planner keeps the turn
        ("planner", "tester"),
        ("tester", "coder"),
        ("coder", "planner"),
        ("planner", "user"),
    ]
    assert swarm["stop_reason"] == "Handoff to user from planner detected."
    graph, _ = await run_imported("tests.fixtures.autogen.teams:graph_flow")
    assert [entry["source"] for entry in graph["messages"]] == [
        "user",
        "writer",
        "reviewer",
        "writer",
        "reviewer",
        "publisher",
    ]
    assert graph["stop_reason"] == "Digraph execution is complete"
    text, _ = await run_imported("tests.fixtures.autogen.teams:round_robin_text")
    assert text["stop_reason"] == "Text 'APPROVE' mentioned"
    await teams.round_robin_text.reset()


@pytest.mark.parametrize("name", AG2_CHATS)
async def test_an_ag2_group_chat_gives_the_same_transcript_with_no_model_call(name: str) -> None:
    import tests.fixtures.autogen.ag2_chats as chats

    expected = ag2_transcript(getattr(chats, name), TASK)
    actual, model = await run_imported(f"tests.fixtures.autogen.ag2_chats:{name}")
    assert actual["messages"] == expected
    assert model.calls == 0
    assert len(expected) >= 6


async def test_ag2_stop_reasons_are_kept() -> None:
    rounds, _ = await run_imported("tests.fixtures.autogen.ag2_chats:round_robin_manager")
    assert rounds["stop_reason"] == "Maximum rounds (6) reached"
    flow, _ = await run_imported("tests.fixtures.autogen.ag2_chats:transitions_manager")
    assert flow["stop_reason"] == "Termination message condition on the GroupChatManager 'flow_manager' met"
    speakers = [entry["source"] for entry in flow["messages"]]
    allowed = {"architect": {"checker", "builder"}, "builder": {"tester"}, "checker": {"architect"}}
    for before, after in itertools.pairwise(speakers[1:]):
        if before in allowed:
            assert after in allowed[before], speakers


async def test_an_assistant_agent_with_a_tool_runs_on_the_model_and_calls_the_tool() -> None:
    import tests.fixtures.autogen.assistant as assistant

    assistant.CALLS.clear()
    await assistant.team.reset()
    expected = autogen_transcript(await assistant.team.run(task="Weather in Paris?"))
    assert assistant.CALLS == ["Paris"]
    # One model answer, as AutoGen's: the tool call; its result is the agent's message (a ToolCallSummaryMessage).
    answers = ['`Step["Respond:06:QUE"]` `$weather = GetWeather(city="Paris")`\nyld call']
    actual, model = await run_imported(
        "tests.fixtures.autogen.assistant:team", task="Weather in Paris?", model=ScriptedModel(answers)
    )
    assert assistant.CALLS == ["Paris", "Paris"]
    assert model.calls == 1
    assert actual == expected
    assert expected["messages"][1]["type"] == "ToolCallSummaryMessage"
    prompt = model.requests[0].messages[-1].content
    assert "You report the weather. Use the get_weather tool." in prompt


def test_pal_run_prints_the_transcript_as_one_json_object(tmp_path: Path) -> None:
    """`pal import autogen` then `pal run --input '{"task": ...}'`, as a user runs them from the project root."""
    output = tmp_path / "team.pal"
    imported = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "import", "autogen", "tests.fixtures.autogen.teams:round_robin_max",
         "-o", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    ran = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "run", str(output), "--input", json.dumps({"task": TASK}), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    printed = json.loads(ran.stdout.strip().splitlines()[-1])
    assert set(printed) == {"messages", "stop_reason"}
    assert printed["messages"][0] == {"source": "user", "content": TASK}
    assert [entry["source"] for entry in printed["messages"][1:4]] == ["alice", "bob", "carol"]
    assert printed["stop_reason"] == "Maximum number of messages 10 reached, current message count: 10"


async def test_an_assistant_agent_hands_off_in_a_swarm_by_its_transfer_playbook() -> None:
    import tests.fixtures.autogen.assistant as assistant

    await assistant.swarm.reset()
    expected = autogen_transcript(await assistant.swarm.run(task="When is Bob's birthday?"))
    assert expected["messages"][1]["handoff"] == "bob"
    answers = ['`Step["Respond:06:QUE"]` `$result1 = TransferToBob()`\nyld call']
    actual, model = await run_imported(
        "tests.fixtures.autogen.assistant:swarm", task="When is Bob's birthday?", model=ScriptedModel(answers)
    )
    assert actual == expected
    assert model.calls == 1


async def test_round_trip_autogen_to_pal_to_autogen_gives_the_same_transcript() -> None:
    """Each imported participant's public `Reply` playbook, exported back as an AutoGen agent, takes its turns
    in a team like the original: the same transcript (swarm hand-offs included)."""
    from autogen_agentchat.conditions import HandoffTermination, MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat, Swarm

    import tests.fixtures.autogen.teams as teams
    from exporters.autogen import as_autogen_agent

    cases = {
        "round_robin_max": lambda agents: RoundRobinGroupChat(
            agents, termination_condition=MaxMessageTermination(10)
        ),
        "swarm": lambda agents: Swarm(
            agents, termination_condition=HandoffTermination(target="user") | MaxMessageTermination(30)
        ),
    }
    for name, make_team in cases.items():
        # The original team object is bound to the event loop of the test that ran it; its transcript is the
        # imported program's (test_a_deterministic_team_gives_the_same_transcript_with_no_model_call).
        original = getattr(teams, name)
        await original.reset()
        expected, _ = await run_imported(f"tests.fixtures.autogen.teams:{name}")
        await original.reset()
        program = import_target(f"tests.fixtures.autogen.teams:{name}").program
        names = [participant.name for participant in original._participants]
        exported = [
            as_autogen_agent(program, playbook=f"{member.name}.Reply", name=source, handoffs=[*names, "user"])
            for member, source in zip(program.agents[1:], names, strict=True)
        ]
        with anyio.fail_after(RUN_SECONDS):
            again = autogen_transcript(await make_team(exported).run(task=TASK))
        assert again == expected, name
        for agent in exported:
            await agent.close()
        await original.reset()


def test_ag2_round_trip_gives_the_same_transcript() -> None:
    from autogen import GroupChat, GroupChatManager

    import tests.fixtures.autogen.ag2_chats as chats
    from exporters.autogen import as_ag2_agent

    expected = ag2_transcript(chats.round_robin_manager, TASK)
    program = import_target("tests.fixtures.autogen.ag2_chats:round_robin_manager").program
    names = [agent.name for agent in chats.round_robin.agents]
    exported = [
        as_ag2_agent(program, playbook=f"{member.name}.Reply", name=source)
        for member, source in zip(program.agents[1:], names, strict=True)
    ]
    for agent in chats.round_robin.agents:
        agent.reset()
    chat = GroupChat(agents=exported, messages=[], max_round=6, speaker_selection_method="round_robin")
    manager = GroupChatManager(groupchat=chat, llm_config=False)
    chats.user().initiate_chat(manager, message=TASK, silent=True)
    assert [{"source": m["name"], "content": m["content"]} for m in chat.messages] == expected
    for agent in exported:
        agent.embedded.close()


async def test_magentic_one_scripted_on_both_sides_gives_the_same_transcript() -> None:
    """The orchestrator's ledgers are model turns of the chair: scripted with the same answers as AutoGen's
    ReplayChatCompletionClient, the run says the same task ledger, instruction and final answer."""
    import tests.fixtures.autogen.teams as teams

    await teams.magentic.reset()
    expected = autogen_transcript(await teams.magentic.run(task=TASK))
    await teams.magentic.reset()
    answers = iter(teams.MAGENTIC_ANSWERS)
    variables = iter(["facts", "plan", "ledger", "ledger", "final"])

    def orchestrate(request: Any) -> str:
        text = next(answers)
        value = repr(json.loads(text)) if text.startswith("{") else json.dumps(text)
        line = request.metadata["line"]
        return f'`Step["GroupChat:{line}:EXE"]` `Var[${next(variables)}, {value}]`\nyld call'

    actual, model = await run_imported(
        "tests.fixtures.autogen.teams:magentic", model=ScriptedModel(orchestrate)
    )
    assert actual == expected
    assert model.calls == len(teams.MAGENTIC_ANSWERS)
    assert expected["stop_reason"] == "The guests are counted."
