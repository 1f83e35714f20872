"""ReAct agents, by hand and from the factories, become PAL: the same decisions end in LangGraph's state.

Each graph of tests/fixtures/langgraph/react_shapes.py runs under LangGraph with LangChain's fake chat
model deciding (two tools in one round, then a reply), then as the imported program with a ScriptedModel
making the same decisions in PAL's format; the final states are the same messages (ids aside).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from tests.fixtures.langgraph import react_shapes
from tests.fixtures.langgraph.fakes import calls
from tests.importers.langgraph_runs import comparable, imported, run_imported

QUESTION = {
    "messages": [{"role": "user", "content": "How far is Porto from Lisbon, and how is the weather there?"}]
}
REPLY = "Porto is 313 km from Lisbon, and it is sunny and 24 degrees there."


def decisions() -> list[AIMessage]:
    """What the fake model decides (new messages each run: LangGraph's agents name the ones they return)."""
    return [
        calls(
            ("distance_km", {"origin": "Lisbon", "destination": "Porto"}), ("get_weather", {"city": "Porto"})
        ),
        AIMessage(content=REPLY),
    ]


REACT_ANSWERS = [
    '`$d = DistanceKm(origin="Lisbon", destination="Porto")`\n`$w = GetWeather(city="Porto")`\nyld call',
    f'Return["{REPLY}"]\nyld return',
]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("graph", "model"),
    [("prebuilt_react", "react_model"), ("prebuilt_agent", "agent_model")],
)
async def test_a_prebuilt_agent_is_a_react_playbook_ending_in_langgraphs_state(
    graph: str, model: str
) -> None:
    getattr(react_shapes, model).answer(decisions())
    expected = await getattr(react_shapes, graph).ainvoke(QUESTION)
    getattr(react_shapes, model).answer([])
    actual, scripted = await run_imported(
        f"tests.fixtures.langgraph.react_shapes:{graph}", QUESTION, REACT_ANSWERS
    )
    assert comparable(actual) == comparable(expected)
    assert [message.type for message in actual["messages"]] == ["human", "ai", "tool", "tool", "ai"]
    assert scripted.calls == 2
    first = scripted.requests[0]
    assert react_shapes.SYSTEM_PROMPT in first.messages[1].content


CHAT_ANSWERS = [
    '`$r1 = distance_km(origin="Lisbon", destination="Porto")`\n`$r2 = get_weather(city="Porto")`\nyld call',
    f'Return["{REPLY}"]\nyld return',
]


@pytest.mark.anyio
async def test_a_hand_written_loop_is_one_agent_ending_in_langgraphs_state() -> None:
    react_shapes.model.answer(decisions())
    expected = await react_shapes.hand_written.ainvoke(QUESTION)
    react_shapes.model.answer([])
    target = "tests.fixtures.langgraph.react_shapes:hand_written"
    actual, scripted = await run_imported(target, QUESTION, REACT_ANSWERS)
    assert comparable(actual) == comparable(expected)
    assert scripted.calls == 2 and react_shapes.SYSTEM_PROMPT in scripted.requests[0].messages[1].content


@pytest.mark.anyio
async def test_a_loop_whose_prompt_is_made_at_run_time_keeps_its_model_node_in_python() -> None:
    react_shapes.custom_model.answer(decisions())
    expected = await react_shapes.hand_written_dynamic.ainvoke(QUESTION)
    react_shapes.custom_model.answer([])
    target = "tests.fixtures.langgraph.react_shapes:hand_written_dynamic"
    actual, scripted = await run_imported(target, QUESTION, CHAT_ANSWERS)
    assert comparable(actual) == comparable(expected)
    assert scripted.calls == 2
    assert (
        scripted.requests[0].messages[0].content.startswith(f"{react_shapes.SYSTEM_PROMPT} This is turn 1.")
    )


def test_a_hand_written_loop_is_read_as_the_agent_create_react_agent_would_be() -> None:
    from importers.langgraph import import_target

    program = import_target("tests.fixtures.langgraph.react_shapes:hand_written", strict=True).program
    assert [agent.name for agent in program.agents] == ["TravelDesk", "Agent"]
    agent = program.agent("Agent")
    assert agent is not None
    respond = agent.playbook("Respond")
    assert respond is not None and respond.description == react_shapes.SYSTEM_PROMPT
    assert {"GetWeather", "DistanceKm"} <= {playbook.name for playbook in agent.playbooks}
    graph = program.agent("TravelDesk")
    assert graph is not None and graph.playbook("Tools") is None  # the ToolNode is the agent's


def test_a_loop_the_importer_cannot_read_keeps_its_nodes_and_says_so() -> None:
    from importers.langgraph import import_target

    result = import_target("tests.fixtures.langgraph.react_shapes:hand_written_dynamic")
    assert [(item.code, item.subject) for item in result.diagnostics] == [("LG118", "node 'agent'")]
    (graph,) = result.program.agents
    assert graph.playbook("Tools") is not None and graph.playbook("Agent") is not None


@pytest.mark.anyio
async def test_create_agents_response_format_is_a_typed_return_ending_in_langgraphs_state() -> None:
    report = {"city": "Porto", "sunny": True, "degrees": 24}
    react_shapes.report_model.answer(
        [calls(("get_weather", {"city": "Porto"})), calls(("WeatherReport", report))]
    )
    expected = await react_shapes.structured_agent.ainvoke(QUESTION)
    react_shapes.report_model.answer([])
    answers = [
        '`$w = GetWeather(city="Porto")`\nyld call',
        'Return[{"city": "Porto", "sunny": true, "degrees": 24}]\nyld return',
    ]
    target = "tests.fixtures.langgraph.react_shapes:structured_agent"
    actual, _ = await run_imported(target, QUESTION, answers)
    assert comparable(actual) == comparable(expected)
    assert actual["structured_response"] == react_shapes.WeatherReport(**report)
    respond = imported(target).agents[0].playbook("Respond")
    assert respond is not None and respond.returns == "dict"
    schema = respond.metadata.returns_schema  # the schema: checked (V22), shown, and under the local grammar
    assert schema is not None and schema["required"] == ["city", "sunny", "degrees"]
