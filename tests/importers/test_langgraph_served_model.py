"""The served chat call's request, answer reading and grammar (importers.langgraph.served_model,
chat_grammar), on their own: what the run's model is asked, what it may answer, what is refused."""

from __future__ import annotations

from typing import Literal

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from importers.langgraph.chat_grammar import chat_grammar
from importers.langgraph.served_model import _Refused, chat_call, chat_request, read_chat_answer
from runtime.local.gbnf_check import parse_gbnf
from runtime.program_run import RunLimits
from tests.fixtures.langgraph.react_shapes import TOOLS


class Verdict(BaseModel):
    """Whether the answer holds."""

    verdict: Literal["yes", "no"]
    score: int


def _tools_call(**kwargs: object) -> object:
    return chat_call(
        [HumanMessage("hi")], {"tools": [convert_to_openai_tool(tool) for tool in TOOLS], **kwargs}
    )


def test_the_request_holds_the_system_prompt_the_tools_and_the_conversation() -> None:
    messages = [
        SystemMessage("Be brief."),
        HumanMessage("Weather in Porto?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Porto"}, "id": "c1"}]),
        ToolMessage("sunny", name="get_weather", tool_call_id="c1"),
    ]
    call = chat_call(messages, {"tools": [convert_to_openai_tool(tool) for tool in TOOLS]})
    request = chat_request(call, RunLimits(), "node 'agent'")
    system, user, assistant, result = request.messages
    assert system.content.startswith("Be brief.") and "`get_weather(city: string)`" in system.content
    assert "`distance_km(origin: string, destination: string)`" in system.content
    assert (user.role, user.content) == ("user", "Weather in Porto?")
    assert assistant.content == '`$r1 = get_weather(city="Porto")`\nyld call'
    assert result.content == "get_weather returned 'sunny'"


def test_answers_become_tool_calls_or_a_reply() -> None:
    call = _tools_call()
    message = read_chat_answer('`$r1 = distance_km("Lisbon", destination="Porto")`\nyld call', call)
    assert [(item["name"], item["args"]) for item in message.tool_calls] == [
        ("distance_km", {"origin": "Lisbon", "destination": "Porto"})
    ]
    assert read_chat_answer('Return["It is sunny."]\nyld return', call).content == "It is sunny."
    assert read_chat_answer("It is sunny.", call).content == "It is sunny."  # a plain reply is a reply


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('`$r = fly(to="Porto")`\nyld call', "fly is not a tool you can call"),
        ("`$r = get_weather()`\nyld call", "get_weather: city is required"),
        ("`$r = get_weather(city=3)`\nyld call", "city must be"),
        ('`$r = get_weather(city="Porto")`\nyld return', "end the calls with yld call"),
        ("`get_weather(Porto)` maybe", "PAL"),
    ],
)
def test_answers_the_call_cannot_take_are_refused_with_the_reason(answer: str, reason: str) -> None:
    with pytest.raises(_Refused, match=reason):
        read_chat_answer(answer, _tools_call())


def test_structured_output_is_a_return_of_the_schemas_fields_checked_against_it() -> None:
    call = chat_call([], {"tools": [convert_to_openai_tool(Verdict)], "tool_choice": "any"})
    message = read_chat_answer('Return[{"verdict": "yes", "score": 3}]\nyld return', call)
    assert [(item["name"], item["args"]) for item in message.tool_calls] == [
        ("Verdict", {"verdict": "yes", "score": 3})
    ]
    for wrong in ('Return[{"verdict": "maybe", "score": 3}]\nyld return', "yes"):
        with pytest.raises(_Refused):
            read_chat_answer(wrong, call)


def test_the_grammar_admits_exactly_the_answers_the_call_takes() -> None:
    tools = parse_gbnf(chat_grammar(_tools_call()))
    assert tools.accepts('`$r1 = get_weather(city="Porto")`\nyld call')
    assert tools.accepts('`$r1 = distance_km(origin="Lisbon", destination="Porto")`\nyld call')
    assert tools.accepts('Return["It is sunny in Porto."]\nyld return')
    assert not tools.accepts('`$r1 = fly(to="Porto")`\nyld call')
    assert not tools.accepts("`$r1 = get_weather(city=3)`\nyld call")
    assert not tools.accepts("It is sunny.")
    forced = parse_gbnf(
        chat_grammar(chat_call([], {"tools": [convert_to_openai_tool(Verdict)], "tool_choice": "any"}))
    )
    assert forced.accepts('Return[{"verdict": "no", "score": -2}]\nyld return')
    assert not forced.accepts('Return[{"verdict": "maybe", "score": 1}]\nyld return')
    assert not forced.accepts('Return["no"]\nyld return')
    must = parse_gbnf(chat_grammar(_tools_call(tool_choice="required")))
    assert not must.accepts('Return["no tools"]\nyld return')
