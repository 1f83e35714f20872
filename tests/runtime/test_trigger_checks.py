"""The trigger check: after a message arrives, the model judges the agent's natural-language triggers in a
turn of its own kind (RequestKind.TRIGGERS). Scripted models see that kind: an answer meant for it answers it,
and a script that did not expect it stops with an error saying so instead of silently going out of step."""

from __future__ import annotations

import pytest

from pal_core.parser import parse
from runtime.api import run_program
from runtime.humans import ScriptedHuman
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.shaping import local_turn_shaping
from runtime.models import ModelError, RequestKind, ScriptedAnswer, ScriptedModel
from runtime.program_run import ProgramRun

pytestmark = pytest.mark.anyio

PROGRAM = parse(
    """# Shop
Takes orders.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Say(user, Ask the user for their order)
02:YLD for user
03:QUE Say(user, Thank the user)
04:YLD for exit

## Refund() -> None
### Triggers
T1:CND When the user asks for a refund
### Steps
01:QUE Say(user, "Refunds take three days.")
02:RET
""",
    file="shop.pal",
)
ASK = 'recap – r\nplan – p\n`Step["Main:01:QUE"]` `Say("user", "What would you like?")`\n`Step["Main:02:YLD"]` yld user'
THANK = 'recap – r\nplan – p\n`Step["Main:03:QUE"]` `Say("user", "Thanks!")`\n`Step["Main:04:YLD"]` yld exit'


async def test_a_trigger_check_is_its_own_kind_of_turn_and_fires_the_playbook() -> None:
    fires = ScriptedAnswer('trig? `Trigger["Refund:T1:CND"]`\nyld call', kind=RequestKind.TRIGGERS)
    model = ScriptedModel([ASK, fires, THANK])
    result = await run_program(PROGRAM, model=model, messages=["I want a refund"])
    assert result.status == "exit", result.reason
    assert [request.kind for request in model.requests] == [
        RequestKind.TURN,
        RequestKind.TRIGGERS,
        RequestKind.TURN,
    ]
    assert "Refunds take three days." in result.messages_to_user


async def test_a_script_that_did_not_expect_the_trigger_check_says_so() -> None:
    model = ScriptedModel([ASK, THANK])
    result = await run_program(PROGRAM, model=model, messages=["I want a refund"])
    assert result.status == "error"
    assert "call 2 is a trigger check, but scripted answer 2 is for a playbook turn" in result.reason
    assert '"kind": "triggers"' in result.reason


async def test_an_answer_meant_for_a_trigger_check_answers_nothing_else() -> None:
    model = ScriptedModel([ScriptedAnswer("trig? no\nyld call", kind=RequestKind.TRIGGERS)])
    result = await run_program(PROGRAM, model=model)
    assert result.status == "error" and "call 1 is a turn request" in result.reason


async def test_a_model_that_takes_grammars_gets_the_trigger_checks_grammar() -> None:
    model = ScriptedModel(
        [ASK, ScriptedAnswer("trig? no\nyld call", kind="triggers"), THANK],  # type: ignore[list-item]
        shaping=local_turn_shaping(),
    )
    run = ProgramRun(PROGRAM, model=model, human=ScriptedHuman(["hello"]))
    result = await run.run()
    assert result.status == "exit", result.reason
    check = model.requests[1]
    assert check.kind is RequestKind.TRIGGERS and check.grammar is not None
    grammar = parse_gbnf(check.grammar)
    assert grammar.accepts('trig? `Trigger["Refund:T1:CND"]`\nyld call') and grammar.accepts(
        "trig? no\nyld call"
    )
    assert not grammar.accepts('trig? `Trigger["Main:T1:BGN"]`\nyld call')


def test_scripted_jsonl_files_mark_trigger_check_answers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "answers.jsonl"
    path.write_text('{"text": "a"}\n{"kind": "triggers", "text": "trig? no\\nyld call"}\n', encoding="utf-8")
    ScriptedModel.from_jsonl(path)
    path.write_text('{"kind": "trigger", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(
        ModelError, match=r'answers.jsonl:1: "kind" must be one of turn, triggers, raw, react'
    ):
        ScriptedModel.from_jsonl(path)
