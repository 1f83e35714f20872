"""The prompt marks the part every turn of a playbook shares (what a model keeps evaluated across turns and
processes): it is the same text in every turn of the playbook, it ends where the turn's own part begins,
and nothing that changes during a run (state, log, messages, the task) is in it."""

from __future__ import annotations

import pytest

from runtime.api import run_program
from runtime.loader import load
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from tests.runtime.test_order_status_demo import DEMO, desk

pytestmark = pytest.mark.anyio


def _parts(request: ModelRequest) -> tuple[str, str]:
    """The stable text (every message before the marked one, and its marked start) and the rest."""
    prefix = request.stable_prefix
    assert prefix is not None, "a turn's prompt marks its stable part"
    index, chars = prefix
    marked = request.messages[index]
    stable = "".join(message.content for message in request.messages[:index]) + marked.content[:chars]
    return stable, marked.content[chars:]


async def test_every_turn_of_a_playbook_shares_its_stable_part_and_the_turn_is_after_it() -> None:
    model = ScriptedModel(desk)
    result = await run_program(load(DEMO), model=model, messages=["Hi! Where is my order 2718?"])
    assert result.status == "exit", result.reason
    first, second = (_parts(request) for request in model.requests)
    assert first[0] == second[0]  # the same stable text in both turns
    assert "## The playbook you are executing" in first[0]
    for stable, rest in (first, second):
        assert stable.endswith("\n\n") and rest.startswith("## State\n")
        assert "## Your task" in rest and "## Your task" not in stable
    assert "2718" in second[1] and "2718" not in second[0]  # the user's message is in the turn's part


async def test_a_retry_keeps_the_mark_on_the_first_user_message() -> None:
    answers = iter(["not an answer at all"])

    def once_wrong(request: ModelRequest) -> str:
        return next(answers, None) or desk(request)

    model = ScriptedModel(once_wrong)
    result = await run_program(load(DEMO), model=model, messages=["Hi! Where is my order 3141?"])
    assert result.status == "exit", result.reason
    first, retry = model.requests[:2]
    assert len(retry.messages) == len(first.messages) + 2  # the wrong answer and the correction follow
    assert retry.stable_prefix == first.stable_prefix == (1, first.messages[1].stable_chars)
    assert _parts(retry)[0] == _parts(first)[0]
