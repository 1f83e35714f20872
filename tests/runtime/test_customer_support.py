"""The seeds' CustomerSupport program, compiled from the seed markdown, run end to end under a
ScriptedModel that follows the contract: ask, re-ask on an invalid number (the JMP loop), report, end."""

from __future__ import annotations

import re

import anyio
import pytest

from pal_core.compiler import compile_markdown
from runtime.humans import ScriptedHuman
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from runtime.program_run import ProgramRun
from runtime.trace import Tracer
from tests.conftest import FIXTURES

pytestmark = pytest.mark.anyio

SOURCE = (FIXTURES / "pb" / "seed_customer_support.pb").read_text(encoding="utf-8")


def last_user_message(request: ModelRequest) -> str:
    found = re.findall(r"from Human \(human\): (.*)", request.messages[-1].content)
    return found[-1] if found else ""


def customer_support_model(request: ModelRequest) -> str:
    """Plays the CPU for Greeting by the contract, deciding like a model would from the prompt."""
    line = request.metadata["line"]
    if line == "01":
        return (
            "recap – starting the support conversation\n"
            "plan – greet the user and ask for the order number\n"
            '`Step["Greeting:01:QUE"]` `Say("user", "Hello! What is your order number?")`\n'
            "trig? no\n"
            '`Step["Greeting:02:YLD"]` yld user'
        )
    if line == "03":
        answer = last_user_message(request)
        if not answer.isdigit():
            return (
                f"recap – the user gave {answer!r}, which is not an order number\n"
                "plan – ask them to try again\n"
                '`Step["Greeting:03:CND"]` the order number is invalid\n'
                '`Step["Greeting:03.01:QUE"]` `Say("user", "That does not look like an order number. Please try again.")`\n'
                '`Step["Greeting:03.02:YLD"]` yld user'
            )
        return (
            f"recap – the user gave order number {answer}\n"
            "plan – look up the order and report its status\n"
            '`Step["Greeting:03:CND"]` the order number is valid, skipping the retry\n'
            f'`Step["Greeting:04:QUE"]` looked up order {answer}\n'
            '`Var[$order_status, "shipped"]`\n'
            "trig? no\n"
            '`Step["Greeting:05:QUE"]` `Say("user", "Your order has shipped.")`\n'
            '`Step["Greeting:06:RET"]` `Return[]` `Var[$__, "Greeted the user and reported the order status."]`\n'
            "yld return"
        )
    raise AssertionError(f"unexpected prompt at line {line}")


async def test_customer_support_runs_end_to_end_with_the_retry_loop() -> None:
    program = compile_markdown(SOURCE, file="seed_customer_support.pb")
    model = ScriptedModel(customer_support_model)
    tracer = Tracer()
    human = ScriptedHuman(["my order is lost", "12345678"])
    run = ProgramRun(program, model=model, human=human, tracer=tracer)
    with anyio.fail_after(10):
        result = await run.run()

    assert result.status == "idle", result.reason
    assert result.messages_to_user == [
        "Hello! What is your order number?",
        "That does not look like an order number. Please try again.",
        "Your order has shipped.",
    ]
    executed = [(event.line, event.opcode, event.model_call is None) for event in tracer.steps()]
    assert executed == [
        ("01", "QUE", False),
        ("02", "YLD", False),
        ("03", "CND", False),
        ("03.01", "QUE", False),
        ("03.02", "YLD", False),
        ("03.03", "JMP", True),  # the jump back runs on the fast path
        ("03", "CND", False),
        ("04", "QUE", False),
        ("05", "QUE", False),
        ("06", "RET", False),
    ]
    assert model.calls == 3
    by_line = {event.line: event for event in tracer.steps()}
    assert by_line["04"].changed == {"order_status": "shipped"}
    assert [event.model_call for event in tracer.steps() if event.tokens is not None] == [1, 2, 3]
    assert result.variables["CustomerSupport:1000"]["order_status"] == "shipped"
    assert human.remaining == 0
