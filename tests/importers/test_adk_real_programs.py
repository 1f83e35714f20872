"""ADK programs written by others import with no validator error, and run like ADK runs them.

The programs: the agent shipped in the google-adk wheel (the agent builder assistant), the ADK template of
google-agents-cli and three templates of create-google-adk-agent (tests/fixtures/adk/NOTICE.md says where
each comes from). Their models are Gemini names: the runs swap in scripted models on both sides.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from importers.adk import import_target
from pal_core.parser import parse
from pal_core.validate import validate_text
from pal_core.writer import write
from runtime.models.scripted import ScriptedModel
from tests.fixtures.adk import llm
from tests.importers.adk_runs import adk_outcome, pal_outcome, same

REAL = {
    "google.adk.cli.built_in_agents.agent:root_agent": ["ADK105"],
    "tests.fixtures.adk.real.agents_cli_adk:app": [],
    "tests.fixtures.adk.real.agents_cli_adk:root_agent": [],
    "tests.fixtures.adk.real.create_adk_single:root_agent": [],
    "tests.fixtures.adk.real.create_adk_multi:root_agent": [],
    "tests.fixtures.adk.real.create_adk_agentic_rag:root_agent": [],
}
"""Target -> the diagnostic codes its import reports."""


@pytest.mark.parametrize("target", sorted(REAL))
def test_a_real_program_imports_with_no_validator_error_and_its_diagnostics(target: str) -> None:
    result = import_target(target)
    assert [diagnostic.code for diagnostic in result.diagnostics] == REAL[target]
    assert [d.format(show_source=False) for d in validate_text(write(result.program))] == []


def _scripted(agent: Any, model: Any) -> Any:
    """A copy of the tree with every LLM agent answering from `model`."""
    copy = agent.clone()
    stack = [copy]
    while stack:
        current = stack.pop()
        current.model = model
        stack.extend(current.sub_agents)
    return copy


@pytest.mark.anyio
async def test_the_agents_cli_template_answers_with_its_tool_like_adk() -> None:
    from tests.fixtures.adk.real import agents_cli_adk

    adk_model = llm.ScriptedLlm(
        responses=[
            llm.call("get_weather", query="San Francisco"),
            llm.text("It's 60 degrees and foggy in SF."),
        ]
    )
    pal_model = ScriptedModel(
        [
            '`$weather = GetWeather(query="San Francisco")`\nyld call',
            'Return["It\'s 60 degrees and foggy in SF."]\nyld return',
        ]
    )
    program = parse(write(import_target("tests.fixtures.adk.real.agents_cli_adk:app", strict=True).program))
    with anyio.fail_after(60):
        expected = await adk_outcome(_scripted(agents_cli_adk.root_agent, adk_model), "Weather in SF?", {})
        actual = await pal_outcome(program, "Weather in SF?", {}, model=pal_model, calls=2)
    assert same(expected, actual), (expected, actual)
    assert "60 degrees and foggy" in str(pal_model.requests[1].messages[-1].content)


@pytest.mark.anyio
async def test_the_multi_agent_template_transfers_to_its_writer_like_adk() -> None:
    from tests.fixtures.adk.real import create_adk_multi

    adk_model = llm.ScriptedLlm(
        responses=[llm.call("transfer_to_agent", agent_name="writer_agent"), llm.text("Here is your haiku.")]
    )
    pal_model = ScriptedModel(
        [
            '`TransferToAgent(agent_name="writer_agent")`\nReturn[""]\nyld return',
            'Return["Here is your haiku."]\nyld return',
        ]
    )
    program = parse(
        write(import_target("tests.fixtures.adk.real.create_adk_multi:root_agent", strict=True).program)
    )
    with anyio.fail_after(60):
        expected = await adk_outcome(_scripted(create_adk_multi.root_agent, adk_model), "Write a haiku", {})
        actual = await pal_outcome(program, "Write a haiku", {}, model=pal_model, calls=2)
    assert same(expected, actual), (expected, actual)
    assert actual["reply"] == "Here is your haiku."
