"""Turn shaping: every model turn of a real ProgramRun with a model that shapes its turns gets the turn's
grammar and the example turns; a scripted model answering inside the grammar runs the program to its end."""

from __future__ import annotations

import anyio
import pytest

from pal_core.parser import parse
from runtime.humans import ScriptedHuman
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.shaping import local_turn_shaping
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from runtime.program_run import ProgramRun
from runtime.prompt import SYSTEM, SYSTEM_UNDER_GRAMMAR
from tests.conftest import CORPUS

pytestmark = pytest.mark.anyio

ANSWERS = {
    "01": (
        "recap – the program starts\nplan – ask for the name\n"
        '`Step["GreetTheUser:01:QUE"]` `Say("user", "I am a demo agent.")`\ntrig? no\n'
        '`Step["GreetTheUser:02:QUE"]` `Say("user", "What is your name?")`\ntrig? no\n'
        '`Step["GreetTheUser:03:YLD"]`\nyld user'
    ),
    "04": (
        "recap – the user said their name\nplan – greet and say goodbye\n"
        '`Var[$name, "Ada"]`\ntrig? no\n'
        '`Step["GreetTheUser:04:QUE"]` `Say("user", "Hello Ada!")`\ntrig? no\n'
        '`Step["GreetTheUser:05:QUE"]` `Say("user", "Welcome, and goodbye.")`\ntrig? no\n'
        '`Step["GreetTheUser:06:YLD"]`\nyld exit'
    ),
}


async def test_each_turn_gets_its_grammar_and_examples_and_answers_inside_it_run_the_program() -> None:
    program = parse((CORPUS / "02-personalized-greeting.pbasm").read_text(encoding="utf-8"))
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return ANSWERS[request.metadata["line"]]

    run = ProgramRun(
        program,
        model=ScriptedModel(answer, shaping=local_turn_shaping()),
        human=ScriptedHuman(["Ada"]),
    )
    with anyio.fail_after(10):
        result = await run.run()
    assert result.status == "exit", result.reason
    assert result.messages_to_user == [
        "I am a demo agent.",
        "What is your name?",
        "Hello Ada!",
        "Welcome, and goodbye.",
    ]
    assert [request.metadata["line"] for request in seen] == ["01", "04"]
    for request in seen:
        assert request.grammar is not None
        grammar = parse_gbnf(request.grammar)
        assert grammar.accepts(ANSWERS[request.metadata["line"]])
        assert not grammar.accepts(ANSWERS[request.metadata["line"]].replace("yld ", "yld call #"))
        prompt = request.messages[-1].content
        assert "Example 1: Continue executing GreetTheUser at line 01." in prompt
    # The second turn starts at 04, not at the playbook's start: a turn from 01 is not admitted there.
    assert not parse_gbnf(seen[1].grammar or "").accepts(ANSWERS["01"])
    # Under a grammar the system prompt is the short one: the grammar enforces the rules the full one spells out.
    assert {request.messages[0].content for request in seen} == {SYSTEM_UNDER_GRAMMAR}


async def test_a_turn_without_a_grammar_gets_the_full_system_prompt() -> None:
    program = parse((CORPUS / "02-personalized-greeting.pbasm").read_text(encoding="utf-8"))
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return ANSWERS[request.metadata["line"]]

    run = ProgramRun(program, model=ScriptedModel(answer), human=ScriptedHuman(["Ada"]))
    with anyio.fail_after(10):
        result = await run.run()
    assert result.status == "exit", result.reason
    assert [request.grammar for request in seen] == [None, None]
    assert {request.messages[0].content for request in seen} == {SYSTEM}
