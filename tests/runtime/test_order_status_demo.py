"""The demo program (examples/order_status.pal, `make demo`) under a scripted model that follows the
contract: ask, store the number the user gave, look it up in the table, tell the true status and date."""

from __future__ import annotations

import re

import pytest

from runtime.api import run_program
from runtime.loader import load
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from tests.conftest import FIXTURES

pytestmark = pytest.mark.anyio

DEMO = FIXTURES.parent.parent / "examples" / "order_status.pal"
TRUTH = {
    "2718": "Order 2718 (two ceramic mugs) is out for delivery, as of 5 March 2026.",
    "3141": "Order 3141 (a wool scarf) is delivered, as of 27 February 2026.",
}


def desk(request: ModelRequest) -> str:
    """Plays the CPU of OrderDesk.Main by the contract, taking the number from the user's message."""
    if request.metadata["line"] == "01":
        return (
            "recap – starting\nplan – greet and ask\n"
            '`Step["Main:01:QUE"]` `Say("user", "Hello! What is your order number?")`\ntrig? no\n'
            '`Step["Main:02:YLD"]`\nyld user'
        )
    said = re.findall(r"from Human \(human\): (.*)", request.messages[-1].content)[-1]
    number = re.search(r"\d+", said)
    return (
        "recap – the user named their order\nplan – note the number and look it up\n"
        f'`Step["Main:03:EXE"]`\n`Var[$order_number, {number.group() if number else 0}]`\ntrig? no\n'
        '`Step["Main:04:QUE"]` `$report:str = LookUpOrder(order_number=$order_number)`\nyld call'
    )


@pytest.mark.parametrize("order", sorted(TRUTH))
async def test_the_demo_tells_the_status_and_date_of_the_order_the_user_named(order: str) -> None:
    model = ScriptedModel(desk)
    result = await run_program(load(DEMO), model=model, messages=[f"Hi! Where is my order {order}?"])
    assert result.status == "exit", result.reason
    assert result.messages_to_user == ["Hello! What is your order number?", TRUTH[order]]
    assert model.calls == 2  # the lookup, the answer and the exit need no model


async def test_an_unknown_order_is_said_to_be_unknown() -> None:
    result = await run_program(load(DEMO), model=ScriptedModel(desk), messages=["It is order 9999"])
    assert result.messages_to_user[-1] == (
        "I could not find order 9999 in our table (the orders we have are 1042, 2718, 3141, 5077)."
    )
