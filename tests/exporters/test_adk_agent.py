"""PAL playbooks as ADK agents and tools: under ADK's Runner, inside Sequential / Loop agents and a
Workflow, as a transfer target of an LLM agent, as a tool an LLM agent calls, and the round trip
ADK -> PAL -> ADK."""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import pytest
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.context import Context
from google.adk.events import Event, EventActions
from google.adk.workflow import START, Workflow

from exporters import ExportError, get_exporter
from exporters.adk import as_adk_agent, as_adk_tool
from importers.adk import import_target
from pal_core.ir import Program
from pal_core.parser import parse_file
from tests.conftest import FIXTURES
from tests.fixtures.adk import deterministic, llm
from tests.importers.adk_runs import adk_outcome

RUN_SECONDS = 60
COUNTER = FIXTURES / "exporters" / "counter.pal"

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from google.adk.agents import LoopAgent, SequentialAgent


@pytest.fixture(scope="module")
def counter() -> Program:
    """Step($count, $limit) -> {"count", "done"} and Echo($message) -> str, on the fast path."""
    return parse_file(COUNTER)


class NativeStep(BaseAgent):
    """What the exported Step does, written as a custom ADK agent."""

    async def _run_async_impl(self, ctx: Any) -> AsyncGenerator[Event, None]:
        count = ctx.session.state.get("count", 0) + 1
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            actions=EventActions(
                state_delta={"count": count, "done": count >= 3}, escalate=count >= 3 or None
            ),
        )


def _sequential(*agents: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return SequentialAgent(name="pipeline", sub_agents=list(agents))


def _loop(agent: Any, limit: int = 10) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return LoopAgent(name="loop", max_iterations=limit, sub_agents=[agent])


@pytest.mark.anyio
async def test_an_exported_agent_runs_under_a_runner_inside_a_sequential_agent(scorer: Program) -> None:
    score = as_adk_agent(scorer, playbook="Score", name="score")
    double = as_adk_agent(
        scorer, playbook="Double", inputs={"n": "total"}, output_key="doubled", name="double"
    )
    with anyio.fail_after(RUN_SECONDS):
        outcome = await adk_outcome(_sequential(score, double), "go", {"x": 2, "y": 5})
    assert outcome["state"] == {"x": 2, "y": 5, "total": 7, "product": 10, "doubled": 14}


@pytest.mark.anyio
async def test_an_exported_agent_escalates_and_ends_a_loop_as_a_native_agent_does(counter: Program) -> None:
    exported = _loop(as_adk_agent(counter, playbook="Step", escalate_key="done", name="step"))
    native = _loop(NativeStep(name="step"))
    with anyio.fail_after(RUN_SECONDS):
        got = await adk_outcome(exported, "go", {})
        expected = await adk_outcome(native, "go", {})
    assert got == expected and got["state"] == {"count": 3, "done": True}


@pytest.mark.anyio
async def test_an_exported_agent_without_escalation_runs_every_iteration(counter: Program) -> None:
    loop = _loop(as_adk_agent(counter, playbook="Step", inputs={"count": "count"}, name="step"), limit=5)
    with anyio.fail_after(RUN_SECONDS):
        outcome = await adk_outcome(loop, "go", {})
    assert outcome["state"] == {"count": 5, "done": True}


def before(node_input: str, ctx: Context) -> str:
    ctx.state["count"] = 10
    return node_input


def after(count: int, ctx: Context) -> str:
    ctx.state["after"] = count * 2
    return f"count is {count}"


@pytest.mark.anyio
async def test_an_exported_agent_is_a_workflow_node(counter: Program) -> None:
    step = as_adk_agent(counter, playbook="Step", name="step")
    workflow = Workflow(name="flow", edges=[(START, before, step, after)])
    with anyio.fail_after(RUN_SECONDS):
        outcome = await adk_outcome(workflow, "go", {})
    assert outcome["state"] == {"count": 11, "done": True, "after": 22}


@pytest.mark.anyio
async def test_an_llm_agent_transfers_to_an_exported_agent_which_answers(counter: Program) -> None:
    echo = as_adk_agent(counter, playbook="Echo", name="echo", description="Shouts back.")
    model = llm.ScriptedLlm(responses=[llm.call("transfer_to_agent", agent_name="echo")])
    root = LlmAgent(name="desk", model=model, instruction="Route.", sub_agents=[echo], output_key="desk")
    with anyio.fail_after(RUN_SECONDS):
        outcome = await adk_outcome(root, "hello", {})
    assert outcome == {"state": {}, "reply": "hello!"}
    assert len(model.requests) == 1


@pytest.mark.anyio
async def test_an_llm_agent_calls_an_exported_tool_with_the_playbooks_schema(scorer: Program) -> None:
    tool = as_adk_tool(scorer, playbook="Score")
    assert tool._get_declaration().parameters_json_schema["required"] == ["x", "y"]
    model = llm.ScriptedLlm(responses=[llm.call("Score", x=2, y=5), llm.text("The total is 7.")])
    agent = LlmAgent(name="calc", model=model, instruction="Use Score.", tools=[tool], output_key="answer")
    with anyio.fail_after(RUN_SECONDS):
        outcome = await adk_outcome(agent, "Score 2 and 5", {})
    assert outcome == {"state": {"answer": "The total is 7."}, "reply": "The total is 7."}
    answered = [
        part.function_response.response
        for content in model.requests[1].contents
        for part in content.parts
        if part.function_response
    ]
    assert answered == [{"total": 7, "product": 10}]


@pytest.mark.anyio
async def test_an_exported_tool_answers_wrong_arguments_with_an_error_the_model_sees(scorer: Program) -> None:
    tool = as_adk_tool(scorer, playbook="Score")
    result = await tool.run_async(args={"x": "two"}, tool_context=None)
    assert "error" in result and "x" in result["error"] and "y" in result["error"]
    failing = as_adk_tool(scorer, playbook="Explode")
    assert "boom" in (await failing.run_async(args={"reason": "boom"}, tool_context=None))["error"]


@pytest.mark.anyio
async def test_the_round_trip_adk_pal_adk_ends_in_the_same_state() -> None:
    """The imported root, exported back with as_adk_agent, runs under ADK's Runner to the state the
    original tree reaches."""
    for attribute, inputs in (("nested", {"user:name": "Lin"}), ("loop_with_sequence", {"count": 1})):
        program = import_target(f"tests.fixtures.adk.deterministic:{attribute}", strict=True).program
        round_trip = as_adk_agent(program, name="round_trip")
        with anyio.fail_after(RUN_SECONDS):
            expected = await adk_outcome(getattr(deterministic, attribute), "hello", inputs)
            actual = await adk_outcome(round_trip, "hello", inputs)
        assert actual["state"] == expected["state"], attribute
        assert actual["reply"] == expected["reply"]


def test_export_errors_name_the_agent_the_playbook_and_what_to_change(
    scorer: Program, counter: Program
) -> None:
    with pytest.raises(ExportError, match="no playbook Nope"):
        as_adk_agent(scorer, playbook="Nope")
    with pytest.raises(ExportError, match="inputs names 'z', which is not a parameter"):
        as_adk_agent(scorer, playbook="Score", inputs={"z": "x"})
    with pytest.raises(ExportError, match=r"no source for \$y"):
        as_adk_agent(scorer, playbook="Score", inputs={"x": "x"})
    with pytest.raises(ExportError, match="must be an identifier"):
        as_adk_agent(scorer, playbook="Score", name="not a name")
    agent = as_adk_agent(scorer, playbook="Score")
    with pytest.raises(ExportError, match=r"no value for 'y' \(for \$y\)"):
        agent.binding.arguments({"x": 1}, "")
    with pytest.raises(ExportError, match="returned int, not a dict"):
        as_adk_agent(counter, playbook="Step", name="s").binding.event_parts(_outcome(3), {})


def _outcome(value: Any) -> Any:
    from runtime.embedding import CallOutcome

    return CallOutcome(value=value)


@pytest.mark.anyio
async def test_an_exported_agent_refuses_a_state_of_the_wrong_type_naming_the_parameter(
    scorer: Program,
) -> None:
    agent = as_adk_agent(scorer, playbook="Score", name="score")
    with anyio.fail_after(RUN_SECONDS), pytest.raises(ExportError, match=r"cannot run Scorer.Score.*\$?x"):
        await adk_outcome(agent, "go", {"x": "two", "y": 5})


def test_the_registry_makes_adk_agents_and_tools(scorer: Program) -> None:
    exporter = get_exporter("adk")
    assert isinstance(exporter.make("agent", scorer, playbook="Score"), BaseAgent)
    assert exporter.make("tool", scorer, playbook="Score").name == "Score"
    assert "pal-bridge[adk]" in exporter.install_hint
