"""The run-time helpers of imported LangGraph programs, checked against LangGraph's own behaviour."""

from __future__ import annotations

import operator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.channels.last_value import LastValue
from langgraph.errors import InvalidUpdateError
from langgraph.types import Command, Overwrite, Send

from importers.langgraph import support
from importers.langgraph.support import GraphStepError, SchemaError

SCHEMA = {
    "channels": {
        "x": {"type": "int"},
        "items": {"type": "list[int]", "reducer": "operator:add", "initial": []},
        "total": {"type": "int", "reducer": "operator:add"},
    }
}


def test_start_graph_starts_reducer_keys_empty_and_writes_the_input_through_reducers() -> None:
    state = support.start_graph({"x": 1, "items": [5], "other": "dropped"}, SCHEMA)
    assert state == {"items": [5], "x": 1}
    assert support.start_graph(None, SCHEMA) == {"items": []}


def test_start_graph_keeps_only_input_schema_keys() -> None:
    schema = {**SCHEMA, "input": ["x"]}
    assert support.start_graph({"x": 1, "items": [5]}, schema) == {"items": [], "x": 1}


def test_start_graph_refuses_a_non_dict_input() -> None:
    with pytest.raises(GraphStepError, match="must be a dict"):
        support.start_graph([1, 2], SCHEMA)


def test_apply_update_sets_values_and_folds_reducers() -> None:
    state = support.apply_update({"x": 1, "items": [1]}, {"x": 2, "items": [2], "nope": 3}, "a", SCHEMA)
    assert state == {"x": 2, "items": [1, 2]}


def test_a_reducer_key_without_a_value_takes_the_first_write_as_is() -> None:
    # BinaryOperatorAggregate starts MISSING when its type cannot be built: the first value is kept.
    state = support.apply_writes({}, [["a", {"total": 3}], ["b", {"total": 4}]], SCHEMA)
    assert state == {"total": 7}


def test_apply_update_accepts_none_and_commands_without_goto() -> None:
    assert support.apply_update({"x": 1}, None, "a", SCHEMA) == {"x": 1}
    assert support.apply_update({"x": 1}, Command(update={"x": 5}), "a", SCHEMA) == {"x": 5}
    assert support.apply_update({"x": 1}, Command(update=[("x", 6)]), "a", SCHEMA) == {"x": 6}


def test_apply_update_refuses_a_goto_the_program_does_not_branch_on() -> None:
    with pytest.raises(GraphStepError, match=r"node 'a' returned Command\(goto='b'\).*no destinations"):
        support.apply_update({}, Command(goto="b"), "a", SCHEMA)
    assert support.apply_update({}, Command(goto="b", update={"x": 1}), "a", SCHEMA, routes=["b"]) == {"x": 1}


def test_apply_update_refuses_a_command_to_the_parent_graph() -> None:
    with pytest.raises(GraphStepError, match="PARENT"):
        support.apply_update({}, Command(graph=Command.PARENT, goto="b"), "a", SCHEMA, routes=["b"])


def test_apply_update_refuses_a_value_that_is_not_an_update() -> None:
    with pytest.raises(GraphStepError, match=r"node 'a' returned str"):
        support.apply_update({}, "oops", "a", SCHEMA)


def test_two_writes_to_a_value_key_in_one_superstep_fail_like_langgraph() -> None:
    with pytest.raises(GraphStepError, match=r"'x' was written by a, b in one superstep"):
        support.apply_writes({}, [["a", {"x": 1}], ["b", {"x": 2}]], SCHEMA)
    channel = LastValue(int)
    with pytest.raises(InvalidUpdateError):
        channel.update([1, 2])


def test_apply_writes_refuses_malformed_writes() -> None:
    with pytest.raises(GraphStepError, match="must be \\[node, update\\]"):
        support.apply_writes({}, [{"x": 1}], SCHEMA)


def test_overwrite_replaces_a_reducer_value() -> None:
    state = support.apply_writes(
        {"items": [1]}, [["a", {"items": Overwrite([9])}], ["b", {"items": [2]}]], SCHEMA
    )
    assert state == {"items": [9]}
    state = support.apply_update({"items": [1]}, {"items": {"__overwrite__": [7]}}, "a", SCHEMA)
    assert state == {"items": [7]}


def test_pydantic_and_dataclass_updates_follow_langgraphs_none_rule() -> None:
    from dataclasses import dataclass

    from pydantic import BaseModel

    class Update(BaseModel):
        x: int | None = None
        items: list[int] | None = None

    assert support.apply_update({}, Update(x=3), "a", SCHEMA) == {"x": 3}
    assert support.apply_update({"x": 1}, Update(x=None), "a", SCHEMA) == {"x": None}

    @dataclass
    class DataUpdate:
        x: int | None = None

    assert support.apply_update({"x": 1}, DataUpdate(), "a", SCHEMA) == {"x": 1}
    assert support.apply_update({"x": 1}, DataUpdate(x=4), "a", SCHEMA) == {"x": 4}


@st.composite
def supersteps(draw: st.DrawFn) -> list[list[Any]]:
    """Writes of parallel tasks to a reducer key: plain values and the odd Overwrite."""
    steps = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        writes = draw(st.lists(st.lists(st.integers(-5, 5), max_size=3), min_size=1, max_size=3))
        overwrite_at = draw(st.one_of(st.none(), st.integers(0, len(writes) - 1)))
        steps.append(
            [Overwrite(value) if index == overwrite_at else value for index, value in enumerate(writes)]
        )
    return steps


@settings(max_examples=150, deadline=None)
@given(steps=supersteps(), start=st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=2)))
def test_reducer_writes_match_langgraphs_binary_operator_channel(
    steps: list[list[Any]], start: list[int] | None
) -> None:
    channel = BinaryOperatorAggregate(list, operator.add)
    state: dict[str, Any] = support.start_graph({} if start is None else {"items": start}, SCHEMA)
    if start is not None:
        channel.update([start])
    for writes in steps:
        channel.update(writes)
        state = support.apply_writes(
            state, [[f"n{index}", {"items": value}] for index, value in enumerate(writes)], SCHEMA
        )
    assert state["items"] == channel.get()


def test_destination_maps_results_through_the_path_map() -> None:
    assert support.destination("big", "a", {"big": "b", "small": "c"}) == "b"
    assert support.destination(True, "a", [[True, "b"], [False, "c"]]) == "b"
    assert support.destination("c", "a", ["b", "c", "__end__"]) == "c"
    assert support.destination(["c"], "a", ["b", "c"]) == "c"
    assert support.destination("__end__", "a", ["b", "__end__"]) == "__end__"
    assert support.destination([], "a", ["b"]) == "__end__"


@pytest.mark.parametrize(
    ("result", "ends", "message"),
    [
        ("huge", {"big": "b"}, "not in its path map"),
        ("d", ["b", "c"], "not one of its destinations"),
        (None, ["b"], "did not return a valid destination"),
        ("__start__", ["b"], "did not return a valid destination"),
        (["b", "c"], ["b", "c"], "several destinations"),
        (3, None, "not a node name"),
        (Send("b", {}), ["b"], "did not expect"),
    ],
)
def test_destination_refuses_what_the_program_cannot_follow(result: Any, ends: Any, message: str) -> None:
    with pytest.raises(GraphStepError, match=message):
        support.destination(result, "a", ends)


def test_several_destinations_come_in_the_programs_order_without_end() -> None:
    order = ["b", "c", "d"]
    assert support.destinations(["d", "b"], "a", ["b", "c", "d"], order=order) == ["b", "d"]
    assert support.destinations("c", "a", ["b", "c", "d", "__end__"], order=order) == ["c"]
    assert support.destinations("__end__", "a", ["b", "__end__"], order=order) == []
    sends = [Send("d", {"v": 1}), Send("b", {"v": 2}), Send("d", {"v": 3})]
    assert support.destinations(sends, "a", ["b", "d"], sends=True, order=["b", "d"]) == ["b", "d"]
    assert support.destinations([], "a", ["b", "d"], sends=True, order=["b", "d"]) == []
    with pytest.raises(GraphStepError, match=r"named \['e'\], but the import found only \['b', 'c', 'd'\]"):
        support.destinations(["e"], "a", None, order=order)


def test_packets_for_several_nodes_keep_langgraphs_order() -> None:
    result = ["c", Send("d", {"v": 1}), Send("b", {"v": 2}), "b"]
    assert support.send_packets(result, ["b", "c", "d"], {"s": 0}) == [
        ["b", {"s": 0}],
        ["c", {"s": 0}],
        ["d", {"v": 1}],
        ["b", {"v": 2}],
    ]


def test_a_parallel_goto_names_its_nodes_in_the_programs_order() -> None:
    order = ["audit", "notify", "close"]
    assert support.command_gotos(Command(goto=["notify", "audit"]), "t", order) == ["audit", "notify"]
    assert support.command_gotos(Command(goto="close"), "t", order) == ["close"]
    assert support.command_gotos(Command(goto="__end__"), "t", order) == []
    assert support.command_gotos(Command(update={"x": 1}), "t", order) == []
    with pytest.raises(GraphStepError, match="not a Send fan-out"):
        support.command_gotos(Command(goto=[Send("audit", {})]), "t", order)


def test_sends_to_one_node_are_one_destination_with_their_args_in_order() -> None:
    result = [Send("m", {"v": 1}), Send("m", {"v": 2})]
    assert support.destination(result, "a", ["m"], sends=True) == "m"
    assert support.send_args(result, "m", {"s": 0}) == [{"v": 1}, {"v": 2}]
    # A plain route to the node runs it on the state, before the Send tasks (LangGraph's order).
    assert support.send_args(["m", Send("m", {"v": 1})], "m", {"s": 0}) == [{"s": 0}, {"v": 1}]
    with pytest.raises(GraphStepError, match="sent a packet to END"):
        support.destination([Send("__end__", {})], "a", None, sends=True)


def test_command_goto_names_the_route_or_nothing() -> None:
    assert support.command_goto(Command(goto="b"), "a") == "b"
    assert support.command_goto({"x": 1}, "a") == ""
    assert support.command_goto(Command(update={"x": 1}), "a") == ""
    assert support.command_goto([Command(goto="b"), {"x": 1}], "a") == "b"
    with pytest.raises(GraphStepError, match="follows one destination"):
        support.command_goto(Command(goto=["b", "c"]), "a")
    with pytest.raises(GraphStepError, match="not a Send fan-out"):
        support.command_goto(Command(goto=Send("b", {})), "a")


def test_state_view_selects_keys_and_builds_classes() -> None:
    assert support.state_view({"a": 1, "b": 2}, keys=["a"]) == {"a": 1}
    view = support.state_view({"name": "Ada"}, model="tests.fixtures.langgraph.pydantic_state:State")
    assert (view.name, view.visits, view.notes) == ("Ada", 0, [])


def test_finish_graph_returns_the_output_keys_that_have_values_in_order() -> None:
    schema = {**SCHEMA, "output": ["total", "x"]}
    assert list(support.finish_graph({"x": 1, "items": [], "total": 2}, schema)) == ["total", "x"]
    assert support.finish_graph({"items": []}, SCHEMA) == {"items": []}


def test_state_value_is_a_get_with_default() -> None:
    assert support.state_value({"active_agent": "Bob"}, "active_agent", "Alice") == "Bob"
    assert support.state_value({}, "active_agent", "Alice") == "Alice"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ([], "must be a dict"),
        ({"channels": {"x": "int"}}, "must be a dict such as"),
        ({"channels": {"x": {"reducer": "operator"}}}, "is not an import path"),
        ({"channels": {"x": {"reducer": "operator:nope"}}}, "cannot import"),
        ({"channels": {}, "output": "x"}, "must be a list"),
    ],
)
def test_a_malformed_schema_is_a_clear_error(schema: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        support.finish_graph({}, schema)


def test_a_factory_makes_a_starting_value_that_is_not_a_literal() -> None:
    schema = {
        "channels": {"tags": {"type": "set[str]", "reducer": "operator:or_", "factory": "builtins:set"}}
    }
    state = support.start_graph({"tags": {"a"}}, schema)
    assert support.apply_update(state, {"tags": {"b"}}, "n", schema) == {"tags": {"a", "b"}}


@pytest.mark.anyio
async def test_resume_node_answers_interrupts_in_order_like_a_resumed_run() -> None:
    node = "tests.fixtures.langgraph.interrupt:ask_name"
    first = await support.resume_node(node, {}, [])
    assert support.is_interrupted(first)
    assert support.interrupt_question(first) == "What is your name?"
    done = await support.resume_node(node, {}, ["  Ada "])
    assert not support.is_interrupted(done)
    assert done == {"name": "Ada"}
    with pytest.raises(GraphStepError, match="asked nothing"):
        support.interrupt_question(done)


def test_add_answer_reads_the_text_of_a_waited_for_message() -> None:
    class Message:
        content = "Ada"

    assert support.add_answer(["x"], [Message()]) == ["x", "Ada"]
    assert support.add_answer([], "plain") == ["plain"]


def test_handoff_is_a_command_to_the_agent() -> None:
    command = support.handoff("Bob", {"active_agent": "Bob"})
    assert isinstance(command, Command)
    assert (command.goto, command.update) == ("Bob", {"active_agent": "Bob"})


def test_agent_reply_keeps_the_last_message_and_hands_back_to_the_supervisor() -> None:
    ai = AIMessage(content="calling", tool_calls=[{"name": "t", "args": {}, "id": "1"}])
    tool = ToolMessage(content="42", tool_call_id="1")
    output = {"messages": [HumanMessage(content="hi"), ai, tool]}
    reply = support.agent_reply(output, "last_message", "math_expert")
    assert reply["messages"] == [ai, tool]
    handed = support.agent_reply(
        {"messages": [HumanMessage(content="hi")]}, "full_history", "m", "supervisor"
    )
    assert [message.content for message in handed["messages"]] == [
        "hi",
        "Transferring back to supervisor",
        "Successfully transferred back to supervisor",
    ]
    with pytest.raises(GraphStepError, match="'messages' list"):
        support.agent_reply({"x": 1}, "last_message", "m")
    with pytest.raises(GraphStepError, match="mode must be"):
        support.agent_reply({"messages": []}, "everything", "m")


def test_unsupported_fails_with_the_reason() -> None:
    with pytest.raises(GraphStepError, match="node 'double': it is a lambda"):
        support.unsupported("double", "it is a lambda")


def test_every_helper_is_listed_for_binding() -> None:
    assert set(support.HELPERS) <= set(support.__all__)
    for name, function in support.HELPERS.items():
        assert getattr(support, name) is function
