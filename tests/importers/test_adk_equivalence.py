"""Imported ADK programs end in the same session state, with the same reply, as ADK's own Runner.

Deterministic trees and workflows run with no model at all (model None, a budget of 0 calls): every step
runs on the runtime's fast path or in ADK. LLM agents run with scripted models on both sides: ADK's
`ScriptedLlm` answers with function calls and text, PAL's `ScriptedModel` with the same decisions in the
line contract; the state their tools leave behind must agree.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from importers.adk import import_target
from pal_core.ir import Program
from pal_core.parser import parse
from pal_core.writer import write
from runtime.models.scripted import ScriptedModel
from tests.fixtures.adk import llm
from tests.importers.adk_runs import adk_outcome, pal_outcome, same

ROOT = Path(__file__).resolve().parents[2]
RUN_SECONDS = 60
pytestmark = pytest.mark.filterwarnings(
    # ADK's own AgentTool passes `plugins=` to the Runner it makes, which ADK 2.13 itself deprecates.
    "ignore:The `plugins` argument is deprecated:DeprecationWarning"
)


def _program(target: str) -> Program:
    """Imported strictly (nothing left unexpressed), written as text and read back."""
    return parse(write(import_target(target, strict=True).program))


def _cases(module_name: str) -> list[tuple[str, str, dict]]:
    module = importlib.import_module(f"tests.fixtures.adk.{module_name}")
    return [
        (f"{module_name}:{attribute}", f"{case}-{index}", given)
        for case, (attribute, inputs) in module.CASES.items()
        for index, given in enumerate(inputs)
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("target", "case", "given"),
    [*_cases("deterministic"), *_cases("workflows")],
    ids=lambda value: value if isinstance(value, str) and "-" in value else "",
)
async def test_a_deterministic_program_ends_like_adks_runner_with_no_model(
    target: str, case: str, given: dict
) -> None:
    module_name, _, attribute = target.partition(":")
    agent = getattr(importlib.import_module(f"tests.fixtures.adk.{module_name}"), attribute)
    program = _program(f"tests.fixtures.adk.{target}")
    with anyio.fail_after(RUN_SECONDS):
        expected = await adk_outcome(agent, given["message"], given["state"])
        actual = await pal_outcome(program, given["message"], given["state"])
    assert same(expected, actual), (case, expected, actual)


def _contract(*answers: str) -> ScriptedModel:
    return ScriptedModel(list(answers))


LLM_CASES = {
    "tools": (
        "weather",
        llm.weather_agent,
        [
            llm.call("remember_city", city="Paris"),
            llm.call("get_weather", city="Paris"),
            llm.text("It is sunny in Paris."),
        ],
        [
            '`$noted = RememberCity(city="Paris")`\n`$weather = GetWeather(city="Paris")`\nyld call',
            'Return["It is sunny in Paris."]\nyld return',
        ],
        ("Weather in Paris?", {"user:name": "Ada", "cities": 2}),
    ),
    "transfer": (
        "desk",
        llm.help_desk,
        [llm.call("transfer_to_agent", agent_name="billing"), llm.text("Your refund is on its way.")],
        [
            '`TransferToAgent(agent_name="billing")`\nReturn[""]\nyld return',
            'Return["Your refund is on its way."]\nyld return',
        ],
        ("Refund please", {"user:name": "Ada"}),
    ),
    "transfer-back-to-parent": (
        "desk",
        llm.help_desk,
        [
            llm.call("transfer_to_agent", agent_name="billing"),
            llm.call("transfer_to_agent", agent_name="desk"),
            llm.text("Back at the desk."),
        ],
        [
            '`TransferToAgent(agent_name="billing")`\nReturn[""]\nyld return',
            '`TransferToAgent(agent_name="desk")`\nReturn[""]\nyld return',
            'Return["Back at the desk."]\nyld return',
        ],
        ("Refund please", {}),
    ),
    "agent-tool": (
        "research",
        llm.researcher,
        [
            llm.call("summarizer", request="A long text about cats."),
            llm.text("Cats, briefly."),
            llm.text("It is about cats."),
        ],
        [
            '`$summary = Summarizer(request="A long text about cats.")`\nyld call',
            'Return["Cats, briefly."]\nyld return',
            'Return["It is about cats."]\nyld return',
        ],
        ("What is this about?", {}),
    ),
    "workflow-llm-node": (
        "writing",
        llm.writing_flow,
        [llm.text("A draft about cats.")],
        ['Return["A draft about cats."]\nyld return'],
        ("cats", {"topic": "cats"}),
    ),
    "instructions-with-code-blocks": (
        "pipeline",
        llm.code_pipeline,
        [llm.text("```python\nprint('hi')\n```"), llm.text("Looks fine.")],
        [
            "Return[\"```python\\nprint('hi')\\n```\"]\nyld return",
            'Return["Looks fine."]\nyld return',
        ],
        ("Print hi", {}),
    ),
    "exit-loop": (
        "refine",
        llm.refiner,
        [llm.text("draft one"), llm.call("exit_loop")],
        ['Return["draft one"]\nyld return', '`ExitLoop()`\nReturn[""]\nyld return'],
        ("Write", {}),
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(LLM_CASES))
async def test_an_llm_agent_tree_with_scripted_models_ends_like_adks_runner(name: str) -> None:
    attribute, build, adk_answers, pal_answers, (message, state) = LLM_CASES[name]
    adk_model = llm.ScriptedLlm(responses=adk_answers)
    pal_model = _contract(*pal_answers)
    program = _program(f"tests.fixtures.adk.llm:{attribute}")
    with anyio.fail_after(RUN_SECONDS):
        expected = await adk_outcome(build(adk_model), message, state)
        actual = await pal_outcome(program, message, state, model=pal_model, calls=len(pal_answers))
    assert same(expected, actual), (expected, actual)
    assert pal_model.calls == len(pal_answers) and len(adk_model.requests) == len(adk_answers)


@pytest.mark.anyio
async def test_the_model_sees_the_instruction_filled_from_state_and_the_conversation() -> None:
    program = _program("tests.fixtures.adk.llm:weather")
    model = _contract('Return["Hi."]\nyld return')
    with anyio.fail_after(RUN_SECONDS):
        await pal_outcome(program, "Hello", {"user:name": "Ada", "city": "Oslo"}, model=model, calls=1)
    prompt = model.requests[0].messages[-1].content
    assert "You help Ada with the weather. The last city was Oslo." in prompt
    assert "user: Hello" in prompt


def test_pal_run_prints_the_final_state_and_reply_as_one_json_object(tmp_path: Path) -> None:
    """`pal run out.pal --input '{"message": ..., "state": ...}'` on an imported tree prints what ADK's
    Runner leaves: the session state and the final reply."""
    from tests.fixtures.adk import deterministic

    program = tmp_path / "pipeline.pal"
    program.write_text(
        write(import_target("tests.fixtures.adk.deterministic:sequential").program), encoding="utf-8"
    )
    given = {"message": "hi", "state": {"user:name": "Ada"}}
    completed = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "run", str(program), "--input", json.dumps(given), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    expected = anyio.run(adk_outcome, deterministic.sequential, given["message"], given["state"])
    assert json.loads(completed.stdout) == expected
    assert expected["state"]["greeted"] == "Ada" and expected["reply"] == "second: count is 11"


@pytest.mark.anyio
async def test_a_workflow_node_that_asks_the_user_waits_for_the_answer_like_a_resumed_adk_run() -> None:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from runtime.api import run_playbook
    from runtime.program_run import RunLimits
    from tests.fixtures.adk import workflows

    runner = InMemoryRunner(agent=workflows.asking, app_name="asking")
    session = await runner.session_service.create_session(app_name="asking", user_id="u", state={})
    asked = []
    with anyio.fail_after(RUN_SECONDS):
        message = types.Content(role="user", parts=[types.Part(text="hi")])
        async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            asked.extend(event.get_function_calls())
        assert [call.args["message"] for call in asked] == ["What is your name?"]
        answer = types.FunctionResponse(id=asked[0].id, name=asked[0].name, response={"result": "Ada"})
        resume = types.Content(role="user", parts=[types.Part(function_response=answer)])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=resume):
            pass
        final = await runner.session_service.get_session(
            app_name="asking", user_id="u", session_id=session.id
        )
        program = _program("tests.fixtures.adk.workflows:asking")
        actual = await run_playbook(
            program,
            "Invoke",
            model=None,
            messages=["Ada"],
            limits=RunLimits(max_model_calls=0),
            message="hi",
            state={},
        )
    assert final is not None and actual["state"] == final.state == {"asked": True, "greeting": "Hello, Ada!"}
