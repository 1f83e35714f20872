"""React rounds (issue 28): one description (pal_core.contract.react) read by the verifier, the prompt and
the bundled model's grammar; mutants of react answers are rejected before anything runs; a run goes
round by round."""

from __future__ import annotations

import pytest

from pal_core.contract import parse_answer
from pal_core.contract.react import ReactTurn, describe_react, verify_react
from pal_core.contract.verify import ContractViolation
from pal_core.parser import parse
from runtime.api import run_playbook
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.react_grammar import build_react_grammar, react_examples
from runtime.local.shaping import local_turn_shaping
from runtime.models import ScriptedModel
from runtime.models.base import RequestKind
from runtime.program_run import RunLimits
from runtime.react import _plumbing
from tests.conftest import FIXTURES

pytestmark = pytest.mark.anyio

DESK = parse(
    '''# Desk
Answers questions about orders.

```python
@playbook
async def LookUp(order: int, detailed: bool = False) -> str:
    """The status of an order."""
    return f"order {order} shipped" + (" on Monday" if detailed else "")

@playbook(model_callable=False)
async def Purge() -> str:
    return "purged"
```

## Main($question:str) -> str
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $answer = Answer(question=$question)
02:RET $answer

## Answer($question:str) -> str
metadata:
  execution_mode: react
---
Answer the question about an order, looking it up when you need to.
'''
)


def _turn(**values: object) -> ReactTurn:
    agent = DESK.agents[0]
    playbook = agent.playbook("Answer")
    assert playbook is not None
    known = {"question": "Where is order 42?", **values}
    return describe_react(agent, playbook, variables=dict.fromkeys(known), values=known, plumbing=_plumbing)


CALL = "plan – look it up\n`$look_up = LookUp(order=42)`\nyld call"
ANSWER = 'plan – answer\nReturn["Order 42 shipped."]\nyld return'


def test_the_description_lists_the_tools_the_round_may_call() -> None:
    turn = _turn()
    # Not the playbook itself, not one only steps may call, not Main, which runs the round.
    assert list(turn.tools) == ["LookUp"]
    assert turn.tools["LookUp"].signature == "LookUp(order: int, detailed: bool (optional)) -> str"
    assert turn.returns == "str" and turn.program_variables["question"] == "a parameter"


def test_a_weather_agent_imported_from_adk_has_its_tools_and_none_of_its_plumbing() -> None:
    program = parse((FIXTURES / "adk" / "weather.pal").read_text(encoding="utf-8"))
    agent = program.agents[0]
    respond = agent.playbook("Respond")
    assert respond is not None
    turn = describe_react(agent, respond, plumbing=_plumbing)
    assert sorted(turn.tools) == ["GetWeather", "RememberCity"]


@pytest.mark.parametrize(
    ("answer", "codes"),
    [
        ("plan – x\n`Wipe(order=42)`\nyld call", {"V10", "V20"}),  # unknown tool
        ("plan – x\n`Purge()`\nyld call", {"V10", "V20"}),  # only steps may call it
        ('plan – x\n`LookUp(order="forty-two")`\nyld call', {"V12", "V20"}),  # wrong argument type
        ("plan – x\n`LookUp(id=42)`\nyld call", {"V10", "V20"}),  # no such parameter
        ("plan – x\n`LookUp(detailed=true)`\nyld call", {"V10", "V20"}),  # a required argument missing
        ("plan – x\n`LookUp(order=$missing)`\nyld call", {"V10", "V20"}),  # not a known variable
        ('plan – x\nReturn[["a list"]]\nyld return', {"V12"}),  # the value's type
        ("plan – x\nyld call", {"V20"}),  # nothing to run
        ("plan – x\nyld return", {"V20"}),  # no value
        ('plan – x\n`Say("user", "Which order?")`\nyld exit', {"V11"}),
        ('plan – x\nReturn["done"]\nyld call', {"V16", "V20"}),
        ('plan – x\n`Var[$question, "something else"]`\nReturn["ok"]\nyld return', {"V17"}),  # a fixed value
        ('plan – x\n`Step["Answer:01:QUE"]` `LookUp(order=42)`\nyld call', {"V01", "V20"}),
        (CALL + '\nReturn["late"]', {"V15"}),
        ("plan – x\n`LookUp(order=42)`\n`LookUp(order=42)`\nyld call", {"V21"}),
    ],
)
def test_mutants_of_react_answers_are_rejected(answer: str, codes: set[str]) -> None:
    with pytest.raises(ContractViolation) as caught:
        verify_react(parse_answer(answer), _turn())
    assert {violation.code for violation in caught.value.violations} == codes


def test_the_grammar_admits_the_rounds_the_verifier_accepts_and_not_the_mutants() -> None:
    turn = _turn(look_up="order 42 shipped")
    grammar = parse_gbnf(build_react_grammar(turn))
    accepted = [
        CALL,
        ANSWER,
        "plan – x\n`LookUp(order=42, detailed=true)`\nyld call",
        "plan – x\nReturn[$look_up]\nyld return",
        'plan – ask\n`Say("user", "Which order?")`\nyld user',
        'plan – both\n`LookUp(order=42)`\nReturn["Looked up."]\nyld return',
    ]
    for answer in accepted:
        assert grammar.accepts(answer), answer
        verify_react(parse_answer(answer), turn)
    for answer in (
        "plan – x\n`Wipe(order=42)`\nyld call",
        "plan – x\n`Purge()`\nyld call",
        'plan – x\n`LookUp(order="forty-two")`\nyld call',
        "plan – x\n`LookUp(detailed=true)`\nyld call",
        "plan – x\nyld call",
        'plan – x\nReturn[["a list"]]\nyld return',
        'plan – x\nReturn["<Answer value>"]\nyld return',  # an example's stand-in cannot be copied
        'plan – x\n`Var[$question, "x"]`\nReturn["ok"]\nyld return',
        "plan – x\n`LookUp(order=7)`\nyld call",  # a number the question does not hold
        "plan – x\n`LookUp(order=42)`\n`LookUp(order=42)`\nyld call",  # the same call twice
    ):
        assert not grammar.accepts(answer), answer


def test_a_tool_an_earlier_round_called_is_not_called_again() -> None:
    turn = describe_react(
        DESK.agents[0],
        DESK.agents[0].playbook("Answer"),  # type: ignore[arg-type]
        variables={"question": "str", "look_up": None},
        values={"question": "Where is order 42?", "look_up": "order 42 shipped"},
        called=("LookUp(order=42)",),
    )
    with pytest.raises(ContractViolation, match=r"V21 .*LookUp\(order=42\) was made already"):
        verify_react(parse_answer(CALL), turn)
    grammar = parse_gbnf(build_react_grammar(turn))
    assert not grammar.accepts(CALL) and grammar.accepts("plan – answer\nReturn[$look_up]\nyld return")


def test_the_last_round_the_budget_allows_must_answer() -> None:
    agent = DESK.agents[0]
    playbook = agent.playbook("Answer")
    assert playbook is not None
    last = describe_react(agent, playbook, variables={"question": "str"}, final=True)
    grammar = parse_gbnf(build_react_grammar(last))
    assert grammar.accepts(ANSWER) and not grammar.accepts(CALL)


def test_the_examples_are_rounds_of_this_playbook() -> None:
    examples = react_examples(_turn())
    assert "`$look_up = LookUp(order=1)`\nyld call" in examples
    assert 'Return["<Answer value>"]\nyld return' in examples


async def test_a_run_goes_round_by_round_and_each_request_is_shaped_from_the_description() -> None:
    model = ScriptedModel([CALL, "plan – answer\nReturn[$look_up]\nyld return"], shaping=local_turn_shaping())
    value = await run_playbook(DESK, "Main", "Where is order 42?", model=model)
    assert value == "order 42 shipped"
    first, second = model.requests
    assert first.kind is RequestKind.REACT and first.max_tokens == RunLimits().answer_tokens(
        RequestKind.REACT
    )
    assert parse_gbnf(first.grammar or "").accepts(CALL)
    assert "- LookUp(order: int, detailed: bool (optional)) -> str: The status of an order." in (
        first.messages[1].content
    )
    # The second round reads the first one's result, and may return it.
    assert 'LookUp returned "order 42 shipped" (now $look_up)' in second.messages[-1].content
    assert parse_gbnf(second.grammar or "").accepts("plan – answer\nReturn[$look_up]\nyld return")


async def test_a_rejected_round_runs_nothing_and_is_asked_again() -> None:
    model = ScriptedModel(["plan – x\n`Purge()`\n`LookUp(order=42)`\nyld call", CALL, ANSWER])
    value = await run_playbook(DESK, "Main", "Where is order 42?", model=model)
    assert value == "Order 42 shipped."
    retry = model.requests[1].messages[-1].content
    assert "Purge may only be" in retry or "Purge is not a tool" in retry


REPORTER = parse(
    """# Reporter
Reports the weather.

## Main($city:str) -> dict
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $report = Report(city=$city)
02:RET $report

## Report($city:str) -> dict
metadata:
  execution_mode: react
  returns_schema:
    title: WeatherReport
    type: object
    properties:
      city:
        type: string
      sunny:
        type: boolean
      degrees:
        type: integer
    required: [city, sunny, degrees]
---
Report the weather of $city.
"""
)


async def test_a_value_that_does_not_fit_the_returns_schema_is_rejected_naming_the_field() -> None:
    """As LangGraph's and the ADK's structured output ask the model again with the validation error."""
    model = ScriptedModel(
        [
            'plan – x\nReturn[{"city": "Paris", "sunny": "yes", "degrees": 21}]\nyld return',
            'plan – x\nReturn[{"city": "Paris", "sunny": true, "degrees": 21}]\nyld return',
        ]
    )
    value = await run_playbook(REPORTER, "Main", "Paris", model=model)
    assert value == {"city": "Paris", "sunny": True, "degrees": 21}
    retry = model.requests[1].messages[-1].content
    assert "V22 answer line 2: the value does not fit WeatherReport" in retry and "sunny" in retry
    assert "degrees" not in retry.split("V22", 1)[1].split("\n", 1)[0]  # only the field that is wrong


async def test_a_round_that_keeps_breaking_the_returns_schema_stops_the_run_with_v22() -> None:
    from runtime.errors import RunError

    bad = 'plan – x\nReturn[{"city": "Paris"}]\nyld return'
    with pytest.raises(RunError, match="V22") as raised:
        await run_playbook(
            REPORTER, "Main", "Paris", model=ScriptedModel([bad] * 3), limits=RunLimits(max_retries=1)
        )
    assert "sunny" in str(raised.value)


def test_the_grammar_gives_a_returns_schema_value_its_fields_of_their_types() -> None:
    agent = REPORTER.agents[0]
    playbook = agent.playbook("Report")
    assert playbook is not None
    turn = describe_react(
        agent, playbook, variables={"city": "str"}, values={"city": "Paris"}, plumbing=_plumbing
    )
    grammar = parse_gbnf(build_react_grammar(turn))
    fitting = 'plan – x\nReturn[{"city": "Paris", "sunny": true, "degrees": 21}]\nyld return'
    assert grammar.accepts(fitting)
    for answer in (
        'plan – x\nReturn[{"city": "Paris", "sunny": "yes", "degrees": 21}]\nyld return',
        'plan – x\nReturn[{"city": "Paris"}]\nyld return',
        'plan – x\nReturn["sunny"]\nyld return',
    ):
        assert not grammar.accepts(answer), answer


def test_the_served_output_schema_is_the_returns_schema() -> None:
    from runtime.schema import output_schema

    playbook = REPORTER.agents[0].playbook("Report")
    assert playbook is not None
    schema = output_schema(playbook)
    assert schema is not None and schema["properties"]["result"]["title"] == "WeatherReport"
