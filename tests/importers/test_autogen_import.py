"""`pal import autogen`: real teams from AutoGen's and ag2's documentation import with no validator error and
their unexpressed parts named (AG1xx); the programs are meetings; bad targets and strict imports fail clearly;
the model picks the speaker of a SelectorGroupChat as AutoGen's selector would."""

from __future__ import annotations

import argparse
from collections import Counter as Tally

import anyio
import pytest

from importers import ImportFailed, ImportTargetError, get_importer
from importers import cli as imports
from importers.autogen import CODES, import_target, import_team
from pal_core.validate import validate
from runtime.api import run_playbook
from runtime.errors import PlaybookFailed
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from tests.importers.test_autogen_equivalence import autogen_transcript

pytestmark = pytest.mark.anyio

DOCS = "tests.fixtures.autogen.samples.autogen_docs"
AG2_DOCS = "tests.fixtures.autogen.samples.ag2_docs"

SAMPLES = {
    f"{DOCS}:selector_travel_team": {},
    f"{DOCS}:selector_custom_function_team": {"AG102": 1},
    f"{DOCS}:swarm_basic_team": {},
    f"{DOCS}:swarm_human_handoff_team": {},
    f"{DOCS}:graph_sequential_team": {},
    f"{DOCS}:graph_fan_out_team": {},
    f"{DOCS}:graph_conditional_team": {},
    f"{DOCS}:graph_loop_team": {},
    f"{DOCS}:magentic_one_team": {},
    f"{AG2_DOCS}:manager": {},
    f"{AG2_DOCS}:fsm_manager": {"AG102": 1},
}
"""Each documented team and the diagnostics it must get (code: how many)."""


def errors(program: object) -> list[str]:
    return [f"{item.code} {item.message}" for item in validate(program) if item.severity.name == "ERROR"]


@pytest.mark.parametrize("target", sorted(SAMPLES))
def test_documented_teams_import_as_meetings_with_their_unexpressed_parts_named(target: str) -> None:
    initiator = {"manager": "Admin", "fsm_manager": "User"}.get(target.rpartition(":")[2])
    result = import_target(target, initiator=initiator)
    assert errors(result.program) == []
    assert dict(Tally(item.code for item in result.diagnostics)) == SAMPLES[target]
    for item in result.diagnostics:
        assert item.code in CODES and item.subject and item.message
    chair, *members = result.program.agents
    meeting = chair.playbook("GroupChat")
    assert meeting.metadata.meeting and meeting.metadata.required_attendees == tuple(m.name for m in members)
    assert chair.playbook("Run").triggers[0].code == "BGN"
    for member in members:
        assert member.playbook("GroupChat").metadata.meeting


def test_graph_conditions_of_the_documented_lambda_form_become_conditions() -> None:
    result = import_target(f"{DOCS}:graph_loop_team")
    steps = "\n".join(step.text for step in _all_steps(result.program.agents[0].playbook("GroupChat").steps))
    assert '"APPROVE" in $reply["content"]' in steps
    assert '"APPROVE" not in $reply["content"]' in steps


def test_an_assistant_agents_tools_run_through_the_live_agent_and_its_turn_is_autogens() -> None:
    result = import_target("tests.fixtures.autogen.assistant:team")
    forecaster = result.program.agent("Forecaster")
    tool = forecaster.playbook("GetWeather")
    assert [(p.name, p.type) for p in tool.parameters] == [("city", "str")]
    texts = [step.text for step in _all_steps(tool.steps)]
    assert any(
        'RunTool(team="tests.fixtures.autogen.assistant:team", agent="forecaster", tool="get_weather"' in t
        for t in texts
    )
    respond = forecaster.playbook("Respond")
    assert (
        respond.metadata.execution_mode is None
    )  # steps: one model answer per inference, the rest runs alone
    assert respond.description == "You report the weather. Use the get_weather tool."
    steps = [step.text for step in _all_steps(respond.steps)]
    assert any(text.startswith("Reply to $conversation") for text in steps)
    assert any(
        "ToolSummary(" in text for text in steps
    )  # reflect_on_tool_use is off: the summary ends the turn


def test_tools_named_like_the_agents_own_playbooks_get_names_of_their_own() -> None:
    result = import_target("tests.fixtures.autogen.assistant:clashing_team")
    assert errors(result.program) == []
    clerk = result.program.agent("Clerk")
    names = [playbook.name for playbook in clerk.playbooks]
    assert len(names) == len(set(names)), names
    assert clerk.playbook("Respond").steps
    assert 'tool="respond"' in clerk.playbook("RespondTool").steps[1].text
    assert 'tool="take_turn"' in clerk.playbook("TakeTurnTool").steps[1].text


async def test_the_model_picks_the_speaker_of_a_selector_group_chat() -> None:
    import tests.fixtures.autogen.teams as teams

    team = teams.selector_model
    await team.reset()
    expected = autogen_transcript(await team.run(task="Plan it"))
    await team.reset()
    picks = iter(teams.SELECTIONS)
    prompts: list[str] = []

    def choose(request: ModelRequest) -> str:
        prompts.append("".join(message.content for message in request.messages))
        line = request.metadata["line"]
        return f'`Step["GroupChat:{line}:EXE"]` `Var[$choice, "{next(picks)}"]`\nyld call'

    model = ScriptedModel(choose)
    result = import_target("tests.fixtures.autogen.teams:selector_model")
    with anyio.fail_after(60):
        actual = await run_playbook(result.program, "Run", task="Plan it", model=model)
    assert actual == expected
    assert model.calls == len(teams.SELECTIONS)
    assert "select the next role from $candidates" in prompts[0]
    assert "alice: alice counts its turns" in prompts[0]


def test_bad_targets_and_strict_imports_fail_clearly() -> None:
    with pytest.raises(ImportTargetError, match="pal import autogen reads"):
        import_target("tests.fixtures.autogen.agents:Counter")
    with pytest.raises(ImportTargetError, match="initiator= applies to ag2"):
        import_target("tests.fixtures.autogen.teams:swarm", initiator="planner")
    with pytest.raises(ImportTargetError, match="'Nobody' is not an agent of the group chat"):
        import_target(f"{AG2_DOCS}:manager", initiator="Nobody")
    with pytest.raises(ImportFailed, match="AG101"):
        import_target("tests.fixtures.autogen.diagnostic_teams:nested", strict=True)
    assert get_importer("autogen") is import_target


def test_the_import_command_writes_the_program(tmp_path, capsys) -> None:
    parser = argparse.ArgumentParser()
    imports.ARGUMENTS["import"](parser)
    output = tmp_path / "team.pal"
    args = parser.parse_args(["autogen", f"{DOCS}:swarm_basic_team", "-o", str(output)])
    assert imports.HANDLERS["import"](args) == 0
    err = capsys.readouterr().err
    assert "0 diagnostic(s)" in err and "3 agent(s)" in err
    assert "# Swarm" in output.read_text(encoding="utf-8")


async def test_a_participant_the_importer_cannot_run_fails_its_turn_with_the_reason() -> None:
    result = import_target("tests.fixtures.autogen.diagnostic_teams:nested")
    assert [item.code for item in result.diagnostics] == ["AG101", "AG103"]
    assert errors(result.program) == []
    with anyio.fail_after(60), pytest.raises(PlaybookFailed, match="a team inside a team is not imported"):
        await run_playbook(result.program, "Run", task="go", model=ScriptedModel([]))


def test_a_team_without_a_model_client_for_its_selector_still_names_lambdas() -> None:
    result = import_team(
        __import__("tests.fixtures.autogen.diagnostic_teams", fromlist=["lambdas"]).lambdas,
        source="tests.fixtures.autogen.diagnostic_teams:lambdas",
    )
    assert [item.code for item in result.diagnostics] == ["AG102", "AG102", "AG102"]
    assert errors(result.program) == []


def _all_steps(steps):
    for step in steps:
        yield step
        yield from _all_steps(step.children)


def test_a_selector_func_that_would_see_tool_call_events_is_named() -> None:
    result = import_target("tests.fixtures.autogen.diagnostic_teams:events")
    assert [item.code for item in result.diagnostics] == ["AG106"]
    assert "tool-call events of helper" in result.diagnostics[0].message


def test_an_agent_that_calls_its_own_model_client_is_named() -> None:
    result = import_target("tests.fixtures.autogen.diagnostic_teams:filtered")
    # No AG108: a tool-call summary of the wrapped AssistantAgent keeps its type in the transcript.
    assert [item.code for item in result.diagnostics] == ["AG104"]
    assert "outside PAL's model" in result.diagnostics[0].message


def test_the_import_command_takes_the_initiator_of_an_ag2_chat(tmp_path, capsys) -> None:
    parser = argparse.ArgumentParser()
    imports.ARGUMENTS["import"](parser)
    output = tmp_path / "chat.pal"
    args = parser.parse_args(["autogen", f"{AG2_DOCS}:manager", "--initiator", "Admin", "-o", str(output)])
    assert imports.HANDLERS["import"](args) == 0
    assert '$messages:list = [{"source": "Admin", "content": $task}]' in output.read_text(encoding="utf-8")
    capsys.readouterr()
    args = parser.parse_args(["autogen", f"{AG2_DOCS}:manager", "--initiator", "Nobody", "-o", str(output)])
    assert imports.HANDLERS["import"](args) == 1
    assert "'Nobody' is not an agent of the group chat" in capsys.readouterr().err
    args = parser.parse_args(["adk", "tests.fixtures.adk.deterministic:sequential", "--initiator", "Admin"])
    assert imports.HANDLERS["import"](args) == 1
    assert "--initiator applies to ag2 group chats" in capsys.readouterr().err


def test_what_changes_what_a_model_sees_is_named() -> None:
    result = import_target("tests.fixtures.autogen.diagnostic_teams:short_memory")
    assert [item.code for item in result.diagnostics] == ["AG104", "AG107"]
    assert "BufferedChatCompletionContext" in result.diagnostics[0].message
    assert "selector's model context" in result.diagnostics[1].message
    result = import_target("tests.fixtures.autogen.diagnostic_teams:ag2_settings")
    found = [(item.code, item.message.split(":")[0]) for item in result.diagnostics]
    assert [code for code, _ in found] == ["AG104", "AG104", "AG107"], found
    assert "process_all_messages_before_reply hooks" in result.diagnostics[0].message
    assert "process_message_before_send" in result.diagnostics[1].message
    assert "max_retries_for_selecting_speaker" in result.diagnostics[2].message
