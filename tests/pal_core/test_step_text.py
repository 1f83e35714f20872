"""Step details read from step text: calls, assignments, yields, jumps, conditions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pal_core.ir import ArgKind, ConditionKind, Step, YieldKind
from pal_core.step_text import analyze


def que(text: str) -> Step:
    return Step(line="01", opcode="QUE", text=text)


def test_python_call_with_result_and_keywords() -> None:
    call = que("$x:str = Agent.Func($a, key=$b, n=3, items=[1, 2], text='hi')").call
    assert call.name == "Agent.Func" and call.agent == "Agent" and call.playbook == "Func"
    assert (call.result.name, call.result.type) == ("x", "str")
    assert not call.natural
    assert [(a.name, a.kind, a.value) for a in call.arguments] == [
        (None, ArgKind.VARIABLE, "a"),
        ("key", ArgKind.VARIABLE, "b"),
        ("n", ArgKind.LITERAL, 3),
        ("items", ArgKind.LITERAL, [1, 2]),
        ("text", ArgKind.LITERAL, "hi"),
    ]


def test_natural_language_say_keeps_the_message_whole() -> None:
    call = que("Say(meeting, Introduce yourself, explain the reasons, and what outcome is expected)").call
    assert call.natural
    assert [(a.kind, a.text) for a in call.arguments] == [
        (ArgKind.EXPRESSION, "meeting"),
        (ArgKind.TEXT, "Introduce yourself, explain the reasons, and what outcome is expected"),
    ]


def test_apostrophes_in_natural_language_do_not_break_parentheses() -> None:
    call = que("Say(user, Tell user about Canada's $secret)").call
    assert call.name == "Say"
    assert call.arguments[1].text == "Tell user about Canada's $secret"


def test_expression_arguments_and_typed_variables() -> None:
    call = que('GameRoom($topic="Game room for " + $game, $attendees=["agent 1234", "human"])').call
    assert [(a.name, a.kind) for a in call.arguments] == [
        ("topic", ArgKind.EXPRESSION),
        ("attendees", ArgKind.LITERAL),
    ]
    call = que("$answer:float = Solver(problem=$problem:str)").call
    assert call.arguments[0].kind is ArgKind.VARIABLE and call.arguments[0].value == "problem"


def test_text_after_a_call_is_not_a_call() -> None:
    assert que("Create agents like CreateAgent('Player', 'A') CreateAgent('Player', 'B')").call is None
    assert que("Get $secret:str from ExampleMCPServer").call is None


def test_assignments_without_calls() -> None:
    step = Step(line="05", opcode="EXE", text="$x:int = 10")
    assert step.call is None
    assert (step.assignment.target.name, step.assignment.target.type, step.assignment.expression) == (
        "x",
        "int",
        "10",
    )
    assert Step(line="05", opcode="EXE", text="$x == 10").assignment is None


def test_inline_yield_after_a_call() -> None:
    step = que("Say(user, Ask for a number); YLD for user; done when the user answers")
    assert step.call.name == "Say"
    assert step.yield_target.kind is YieldKind.USER


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("user", YieldKind.USER, None),
        ("for user", YieldKind.USER, None),
        ("for call", YieldKind.CALL, None),
        ("return", YieldKind.RETURN, None),
        ("for exit", YieldKind.EXIT, None),
        ("for meeting", YieldKind.MEETING, None),
        ("meeting 100", YieldKind.MEETING, "100"),
        ("agent Host", YieldKind.AGENT, "Host"),
        ("for lunch", YieldKind.UNKNOWN, "for lunch"),
    ],
)
def test_yield_targets(text: str, kind: YieldKind, name: str | None) -> None:
    target = Step(line="01", opcode="YLD", text=text).yield_target
    assert (target.kind, target.name) == (kind, name)


@pytest.mark.parametrize(
    ("text", "kind", "expression"),
    [
        ("If $total > 100", ConditionKind.IF, "$total > 100"),
        ("Otherwise", ConditionKind.OTHERWISE, ""),
        ("Else if x", ConditionKind.ELSE_IF, "x"),
        ("While the game is active", ConditionKind.WHILE, "the game is active"),
        ("For each $subtask in $subtasks", ConditionKind.FOR, "$subtask in $subtasks"),
        ("When asked to move", ConditionKind.WHEN, "asked to move"),
        ("Something else entirely", ConditionKind.OTHER, "Something else entirely"),
    ],
)
def test_conditions(text: str, kind: ConditionKind, expression: str) -> None:
    condition = Step(line="01", opcode="CND", text=text).condition
    assert (condition.kind, condition.expression) == (kind, expression)


def test_jump_targets() -> None:
    assert Step(line="03.03", opcode="JMP", text="03 to check again").jump_target == "03"
    assert Step(line="03.03", opcode="JMP", text="to step 01.02").jump_target == "01.02"
    assert Step(line="03.03", opcode="JMP", text="somewhere").jump_target is None


@given(st.sampled_from(["EXE", "QUE", "YLD", "JMP", "CND", "RET", "TNK"]), st.text(max_size=80))
def test_analysis_never_raises(opcode: str, text: str) -> None:
    analyze(opcode, text)
