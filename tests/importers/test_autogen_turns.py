"""Participants that answer through a model or a person take the framework's turns, message for message.

Each team runs twice with the same decisions: under AutoGen with `ReplayChatCompletionClient`s (ag2: its
`TestAgent` fake client), and imported, with a ScriptedModel answering the same decisions in the line
contract (tests/importers/autogen_scripts.py). The transcripts must be equal and each model answer used
exactly once on both sides: an AssistantAgent ends its turn after one round of tool calls with AutoGen's
summary (or reflects, or goes on up to `max_tool_iterations`), a hand-off is AutoGen's HandoffMessage, an
ag2 LLM agent suggests tool calls that its executor runs on the executor's turn, and a person answers
through the run's user channel.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from importers.autogen import import_target
from importers.common.naming import camel_case
from importers.common.steps import literal
from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from tests.fixtures.autogen import ag2_tools, tool_teams
from tests.importers.autogen_scripts import pal_model, transcript

pytestmark = [
    pytest.mark.anyio,
    # The replay client warns on every request that it counts tokens of text only.
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

ROOT = Path(__file__).resolve().parents[2]
RUN_SECONDS = 60
TEAMS = {
    "swarm": (tool_teams.service_swarm, ("desk", "billing"), "Refund order A1, please."),
    "stock_team": (tool_teams.stock_room, ("clerk", "auditor"), "How many lamps and desks are there?"),
}


def _imported(target: str) -> Any:
    """The program as `pal import` writes it and `pal run` reads it back."""
    return parse(write(import_target(target).program))


@pytest.mark.parametrize("name", sorted(TEAMS))
async def test_assistant_agents_with_tools_take_autogens_turns(name: str) -> None:
    build, agents, task = TEAMS[name]
    decisions = tool_teams.DECISIONS["swarm" if name == "swarm" else "stock"]
    tool_teams.LEDGER.clear()
    clients = [tool_teams.client(decisions[agent]) for agent in agents]
    with anyio.fail_after(RUN_SECONDS):
        expected = transcript(await build(*clients).run(task=task))
    framework_ledger = list(tool_teams.LEDGER)
    program = _imported(f"tests.fixtures.autogen.tool_teams:{name}")
    model = pal_model(program, decisions)
    tool_teams.LEDGER.clear()
    with anyio.fail_after(RUN_SECONDS):
        actual = await run_playbook(program, "Run", task=task, model=model)
    assert actual == expected
    assert framework_ledger == tool_teams.LEDGER
    assert model.calls == sum(len(decisions[agent]) for agent in agents)


async def test_the_swarm_ends_each_tool_turn_with_a_summary_and_hands_off_with_autogens_message() -> None:
    program = _imported("tests.fixtures.autogen.tool_teams:swarm")
    model = pal_model(program, tool_teams.DECISIONS["swarm"])
    with anyio.fail_after(RUN_SECONDS):
        result = await run_playbook(program, "Run", task="Refund order A1, please.", model=model)
    kinds = [
        (entry["source"], entry.get("type") or ("handoff" if "handoff" in entry else "text"))
        for entry in result["messages"]
    ]
    assert kinds == [
        ("user", "text"),
        ("desk", "ToolCallSummaryMessage"),
        ("desk", "handoff"),
        ("billing", "ToolCallSummaryMessage"),
        ("billing", "handoff"),
    ]
    assert result["messages"][3]["content"] == "refunded 5.0 on A1\nrefunded 2.5 on A1"
    assert result["stop_reason"] == "Handoff to user from billing detected."


async def test_reflection_iterations_errors_and_summary_formats_are_autogens() -> None:
    program = _imported("tests.fixtures.autogen.tool_teams:stock_team")
    model = pal_model(program, tool_teams.DECISIONS["stock"])
    with anyio.fail_after(RUN_SECONDS):
        result = await run_playbook(program, "Run", task="Stock?", model=model)
    auditor = result["messages"][2]
    assert auditor["type"] == "ToolCallSummaryMessage"
    assert auditor["content"].splitlines() == [
        'stock({"item": "lamp"}) -> 3 (error: False)',
        'stock({"item": "chair"}) -> unknown item \'chair\' (error: True)',
    ]
    # The clerk reflects: its messages are the model's text, after three rounds of calls on its second turn.
    assert [entry["content"] for entry in result["messages"] if entry["source"] == "clerk"] == [
        "Three lamps, no desks; chairs are not a stock item.",
        "Still three lamps and no desks.",
    ]


async def test_a_user_proxy_agent_asks_the_runs_user() -> None:
    decisions = tool_teams.DECISIONS["approval"]
    said = ["Too plain.", "APPROVE"]
    with anyio.fail_after(RUN_SECONDS):
        expected = transcript(
            await tool_teams.approval_desk(tool_teams.client(decisions["writer"]), said).run(task="Bakery")
        )
    program = _imported("tests.fixtures.autogen.tool_teams:approval")
    model = pal_model(program, decisions)
    with anyio.fail_after(RUN_SECONDS):
        actual = await run_playbook(program, "Run", task="Bakery", model=model, messages=said)
    assert actual == expected
    assert expected["stop_reason"] == "Text 'APPROVE' mentioned"


async def test_a_user_proxy_named_user_takes_its_turns_as_any_participant() -> None:
    """`UserProxyAgent(name="user")`, as AutoGen's samples name it: its PAL agent is not `User`, which the
    runtime reads as the program's user."""
    decisions = tool_teams.DECISIONS["helpdesk"]
    said = ["It still beeps."]
    with anyio.fail_after(RUN_SECONDS):
        expected = transcript(
            await tool_teams.helpdesk(tool_teams.client(decisions["assistant"]), said).run(task="Help")
        )
    program = _imported("tests.fixtures.autogen.tool_teams:user_named")
    assert [agent.name for agent in program.agents[1:]] == ["Assistant", "UserAgent"]
    with anyio.fail_after(RUN_SECONDS):
        actual = await run_playbook(
            program, "Run", task="Help", model=pal_model(program, decisions), messages=said
        )
    assert actual == expected
    assert [entry["source"] for entry in actual["messages"]] == ["user", "assistant", "user", "assistant"]


def _scripted_answers(program: Any, decisions: dict[str, list[Any]], path: Path) -> None:
    """The answers of `pal_model`, in the order the program asks, as a JSONL file for `--model scripted:`."""
    lines = []
    for agent in program.agents:
        name = (agent.metadata.extra.get("autogen") or {}).get("agent")
        for decision in decisions.get(name, ()):
            text = f'`Step["Respond:01:EXE"]` `Var[$message, {json.dumps(decision)}]`\nyld call'
            lines.append(json.dumps({"text": text}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("answered_by", ["--message", "stdin"])
def test_pal_run_gives_the_users_answers_to_the_user_proxy_and_prompts_on_stderr(
    tmp_path: Path, answered_by: str
) -> None:
    """`pal import autogen ... -o`, then `pal run --input ...`: the person's answers come from `--message`
    (or standard input), the prompts go to standard error, standard output is the result alone, and the
    closing line counts the model calls the trace holds."""
    output = tmp_path / "approval.pal"
    target = "tests.fixtures.autogen.tool_teams:approval"
    imported = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "import", "autogen", target, "-o", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    answers = tmp_path / "answers.jsonl"
    _scripted_answers(parse(output.read_text(encoding="utf-8")), tool_teams.DECISIONS["approval"], answers)
    said = ["Too plain.", "APPROVE"]
    given = [part for text in said for part in ("--message", text)] if answered_by == "--message" else []
    trace = tmp_path / "trace.jsonl"
    ran = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "run", str(output), "--input", json.dumps({"task": "Bakery"}),
         "--model", f"scripted:{answers}", "--trace", str(trace), *given],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        input="" if given else "\n".join(said) + "\n",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)  # nothing but the result on standard output
    assert [entry["content"] for entry in result["messages"]][-1] == "APPROVE"
    assert "Enter your response:" in ran.stderr
    assert "never read" not in ran.stderr
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    calls = sum(event["event"] == "model_call" for event in events)
    assert calls == 2 and "2 model calls" in ran.stderr


# --- ag2 -----------------------------------------------------------------------------------------------


def _ag2_answers(decisions: list[Any]) -> list[Any]:
    from autogen.testing import ToolCall
    from autogen.testing.messages import tools_message

    return [
        decision if isinstance(decision, str) else tools_message(*(ToolCall(n, **a) for n, a in decision))
        for decision in decisions
    ]


def _ag2_entries(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ag2's group chat messages, or the imported program's transcript, without the random call ids."""
    entries = []
    for message in messages:
        entry: dict[str, Any] = {
            "source": message.get("name", message.get("source")),
            "content": message["content"],
        }
        if message.get("tool_calls"):
            entry["tool_calls"] = [
                (call["function"]["name"], json.loads(call["function"]["arguments"]))
                for call in message["tool_calls"]
            ]
        if message.get("tool_responses"):
            entry["tool_responses"] = [response["content"] for response in message["tool_responses"]]
        entries.append(entry)
    return entries


class _Typed:
    """ag2's console for its own run in a test: the person's answers in order, nothing printed."""

    def __init__(self, answers: list[str]) -> None:
        self._answers = iter(answers)

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        pass

    def send(self, message: Any) -> None:
        pass

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        return next(self._answers)


def _ag2_model(program: Any, decisions: dict[str, list[Any]]) -> ScriptedModel:
    by_agent = {
        agent.name: iter(decisions[agent.metadata.extra["autogen"]["agent"]])
        for agent in program.agents
        if (agent.metadata.extra.get("autogen") or {}).get("agent") in decisions
    }

    def answer(request: ModelRequest) -> str:
        agent, playbook, line = (request.metadata[key] for key in ("agent", "playbook", "line"))
        opcode = program.agent(agent).playbook(playbook).step(line).opcode
        decision = next(by_agent[agent])
        head = f'`Step["{playbook}:{line}:{opcode}"]`'
        if isinstance(decision, str):
            return f"{head} `Var[$message, {json.dumps(decision)}]`\nyld call"
        calls = [
            f"`$result{index} = {camel_case(name)}({', '.join(f'{k}={literal(v)}' for k, v in arguments.items())})`"
            for index, (name, arguments) in enumerate(decision, start=1)
        ]
        return "\n".join([head, *calls, "yld call"])

    return ScriptedModel(answer)


@pytest.mark.parametrize(("name", "said"), [("pantry", []), ("tasting", ["Too heavy.", "exit"])])
async def test_ag2_llm_agents_suggest_calls_their_executors_run_and_people_answer(
    name: str, said: list[str]
) -> None:
    from autogen.io import IOStream
    from autogen.testing import TestAgent

    manager = getattr(ag2_tools, f"{name}_chat")()
    llm_agent = next(agent for agent in manager.groupchat.agents if agent.llm_config)
    decisions = ag2_tools.DECISIONS[name]
    ag2_tools.PANTRY.clear()
    with TestAgent(llm_agent, _ag2_answers(decisions[llm_agent.name])), IOStream.set_default(_Typed(said)):
        ag2_tools.user().initiate_chat(manager, message="Get dinner ready", silent=True)
    expected = _ag2_entries(manager.groupchat.messages)
    pantry = dict(ag2_tools.PANTRY)
    program = _imported(f"tests.fixtures.autogen.ag2_tools:{name}")
    model = _ag2_model(program, decisions)
    ag2_tools.PANTRY.clear()
    with anyio.fail_after(RUN_SECONDS):
        actual = await run_playbook(program, "Run", task="Get dinner ready", model=model, messages=said)
    assert _ag2_entries(actual["messages"]) == expected
    assert pantry == ag2_tools.PANTRY
    assert model.calls == len(decisions[llm_agent.name])


async def test_ag2_tool_registration_forms_import_without_diagnostics() -> None:
    """`register_function` and the `register_for_execution` / `register_for_llm` decorators: the LLM agent
    offers both tools to the model; nothing is reported (the executor runs them in ag2)."""
    result = import_target("tests.fixtures.autogen.ag2_tools:pantry")
    assert result.diagnostics == ()
    keeper = result.program.agent("Keeper")
    assert [(p.name, p.type, p.default) for p in keeper.playbook("Restock").parameters] == [
        ("item", "str", None),
        ("count", "int", "None"),
    ]
    assert "$count defaults to 1" in keeper.playbook("Restock").description
    assert [p.name for p in keeper.playbook("Counted").parameters] == ["item"]
