"""A supervisor with two ReAct workers (tests/fixtures/langgraph/supervisor_team.py) ends in LangGraph's state.

The supervisor's structured-output call stays in its Python and is answered by the run's model; each
worker is a PAL agent whose react playbook calls its tool. LangGraph runs it with fakes deciding; the
imported program runs with a ScriptedModel giving the same decisions, in the order the run asks for them.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from tests.fixtures.langgraph import supervisor_team
from tests.fixtures.langgraph.fakes import calls
from tests.importers.langgraph_runs import comparable, run_imported

TARGET = "tests.fixtures.langgraph.supervisor_team:graph"
QUESTION = {"messages": [{"role": "user", "content": "How many people live in Lisbon, times three?"}]}
FOUND = "Lisbon has 2,100,000 inhabitants."
PRODUCT = "Three times that is 6,300,000."


def _route(target: str) -> AIMessage:
    return calls(("Route", {"next": target}))


@pytest.mark.anyio
async def test_the_supervisor_and_its_workers_end_in_langgraphs_state() -> None:
    supervisor_team.supervisor_model.answer([_route("researcher"), _route("calculator"), _route("FINISH")])
    supervisor_team.research_model.answer(
        [calls(("search", {"query": "Lisbon population"})), AIMessage(FOUND)]
    )
    # PAL keeps a tool's arguments in their declared types: multiply's floats are 2100000.0 and 3.0 however
    # the model writes them, so the fake writes them so too.
    supervisor_team.math_model.answer([calls(("multiply", {"a": 2100000.0, "b": 3.0})), AIMessage(PRODUCT)])
    expected = await supervisor_team.graph.ainvoke(QUESTION)
    for model in (
        supervisor_team.supervisor_model,
        supervisor_team.research_model,
        supervisor_team.math_model,
    ):
        model.answer([])
    answers = [
        'Return[{"next": "researcher"}]\nyld return',
        '`$found = Search(query="Lisbon population")`\nyld call',
        f'Return["{FOUND}"]\nyld return',
        'Return[{"next": "calculator"}]\nyld return',
        "`$product = Multiply(a=2100000, b=3)`\nyld call",
        f'Return["{PRODUCT}"]\nyld return',
        'Return[{"next": "FINISH"}]\nyld return',
    ]
    actual, scripted = await run_imported(TARGET, QUESTION, answers)
    assert comparable(actual) == comparable(expected)
    assert actual["next"] == "FINISH"
    assert [message.type for message in actual["messages"]] == [
        "human",
        "ai",
        "tool",
        "ai",
        "ai",
        "tool",
        "ai",
    ]
    assert actual["messages"][5].content == "6300000.0"
    assert scripted.calls == 7
    assert [request.metadata.get("playbook") for request in scripted.requests] == [
        "node 'supervisor'",
        "Respond",
        "Respond",
        "node 'supervisor'",
        "Respond",
        "Respond",
        "node 'supervisor'",
    ]


@pytest.mark.anyio
async def test_langgraph_supervisors_hand_offs_end_in_langgraphs_state() -> None:
    supervisor_team.team_model.answer(
        [
            calls(("transfer_to_researcher", {})),
            calls(("transfer_to_calculator", {})),
            AIMessage("Lisbon has 2,100,000 inhabitants; three times that is 6,300,000."),
        ]
    )
    supervisor_team.research_model.answer(
        [calls(("search", {"query": "Lisbon population"})), AIMessage(FOUND)]
    )
    supervisor_team.math_model.answer([calls(("multiply", {"a": 2100000.0, "b": 3.0})), AIMessage(PRODUCT)])
    expected = await supervisor_team.prebuilt_team.ainvoke(QUESTION)
    for model in (supervisor_team.team_model, supervisor_team.research_model, supervisor_team.math_model):
        model.answer([])
    answers = [
        "`$r = TransferToResearcher()`\nyld call",
        'Return[""]\nyld return',
        '`$found = Search(query="Lisbon population")`\nyld call',
        f'Return["{FOUND}"]\nyld return',
        "`$r = TransferToCalculator()`\nyld call",
        'Return[""]\nyld return',
        "`$product = Multiply(a=2100000, b=3)`\nyld call",
        f'Return["{PRODUCT}"]\nyld return',
        'Return["Lisbon has 2,100,000 inhabitants; three times that is 6,300,000."]\nyld return',
    ]
    actual, _ = await run_imported(
        "tests.fixtures.langgraph.supervisor_team:prebuilt_team", QUESTION, answers
    )
    assert comparable(actual) == comparable(expected)
