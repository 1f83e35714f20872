"""The model-answer parser: the 40 real answers, every failure form, and random and mutated text."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pal_core.contract import (
    Answer,
    ArtifactAction,
    ContractSyntaxError,
    ReturnAction,
    StepAction,
    StepRef,
    StrayCallAction,
    TriggerAction,
    VarAction,
    WhatAction,
    YieldAction,
    parse_answer,
)
from pal_core.contract.errors import (
    BAD_ARTIFACT,
    BAD_CALL,
    BAD_REFERENCE,
    BAD_TRIGGER_CHECK,
    BAD_VARIABLE,
    NO_ACTION,
    TRAILING_TEXT,
    UNTERMINATED,
)
from pal_core.ir import ArgKind, Call, Span, Variable, YieldKind, YieldTarget
from tests.conftest import FIXTURES

ANSWERS: list[str] = [
    json.loads(line)["text"]
    for line in (FIXTURES / "llm_responses_sample.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]

# Answer 24 breaks off inside a Var string on line 3 (`... and Taco-Chaatrecap – completed meeting ...`)
# and then starts the whole answer again. The `Var[` never closes; the parser recognises the restart
# (a `recap –` inside the open construct) and reads the answer from there, keeping the broken attempt
# as commentary. All 40 answers parse.
UNREADABLE: dict[int, tuple[int, int, str]] = {}


def kinds(answer: Answer) -> list[str]:
    """The action kinds in order, e.g. ["Var", "Trigger", "Step", "Yield"]."""
    return [type(action).__name__.removesuffix("Action") for action in answer.actions]


def ref(text: str) -> StepRef:
    playbook, line, code = text.split(":")
    return StepRef(playbook=playbook, line=line, code=code)


def args(call: Call) -> list[tuple[ArgKind, object, str | None]]:
    return [(argument.kind, argument.value, argument.name) for argument in call.arguments]


def raises(text: str) -> ContractSyntaxError:
    with pytest.raises(ContractSyntaxError) as caught:
        parse_answer(text)
    return caught.value


# The 40 real answers ------------------------------------------------------------------------------


def test_the_sample_holds_forty_answers() -> None:
    assert len(ANSWERS) == 40


@pytest.mark.parametrize("index", [index for index in range(40) if index not in UNREADABLE])
def test_every_readable_real_answer_parses(index: int) -> None:
    answer = parse_answer(ANSWERS[index])
    assert answer.actions
    assert answer.raw == ANSWERS[index]


def test_a_cut_off_answer_that_restarts_is_read_from_the_restart() -> None:
    answer = parse_answer(ANSWERS[24])
    assert answer.recap == "completed meeting participation with successful fusion chaat menu planning"
    assert kinds(answer) == ["Step", "Return", "Var", "Trigger"]
    assert answer.actions[2].name == "__"
    assert answer.actions[2].value.endswith("Global Chaat Fusion menu section.")
    assert answer.commentary[0].endswith("and Taco-Chaat")


def test_an_open_construct_without_a_restart_is_still_an_error() -> None:
    broken = ANSWERS[24][: ANSWERS[24].index("Taco-Chaatrecap") + len("Taco-Chaat")]
    error = raises(broken)
    assert (error.line, error.code) == (3, UNTERMINATED)
    assert "never closes" in error.message


def test_answer_0_var_step_with_typed_assignment_and_yield_on_the_step_line() -> None:
    answer = parse_answer(ANSWERS[0])
    assert answer.recap == "X transformation returned 4"
    assert answer.plan == "apply Y transformation to temp result"
    assert kinds(answer) == ["Var", "Trigger", "Step", "Trigger", "Step", "Yield"]
    var = answer.actions[0]
    assert isinstance(var, VarAction)
    assert (var.name, var.value, var.raw, var.literal) == ("temp", 4, "4", True)
    step = answer.steps[0]
    assert step.ref == ref("XY:03:QUE")
    (call,) = step.calls
    assert call.name == "Y"
    assert call.result == Variable(name="result", type="float")
    assert args(call) == [(ArgKind.VARIABLE, "temp", "num")]
    assert call.arguments[0].text == "$temp"
    assert answer.steps[1].ref == ref("XY:04:YLD")
    assert answer.final_yield == YieldAction(target=YieldTarget(kind=YieldKind.CALL))


def test_answer_1_meeting_says_a_step_with_a_note_and_yld_for_meeting() -> None:
    answer = parse_answer(ANSWERS[1])
    assert kinds(answer) == ["Step", "Trigger", "Step", "Trigger", "Step", "Trigger", "Step", "Yield"]
    first, second, third, fourth = answer.steps
    assert first.ref == ref("MenuRedesignMeeting:01:QUE")
    assert first.calls[0].name == "Say"
    assert first.calls[0].arguments[0].value == "meeting 100"
    assert first.calls[0].arguments[1].value.startswith("Hello everyone! I'm the Marketing Specialist")
    assert "**Price Sensitivity:** Sweet spot is $8-14" in second.calls[0].arguments[1].value
    assert third.calls == () and third.note == "entering meeting activity loop"
    assert fourth.ref == ref("MenuRedesignMeeting:03:CND") and fourth.note == ""
    assert answer.final_yield is not None
    assert answer.final_yield.target == YieldTarget(kind=YieldKind.MEETING, name="100")
    assert answer.commentary == (
        "yld? no, continuing to next step",
        "yld? no, entering meeting loop",
        "yld? yes, waiting for meeting interactions",
    )


def test_answer_4_return_and_summary_var_on_the_step_line() -> None:
    answer = parse_answer(ANSWERS[4])
    assert kinds(answer) == ["Step", "Return", "Var", "Step", "Yield"]
    returned = answer.actions[1]
    assert isinstance(returned, ReturnAction)
    assert returned.value.startswith("Bangladesh was once part of the ancient kingdom of Bengal")
    assert returned.value.endswith("could pass through a wedding ring.")
    summary = answer.actions[2]
    assert isinstance(summary, VarAction) and summary.name == "__" and summary.literal
    assert summary.value.startswith("GetCountryFact(Bangladesh) returned")
    assert answer.final_yield is not None and answer.final_yield.target.kind is YieldKind.RETURN


def test_answer_5_assignment_written_outside_the_backticks() -> None:
    answer = parse_answer(ANSWERS[5])
    assert kinds(answer) == ["Step"] * 8 + ["Yield"]
    assert [str(step.ref) for step in answer.steps] == [
        "Main:03.04:CND",
        "Main:03.05:CND",
        "Main:03.06:JMP",
        "Main:03:CND",
        "Main:03.01:CND",
        "Main:03.02:CND",
        "Main:03.02.01:QUE",
        "Main:03.02.02:YLD",
    ]
    assert answer.steps[2].note == "Jumping to step 03"
    call_step = answer.steps[6]
    assert call_step.calls == (
        Call(name="AnswerQuestionUsingKnowledgeBase", result=Variable(name="success", type="bool")),
    )
    assert call_step.note == ""
    assert answer.final_yield is not None and answer.final_yield.target.kind is YieldKind.CALL


def test_answer_8_prose_lines_trig_on_a_variable_and_return_in_prose() -> None:
    answer = parse_answer(ANSWERS[8])
    assert answer.recap is not None and answer.recap.startswith("user wants to check order status")
    assert kinds(answer) == ["Step", "Step", "Var", "Trigger", "Step", "Yield"]
    validate, compute, _, _, returning, _ = answer.actions
    assert isinstance(validate, StepAction)
    assert validate.calls[0].name == "ValidatePin"
    assert args(validate.calls[0]) == [(ArgKind.LITERAL, "2332", None)]
    assert isinstance(compute, StepAction)
    assert compute.note == '$isValid = (sum of digits in "2332" equals 10)'
    assert isinstance(returning, StepAction) and returning.note == "return true"
    assert answer.actions[2] == VarAction(name="isValid", value=True, raw="true")
    assert answer.actions[3] == TriggerAction()
    assert answer.commentary == (
        'executing ValidatePin with pin="2332"',
        "calculating: 2+3+3+2=10",
        "returning from ValidatePin with value: true",
    )


def test_answer_9_several_says_after_one_step_across_blank_lines() -> None:
    answer = parse_answer(ANSWERS[9])
    assert kinds(answer) == ["Step", "Trigger", "Step", "Trigger", "Step", "Yield"]
    first, second, jump = answer.steps
    assert [call.name for call in first.calls] == ["Say"] * 6
    assert [call.name for call in second.calls] == ["Say"] * 5
    assert first.calls[1].arguments[1].value == "**Ingredient Overlap Opportunities I've Identified:**"
    assert second.calls[-1].arguments[1].value.startswith("• **Garnish Prep**")
    assert jump.ref == ref("MenuRedesignMeeting:02:JMP") and jump.calls == ()
    assert answer.final_yield is not None
    assert answer.final_yield.target == YieldTarget(kind=YieldKind.MEETING, name="100")


def test_answer_10_long_notes_and_an_outside_assignment_of_a_variable_argument() -> None:
    answer = parse_answer(ANSWERS[10])
    assert kinds(answer) == ["Step", "Step", "Step", "Var", "Trigger", "Step", "Step", "Yield"]
    assert answer.steps[0].note.startswith("The user is asking about adding products specific to a region")
    var = answer.actions[3]
    assert isinstance(var, VarAction) and var.name == "search_query"
    assert var.value == "Clover POS how to add region-specific products location-based inventory management"
    (call,) = answer.steps[3].calls
    assert call.name == "clover_knowledge_base"
    assert call.result == Variable(name="relevant_info")
    assert args(call) == [(ArgKind.VARIABLE, "search_query", None)]


def test_answer_15_var_inside_a_step_note_and_a_list_value() -> None:
    answer = parse_answer(ANSWERS[15])
    assert kinds(answer) == ["Var", "Trigger", "Step", "Trigger", "Step", "Var"] + ["Trigger", "Step"] * 4 + [
        "Yield"
    ]
    listing = answer.steps[1]
    assert listing.ref == ref("Main:04:EXE")
    assert listing.note == "Listing 5 countries near India: Pakistan, China, Bangladesh, Nepal, Sri Lanka"
    countries = answer.actions[5]
    assert isinstance(countries, VarAction)
    assert countries.value == ["Pakistan", "China", "Bangladesh", "Nepal", "Sri Lanka"]
    say_only = answer.steps[2].calls[0]
    assert args(say_only) == [
        (
            ArgKind.LITERAL,
            "The countries near India are: Pakistan, China, Bangladesh, Nepal, and Sri Lanka.",
            None,
        )
    ]
    assert answer.steps[4].calls[0].name == "process_countries"
    assert args(answer.steps[4].calls[0]) == [(ArgKind.VARIABLE, "countries", None)]


def test_answer_19_multi_line_note_and_a_call_missing_its_closing_backtick() -> None:
    answer = parse_answer(ANSWERS[19])
    assert kinds(answer) == ["Step", "Trigger", "Step", "Trigger", "Step", "Return", "Trigger", "Yield"]
    thinking, saving, returning = answer.steps
    assert thinking.note.endswith("Let me review what I have:")
    assert "   - Living organisms can be understood as complex patterns".strip() in answer.commentary
    (call,) = saving.calls
    assert call.name == "SetArtifact"
    assert [argument.kind for argument in call.arguments] == [ArgKind.LITERAL] * 3
    assert call.arguments[2].value.startswith("# Patterns as the Fundamental Basis of Reality")
    assert "\n\n## Philosophical Perspectives" in call.arguments[2].value
    assert answer.actions[5] == ReturnAction(value="patterns_report.md", raw='"patterns_report.md"')
    assert returning.ref == ref("DeepResearch:08:RET")


def test_answers_22_and_35_wrapped_in_a_fence() -> None:
    wrapped = parse_answer(ANSWERS[22])
    assert wrapped.recap == "user provided country name"
    assert kinds(wrapped) == ["Var", "Trigger", "Step", "Var", "Step", "Step", "Yield"]
    assert wrapped.actions[0] == VarAction(name="country", value="Bhutan", raw='"Bhutan"')
    assert "```" not in wrapped.commentary
    fact = parse_answer(ANSWERS[35])
    assert kinds(fact) == ["Step", "Return", "Var", "Yield"]
    assert fact.actions[0].span == Span(line=4, column=2, length=29)


def test_answer_25_prose_first_line_and_yld_return_to_a_playbook() -> None:
    answer = parse_answer(ANSWERS[25])
    assert answer.recap is None and answer.plan is None
    assert answer.commentary[0].startswith("I'll continue execution from ValidatePin:01")
    assert "return true" in answer.commentary
    assert kinds(answer) == ["Step", "Var", "Trigger", "Step", "Yield"]
    assert answer.steps[1].note == "return $isValid"
    assert answer.final_yield is not None and answer.final_yield.target == YieldTarget(kind=YieldKind.RETURN)


def test_answer_27_colon_recap_fired_trigger_and_a_say_on_the_next_line() -> None:
    answer = parse_answer(ANSWERS[27])
    assert answer.recap == "I'm a customer support agent for an online store, starting the Begin playbook"
    assert kinds(answer) == ["Trigger", "Step", "Step", "Yield"]
    assert answer.actions[0] == TriggerAction(fired=(ref("Begin:T1:BGN"),))
    greet = answer.steps[0]
    assert greet.ref == ref("Begin:01:QUE")
    assert greet.calls[0].arguments[0].value.startswith("Hi there! Welcome to our online store")
    assert "sok" in answer.commentary
    assert answer.final_yield is not None and answer.final_yield.target == YieldTarget(kind=YieldKind.USER)


def test_answer_30_var_with_escaped_newlines_inside_a_step_line() -> None:
    answer = parse_answer(ANSWERS[30])
    board = answer.actions[5]
    assert isinstance(board, VarAction)
    assert (board.name, board.value) == ("board", "O|2|3\n4|X|6\n7|8|X")
    assert answer.steps[2].note == "Game state updated with X at position 9"
    assert answer.final_yield is not None
    assert answer.final_yield.target == YieldTarget(kind=YieldKind.MEETING, name="100")


def test_answer_31_a_say_before_any_step_is_kept_as_a_stray_call() -> None:
    answer = parse_answer(ANSWERS[31])
    assert kinds(answer) == ["StrayCall", "Trigger", "Step", "Return", "Var"]
    stray = answer.actions[0]
    assert isinstance(stray, StrayCallAction)
    assert stray.call.name == "Say"
    assert stray.call.arguments[0].value == "meeting 100"
    assert stray.span == Span(line=3, column=2, length=len(ANSWERS[31].splitlines()[2]) - 2)
    assert answer.final_yield is None


def test_answer_33_unknown_yield_target() -> None:
    answer = parse_answer(ANSWERS[33])
    assert kinds(answer) == ["Var", "Trigger", "Step", "Return", "Yield"]
    assert answer.final_yield is not None
    assert answer.final_yield.target == YieldTarget(kind=YieldKind.UNKNOWN, name="finished")


def test_answer_38_var_missing_its_closing_bracket_before_the_backtick() -> None:
    answer = parse_answer(ANSWERS[38])
    assert kinds(answer) == ["Var", "Trigger", "Step", "Trigger", "Yield"]
    summaries = answer.actions[0]
    assert isinstance(summaries, VarAction) and summaries.literal
    assert [item["query"] for item in summaries.value][
        -1
    ] == "psychological and social implications of post-woke era"
    (search,) = answer.steps[0].calls
    assert args(search) == [
        (ArgKind.LITERAL, "political and electoral consequences of post-woke era", "query"),
        (ArgKind.LITERAL, "general", "topic"),
    ]


# The contract's forms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "recap – a b",
        "recap — a b",
        "recap - a b",
        "recap: a b",
        "recap  –  a b",
        "Recap—a b",
        "- recap – a b",
    ],
)
def test_recap_separators(line: str) -> None:
    assert parse_answer(f"{line}\nyld user").recap == "a b"


def test_a_second_recap_is_commentary_and_recap_needs_a_separator() -> None:
    answer = parse_answer("recap – one\nplan  – two\nrecap – three\nrecap of the day\nyld user")
    assert (answer.recap, answer.plan) == ("one", "two")
    assert answer.commentary == ("recap – three", "recap of the day")


@pytest.mark.parametrize(
    ("line", "target"),
    [
        ("yld user", YieldTarget(kind=YieldKind.USER)),
        ("yld for user", YieldTarget(kind=YieldKind.USER)),
        ("YLD user.", YieldTarget(kind=YieldKind.USER)),
        ("yld call", YieldTarget(kind=YieldKind.CALL)),
        ("yld for call", YieldTarget(kind=YieldKind.CALL)),
        ("yld return", YieldTarget(kind=YieldKind.RETURN)),
        ("yld return to AuthenticateUserFlow", YieldTarget(kind=YieldKind.RETURN)),
        ("yld exit", YieldTarget(kind=YieldKind.EXIT)),
        ("yld meeting", YieldTarget(kind=YieldKind.MEETING)),
        ("yld for meeting 100", YieldTarget(kind=YieldKind.MEETING, name="100")),
        ("yld for meeting 100, waiting for replies", YieldTarget(kind=YieldKind.MEETING, name="100")),
        ("yld agent Host", YieldTarget(kind=YieldKind.AGENT, name="Host")),
        ("yld finished", YieldTarget(kind=YieldKind.UNKNOWN, name="finished")),
        ("yld", YieldTarget(kind=YieldKind.UNKNOWN, name="")),
        ("yld `user`", YieldTarget(kind=YieldKind.USER)),
        ("yld: exit", YieldTarget(kind=YieldKind.EXIT)),
    ],
)
def test_yield_forms(line: str, target: YieldTarget) -> None:
    answer = parse_answer(line)
    assert answer.actions == (YieldAction(target=target),)


def test_yld_question_lines_are_commentary_not_yields() -> None:
    answer = parse_answer("yld? yes, Main:02:YLD waits\nyld ? no\ntrig? no")
    assert kinds(answer) == ["Trigger"]
    assert answer.final_yield is None
    assert answer.commentary == ("yld? yes, Main:02:YLD waits", "yld ? no")


def test_trigger_checks() -> None:
    answer = parse_answer(
        "trig? no\ntrig on $isValid? No.\ntrig? none\n"
        'trig? `Trigger["Main:T1:CND"]` `Trigger["Main:T2:EVT"]`\ntrig? Trigger["Main:T3:CND"] fired'
    )
    assert answer.actions == (
        TriggerAction(),
        TriggerAction(),
        TriggerAction(),
        TriggerAction(fired=(ref("Main:T1:CND"), ref("Main:T2:EVT"))),
        TriggerAction(fired=(ref("Main:T3:CND"),)),
    )
    assert answer.commentary == ('trig? Trigger["Main:T3:CND"] fired',)


def test_what_is_an_action_that_ends_the_step() -> None:
    answer = parse_answer(
        '`Step["A:01:QUE"]`\nwhat? the tool is down, telling the user\n`Say("user", "Sorry")`\nyld user'
    )
    assert kinds(answer) == ["Step", "What", "StrayCall", "Yield"]
    assert answer.actions[1] == WhatAction(text="the tool is down, telling the user")


def test_calls_belong_to_the_latest_step_until_trig_or_yld() -> None:
    answer = parse_answer(
        '`Say("user", "early")`\n'
        '`Step["A:01:QUE"]` `Var[$n, 1]` counting\n\nsome prose\n`Say("user", "one")`\n'
        'trig? no\n`Say("user", "late")`\n'
        '`Step["A:02:QUE"]`\n`Say("user", "two")`\nyld user\n`Say("user", "after")`'
    )
    assert kinds(answer) == ["StrayCall", "Step", "Var", "Trigger", "StrayCall", "Step", "Yield", "StrayCall"]
    first, second = answer.steps
    assert [call.arguments[1].value for call in first.calls] == ["one"]
    assert first.note == "counting"
    assert [call.arguments[1].value for call in second.calls] == ["two"]
    assert [
        action.call.arguments[1].value for action in answer.actions if isinstance(action, StrayCallAction)
    ] == [
        "early",
        "late",
        "after",
    ]
    assert answer.commentary == ("some prose",)


def test_unbackticked_step_and_var_and_backticked_prose() -> None:
    answer = parse_answer('Step["A:01:EXE"] set `x` Var[$x, 2] then `yld call`')
    assert kinds(answer) == ["Step", "Var", "Yield"]
    assert answer.steps[0].note == "set `x` then"
    assert answer.actions[1] == VarAction(name="x", value=2, raw="2")


def test_argument_kinds() -> None:
    answer = parse_answer(
        '`Step["A:01:QUE"]` `$out:list[str] = Agent.Find($q, "x", 3, -1.5, [1, true, null], {"k": None}, '
        "n=name, e=$a + 1, f=f'{x}', t=(1, 2), $key=$v, *rest, **extra)`"
    )
    (call,) = answer.steps[0].calls
    assert call.name == "Agent.Find" and call.agent == "Agent" and call.playbook == "Find"
    assert call.result == Variable(name="out", type="list[str]")
    assert [(argument.kind, argument.value, argument.name, argument.text) for argument in call.arguments] == [
        (ArgKind.VARIABLE, "q", None, "$q"),
        (ArgKind.LITERAL, "x", None, '"x"'),
        (ArgKind.LITERAL, 3, None, "3"),
        (ArgKind.LITERAL, -1.5, None, "-1.5"),
        (ArgKind.LITERAL, [1, True, None], None, "[1, true, null]"),
        (ArgKind.LITERAL, {"k": None}, None, '{"k": None}'),
        (ArgKind.EXPRESSION, None, "n", "name"),
        (ArgKind.EXPRESSION, None, "e", "$a + 1"),
        (ArgKind.EXPRESSION, None, "f", "f'{x}'"),
        (ArgKind.EXPRESSION, None, "t", "(1, 2)"),
        (ArgKind.VARIABLE, "v", "key", "$v"),
        (ArgKind.EXPRESSION, None, None, "*rest"),
        (ArgKind.EXPRESSION, None, None, "**extra"),
    ]
    assert call.natural is False


def test_strings_with_escapes_dollars_and_real_newlines() -> None:
    answer = parse_answer(
        '`Step["A:01:QUE"]` `Say("user", "He said \\"hi\\" for $5\\nbye", $name)`\n'
        '`Say("user", "Dear é,\n\nline `two` (with brackets] and \'quotes\'\n- item")`\n'
        "`Say('user', 'it\\'s')`\nyld user"
    )
    first, second, third = answer.steps[0].calls
    assert first.arguments[1].value == 'He said "hi" for $5\nbye'
    assert first.arguments[2].kind is ArgKind.VARIABLE and first.arguments[2].text == "$name"
    assert second.arguments[1].value == "Dear é,\n\nline `two` (with brackets] and 'quotes'\n- item"
    assert second.arguments[1].text == "\"Dear é,\n\nline `two` (with brackets] and 'quotes'\n- item\""
    assert third.arguments[1].value == "it's"
    assert kinds(answer) == ["Step", "Yield"]


def test_var_values() -> None:
    answer = parse_answer(
        "`Var[$a, 4.0]`\n`Var[$b, 'single']`\n`Var[$c, true]`\n`Var[$d, null]`\n"
        "`Var[$__, 1-5 line summary of the user's order]`\n"
        '`Var[$e, {\n  "k": [1, 2],\n  "s": "x"\n}]`\n'
        '`Var[$f, "line one\nline two"]`\n`Var[$g, $a + 1]`\n`Var[$h, NaN]`\n`Var[$i, the 5" screen]`'
    )
    values = [
        (action.name, action.value, action.literal)
        for action in answer.actions
        if isinstance(action, VarAction)
    ]
    assert values == [
        ("a", 4.0, True),
        ("b", "single", True),
        ("c", True, True),
        ("d", None, True),
        ("__", "1-5 line summary of the user's order", False),
        ("e", {"k": [1, 2], "s": "x"}, True),
        ("f", "line one\nline two", True),
        ("g", "$a + 1", False),
        ("h", "NaN", False),
        ("i", 'the 5" screen', False),
    ]
    assert answer.actions[5].span == Span(line=6, column=2, length=0)


def test_return_values() -> None:
    answer = parse_answer('`Return[]`\n`Return[ 42 ]`\n`Return[$result]`\n`Return["a, b"]`')
    assert answer.actions == (
        ReturnAction(),
        ReturnAction(value=42, raw="42"),
        ReturnAction(value="$result", raw="$result"),
        ReturnAction(value="a, b", raw='"a, b"'),
    )


def test_save_artifact() -> None:
    answer = parse_answer(
        '`SaveArtifact($report, "The report", "# Title\\n\\nBody")`\n'
        'SaveArtifact(content="c", name="notes.md", summary="s")\n'
        '`$x = SaveArtifact($a, "s", "c")`'
    )
    assert answer.actions[:2] == (
        ArtifactAction(name="report", summary="The report", content="# Title\n\nBody"),
        ArtifactAction(name="notes.md", summary="s", content="c"),
    )
    # With an assignment it is an ordinary call, left for the verifier to judge.
    stray = answer.actions[2]
    assert isinstance(stray, StrayCallAction) and stray.call.name == "SaveArtifact"


def test_tolerated_slips() -> None:
    answer = parse_answer(
        '`Step["A:01:QUE"] `Say("user", "no closing backtick")\n'
        '`Step["A:02:QUE"]` `Say("user", "missing backtick at the end")\n'
        "`Var[$list, [1, 2]`\n"
        '`Step["A:03:QUE"`\n'
        "yld user"
    )
    assert kinds(answer) == ["Step", "Step", "Var", "Step", "Yield"]
    assert answer.steps[1].calls[0].arguments[1].value == "missing backtick at the end"
    assert answer.actions[2] == VarAction(name="list", value=[1, 2], raw="[1, 2]")
    assert answer.steps[2].ref == ref("A:03:QUE")


def test_crlf_line_ends() -> None:
    answer = parse_answer('recap – r\r\nplan – p\r\n`Step["A:01:QUE"]` `Say("user", "hi")`\r\nyld user\r\n')
    assert (answer.recap, answer.plan) == ("r", "p")
    assert kinds(answer) == ["Step", "Yield"]
    assert answer.final_yield is not None and answer.final_yield.span == Span(line=4, column=1, length=8)


def test_spans_point_at_the_constructs() -> None:
    answer = parse_answer('recap – r\n  `Step["A:01:QUE"]` `Var[$x, 1]`\n\ttrig? no')
    step, var, trig = answer.actions
    assert step.span == Span(line=2, column=4, length=16)
    assert var.span == Span(line=2, column=23, length=10)
    assert trig.span == Span(line=3, column=2, length=8)


# Failures: where and why --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "column", "code", "message"),
    [
        ("", 1, 1, NO_ACTION, "the answer has no action"),
        ("recap – r\nplan – p\nI think so.", 1, 1, NO_ACTION, "the answer has no action"),
        ('\n  `Say("user", "hi")`\nwhat? nothing', 2, 3, NO_ACTION, "the answer has no action"),
        ('recap – r\nStep["Main:01:QUE" and more', 2, 1, UNTERMINATED, "`Step[` never closes"),
        ("recap – r\n`Var[$x, [1, 2`\nyld user", 2, 2, UNTERMINATED, "`Var[` never closes"),
        (
            'trig? no\n`Step["A:01:QUE"]` `Return["abc`\nyld user',
            2,
            28,
            UNTERMINATED,
            "a string in `Return[`",
        ),
        ('trig? Trigger["Main:T1:CND"\nyld user', 1, 7, UNTERMINATED, "`Trigger[` never closes"),
        ('yld user\nnow `Say("hi") and more', 2, 5, UNTERMINATED, "this backtick span never closes"),
        ('yld user\n`Say("user", "hello)`', 2, 14, UNTERMINATED, "unterminated string literal"),
        ('yld user\n`Say("user",\n"hello"', 2, 2, UNTERMINATED, "`Say(` never closes"),
        ('`Step["Main:QUE"]`', 1, 7, BAD_REFERENCE, "Step[...] needs a reference `Playbook:Line:Code`"),
        ('`Step["Main:x1:BGN"]`', 1, 7, BAD_REFERENCE, "Step[...] needs a reference"),
        ("`Step[Main 01 QUE]`", 1, 7, BAD_REFERENCE, "Step[...] needs a reference"),
        (
            'trig? `Trigger["Main:x1:CND"]`',
            1,
            16,
            BAD_REFERENCE,
            "Trigger[...] needs a reference `Playbook:Tn:Code`",
        ),
        ("`Var[x y, 1]`", 1, 6, BAD_VARIABLE, "a Var name must be `$identifier`, not `x y`"),
        ("`Var[ $1x, 1]`", 1, 7, BAD_VARIABLE, "a Var name must be `$identifier`, not `$1x`"),
        ("`Var[$x:int:str, 1]`", 1, 6, BAD_VARIABLE, "a Var name must be `$identifier`"),
        ("`Var[$x]`", 1, 2, BAD_VARIABLE, "a Var needs a value"),
        ("`Var[$x, ]`", 1, 2, BAD_VARIABLE, "a Var needs a value"),
        ('yld user\n`Say("a" "b" x)`', 2, 6, BAD_CALL, "the inline call is not valid Python"),
        ("yld user\n`$x = 5`", 2, 2, BAD_CALL, "an inline assignment must assign a call's result"),
        ("yld user\n`$f(1)`", 2, 2, BAD_CALL, "the callee of an inline call must be a name"),
        ("yld user\n`Say(1).x()`", 2, 8, TRAILING_TEXT, "unexpected text after `Say(...)`"),
        ("yld user\n`Say(user name)`", 2, 6, BAD_CALL, "the inline call is not valid Python"),
        ('`Step["A:01:QUE"] hello` ok', 1, 19, TRAILING_TEXT, "unexpected text after `Step[...]`"),
        ("yld user\n`foo(1)(2)`", 2, 8, TRAILING_TEXT, "unexpected text after `foo(...)`"),
        ("trig? yes", 1, 7, BAD_TRIGGER_CHECK, "after `trig?` write `no`"),
        ('trig? no `Step["A:01:QUE"]`', 1, 11, BAD_TRIGGER_CHECK, "only `Trigger["),
        ('`SaveArtifact($a, "s")`', 1, 2, BAD_ARTIFACT, 'SaveArtifact takes ($name, "summary", "content")'),
        ('`SaveArtifact(1, "s", "c")`', 1, 2, BAD_ARTIFACT, "the name must be `$name`"),
        ('`SaveArtifact($a, "s", "c", name=$b)`', 1, 2, BAD_ARTIFACT, "SaveArtifact takes"),
        ('`SaveArtifact($a, "s", $c)`', 1, 2, BAD_ARTIFACT, "the content must be a string"),
    ],
)
def test_failures_say_where_and_why(text: str, line: int, column: int, code: str, message: str) -> None:
    error = raises(text)
    assert (error.line, error.column, error.code) == (line, column, code), str(error)
    assert message in error.message
    assert error.source_line == text.split("\n")[line - 1]
    assert error.diagnostic.file == "<answer>"
    rendered = str(error)
    assert rendered.startswith(f"<answer>:{line}:{column}: {code} ")
    assert "^" in rendered.splitlines()[-1]


def test_a_quote_missing_on_one_line_does_not_swallow_the_lines_below() -> None:
    # Read across lines, the string opened on line 1 would close on line 2 and the Var would end there.
    answer = parse_answer('`Var[$__, "it]`\na "b" c" d]\n`Step["A:01:QUE"]` `Say("user", "hi")`\nyld user')
    assert kinds(answer) == ["Var", "Step", "Yield"]
    assert answer.actions[0] == VarAction(name="__", value='"it', raw='"it', literal=False)
    assert answer.commentary == ('a "b" c" d]',)
    assert answer.steps[0].calls[0].arguments[1].value == "hi"


# Properties ---------------------------------------------------------------------------------------

_SPECIAL = "`[](){}\"'$:,\n \\–?"
_contract_words = st.sampled_from(
    [
        "recap – ",
        "plan - ",
        "trig? ",
        "no",
        "yld ",
        "yld? ",
        "what? ",
        "user",
        "for meeting 1",
        '`Step["A:01:QUE"]`',
        'Step["',
        "`Var[$x, ",
        "Var[",
        "Return[",
        "`Return[]`",
        '`Trigger["A:T1:BGN"]`',
        "SaveArtifact(",
        '`Say("user", "',
        "$x:int = ",
        "`",
        '"',
        "'",
        "]",
        ")",
        "\n",
        "```",
        "é",
        "\\",
    ]
)
_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200) | st.lists(
    _contract_words | st.text(alphabet=_SPECIAL + string.ascii_letters, max_size=5), max_size=40
).map("".join)


def _parses_or_raises_contract_error(text: str) -> None:
    try:
        answer = parse_answer(text)
    except ContractSyntaxError as error:
        assert error.line >= 1 and error.column >= 1
        assert error.source_line is not None
        return
    assert isinstance(answer, Answer) and answer.raw == text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts)
def test_random_text_raises_nothing_but_contract_syntax_error(text: str) -> None:
    _parses_or_raises_contract_error(text)


@st.composite
def _mutated_answers(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(ANSWERS))
    for _ in range(draw(st.integers(1, 6))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 30)))
        insert = draw(st.text(alphabet=_SPECIAL + "ab1", max_size=4) | _contract_words)
        text = text[:start] + insert + text[end:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated_answers())
def test_mutated_real_answers_raise_nothing_but_contract_syntax_error(text: str) -> None:
    _parses_or_raises_contract_error(text)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
    value=_json_values,
    said=st.text(max_size=60),
)
def test_json_values_and_messages_come_back_exactly(name: str, value: object, said: str) -> None:
    dumped = json.dumps(value, ensure_ascii=False)
    message = json.dumps(said, ensure_ascii=False)
    answer = parse_answer(f'`Var[${name}, {dumped}]`\n`Step["A:01:QUE"]` `Say("user", {message})`\nyld user')
    var = answer.actions[0]
    assert isinstance(var, VarAction)
    assert (var.name, var.value, var.literal, var.raw) == (name, value, True, dumped)
    (call,) = answer.steps[0].calls
    assert call.arguments[1].value == said
    assert call.arguments[1].text == message
