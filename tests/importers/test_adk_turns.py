"""ADK tools that need the user's confirmation, and instructions only known at run time, both ways.

Each case runs under ADK's Runner with `ScriptedLlm` (a paused run resumed with the user's
ToolConfirmation, as an ADK client answers `adk_request_confirmation`) and as the imported program with
`ScriptedModel` answering the same decisions and the user answering through the run's user channel: the
same final session state, the same reply, and as many model calls on both sides.
"""

from __future__ import annotations

import datetime
import json

import anyio
import pytest

from importers.adk import import_target
from pal_core.parser import parse
from pal_core.writer import write
from runtime.models.scripted import ScriptedModel
from tests.fixtures.adk import confirming, dynamic, llm
from tests.importers.adk_runs import adk_outcome, pal_outcome, same

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning"),
]

RUN_SECONDS = 60
STATE = {"notes": ["old", "new"], "user:name": "Ada"}


def _call(tool: str, **arguments: object) -> str:
    from importers.common.naming import camel_case
    from importers.common.steps import literal

    given = ", ".join(f"{key}={literal(value)}" for key, value in arguments.items())
    return f"`$result = {camel_case(tool)}({given})`\nyld call"


def _text(value: str) -> str:
    return f'Return["{value}"]\nyld return'


CONFIRMATIONS = {
    # name: (the model's call, the replies after it, ADK client's answers, what the PAL user says)
    "always-with-context-yes": (
        ("delete_note", {"title": "old"}),
        ["Deleted."],
        [{"confirmed": True}],
        ["yes"],
    ),
    "always-with-context-no": (("delete_note", {"title": "old"}), ["Kept."], [{"confirmed": False}], ["no"]),
    "always-plain-function-yes": (("shout", {"text": "hi"}), ["Shouted."], [{"confirmed": True}], ["yes"]),
    "always-plain-function-no": (("shout", {"text": "hi"}), ["Quiet."], [{"confirmed": False}], ["no"]),
    "per-call-not-needed": (("spend", {"amount": 20.0}), ["Spent."], [], []),
    "per-call-yes": (("spend", {"amount": 200.0}), ["Spent."], [{"confirmed": True}], ["yes"]),
    "per-call-no": (("spend", {"amount": 200.0}), ["Not spent."], [{"confirmed": False}], ["no"]),
    # The tool asks itself: the model answers its first result, then again after the user's answer.
    "tool-asks-with-payload": (
        ("order", {"item": "pens"}),
        ["How many pens?", "Ordered."],
        [{"confirmed": True, "payload": {"quantity": 3}}],
        ['{"quantity": 3}'],
    ),
    "tool-asks-no": (
        ("order", {"item": "pens"}),
        ["How many?", "Cancelled."],
        [{"confirmed": False}],
        ["no"],
    ),
}


@pytest.mark.parametrize("name", sorted(CONFIRMATIONS))
async def test_a_confirmation_tool_asks_the_user_and_the_answer_resumes_the_call(name: str) -> None:
    (tool, arguments), replies, answers, said = CONFIRMATIONS[name]
    adk_model = llm.ScriptedLlm(
        responses=[llm.call(tool, **arguments), *(llm.text(reply) for reply in replies)]
    )
    pal_model = ScriptedModel([_call(tool, **arguments), *(_text(reply) for reply in replies)])
    program = parse(write(import_target("tests.fixtures.adk.confirming:office_agent", strict=True).program))
    with anyio.fail_after(RUN_SECONDS):
        expected = await adk_outcome(confirming.office(adk_model), "Help", STATE, confirmations=answers)
        actual = await pal_outcome(program, "Help", STATE, model=pal_model, calls=1 + len(replies), said=said)
    assert same(expected, actual), (expected, actual)
    assert len(adk_model.requests) == pal_model.calls == 1 + len(replies)


async def test_confirmation_tools_use_pals_approval_path() -> None:
    program = import_target("tests.fixtures.adk.confirming:office_agent").program
    office = program.agent("Office")
    assert office.playbook("DeleteNote").metadata.requires_approval is True
    assert office.playbook("Shout").metadata.requires_approval is True  # a plain function, bound by path
    assert office.playbook("Shout").metadata.python == "tests.fixtures.adk.confirming:shout"
    assert not office.playbook("Spend").metadata.requires_approval  # ADK decides per call: asked as it runs
    run_steps = [step.text for step in office.playbook("Run").all_steps()]
    assert any("ResumeTools(" in text for text in run_steps)  # `order` asks itself: resumed after the turn


async def test_a_refused_call_is_not_run_and_a_run_with_nobody_to_ask_refuses() -> None:
    program = import_target("tests.fixtures.adk.confirming:office_agent").program
    model = ScriptedModel([_call("delete_note", title="old"), _text("Kept.")])
    with anyio.fail_after(RUN_SECONDS):
        result = await pal_outcome(program, "Help", STATE, model=model, calls=2)  # nobody answers
    assert result["state"]["notes"] == ["old", "new"]
    assert "did not run: the user did not approve it" in model.requests[1].messages[-1].content


@pytest.mark.parametrize(
    ("attribute", "build", "state"),
    [
        ("analyst_agent", dynamic.analyst, {"tables": ["pies", "cakes"], "user:name": "Ada"}),
        ("greeter_agent", dynamic.greeter, {"language": "French", "user:name": "Ada"}),
    ],
)
async def test_an_instruction_is_computed_for_each_turn_as_adk_computes_it(attribute, build, state) -> None:
    """A callback rewriting the instruction, or a provider, is followed at run time; the date the module was
    imported on is not frozen into the program."""
    text = write(import_target(f"tests.fixtures.adk.dynamic:{attribute}", strict=True).program)
    assert datetime.date.today().isoformat() not in text
    adk_model = llm.ScriptedLlm(responses=[llm.text("Hello.")])
    pal_model = ScriptedModel([_text("Hello.")])
    with anyio.fail_after(RUN_SECONDS):
        expected = await adk_outcome(build(adk_model), "Hi", state)
        actual = await pal_outcome(parse(text), "Hi", state, model=pal_model, calls=1)
    assert same(expected, actual), (expected, actual)
    # ADK's system instruction is the agent's instruction, then ADK's own identity lines.
    adk_instruction = adk_model.requests[0].config.system_instruction.split("\n\nYou are an agent.")[0]
    pal_state = pal_model.requests[0].messages[-1].content  # the prompt shows $instruction's value
    assert f"$instruction:str = {json.dumps(adk_instruction, ensure_ascii=False)}" in pal_state


async def test_a_structured_reply_is_the_schemas_object_in_the_state_as_adk_keeps_it() -> None:
    """ADK's `output_schema`: the reply is a JSON object of the schema, kept as a dict under `output_key`;
    the imported Respond has the schema as its `returns_schema`, so a reply that does not fit is asked
    again (V22) and never reaches the state."""
    from tests.fixtures.adk import structured

    grade = {"letter": "B", "score": 84, "passed": True}
    program = import_target("tests.fixtures.adk.structured:grader_agent", strict=True).program
    respond = program.agents[0].playbook("Respond")
    assert respond is not None and respond.metadata.returns_schema is not None
    adk_model = llm.ScriptedLlm(responses=[llm.text(json.dumps(grade))])
    pal_model = ScriptedModel(
        [
            'Return[{"letter": "E", "score": 84, "passed": true}]\nyld return',  # E is not a grade
            f"Return[{json.dumps(grade)}]\nyld return",
        ]
    )
    with anyio.fail_after(RUN_SECONDS):
        expected = await adk_outcome(structured.grader(adk_model), "My essay about bees.", {})
        actual = await pal_outcome(program, "My essay about bees.", {}, model=pal_model, calls=2)
    assert same(expected, actual), (expected, actual)
    assert actual["state"]["grade"] == grade
    assert (
        "V22" in pal_model.requests[1].messages[-1].content
        and "letter" in pal_model.requests[1].messages[-1].content
    )
