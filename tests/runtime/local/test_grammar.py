"""The turn grammar: legal next steps are accepted, illegal ones rejected (checked with gbnf_check)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from pal_core.contract.turn import Callee, CalleeKind
from pal_core.flow import PlaybookFlow
from pal_core.ir import PlaybookKind, Program
from pal_core.parser import parse
from runtime.local.gbnf_check import Grammar, parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.turn_plan import GrammarError, TurnLimits, TurnPlan, local_context
from tests.conftest import CORPUS, FIXTURES

SEED = FIXTURES / "pal" / "seed_customer_support.pal"


@cache
def program(path: Path) -> Program:
    return parse(path.read_text(encoding="utf-8"), file=str(path))


def grammar(path: Path | Program, agent: str, playbook: str, **options: object) -> Grammar:
    source = program(path) if isinstance(path, Path) else path
    return parse_gbnf(turn_grammar(source, agent, playbook, **options).text)


def turn_grammar(source: Program, agent: str, playbook: str, **options: object):  # type: ignore[no-untyped-def]
    """The grammar of a turn: context options (current_line, variables, callees, triggers) go to the shared
    turn description, grammar options (resume_after, limits) to the grammar."""
    grammar_options = {key: options.pop(key) for key in ("resume_after", "limits") if key in options}
    context = local_context(source, agent, playbook, **options)  # type: ignore[arg-type]
    return build_turn_grammar(context, **grammar_options)  # type: ignore[arg-type]


def answer(*lines: str) -> str:
    return "\n".join(lines)


HEAD = ("recap – the user just arrived", "plan – greet them and ask for the order")


# The seed's customer support playbook ----------------------------------------------------------------

GREETING_START = answer(
    *HEAD,
    '`Step["Greeting:01:QUE"]` `Say("user", "Hello! What is your order number?")`',
    "trig? no",
    '`Step["Greeting:02:YLD"]`',
    "yld user",
)


def test_the_first_turn_of_the_seed_program_is_accepted() -> None:
    assert grammar(SEED, "CustomerSupport", "Greeting").accepts(GREETING_START)


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (
            '`Step["Greeting:01:QUE"]` `Say("user", "Hello! What is your order number?")`\ntrig? no\n',
            "",
            "skips 01",
        ),
        ("Greeting:01:QUE", "Greeting:01:EXE", "wrong opcode"),
        ("Greeting:01:QUE", "Greet:01:QUE", "unknown playbook"),
        ("Greeting:02:YLD", "Greeting:03:YLD", "line 03 does not follow 01"),
        ("Greeting:02:YLD", "Greeting:02:RET", "wrong opcode"),
        ("yld user", "yld exit", "02 yields to the user"),
        ("yld user", "yld call", "02 yields to the user"),
        ("yld user", "yld user\ntrig? no", "nothing after the yield"),
        ("trig? no\n", "", "no trigger check between steps"),
        ("trig? no", 'trig? `Trigger["Greeting:T1:BGN"]`', "BGN triggers are not reported"),
        ("recap – the user just arrived\n", "", "no recap"),
        ("Hello! What", "Hello! `What", "backtick in a Say message"),
        ('`Say("user", "Hello! What is your order number?")`', '`Say("user", "")`', "empty Say"),
        ('`Say("user", "Hello! What is your order number?")`', '`Say("agent", "Hi")`', "Say to someone else"),
        ("\nyld user", "\nyld for user", "canonical yield words only"),
    ],
)
def test_illegal_variants_of_the_first_turn_are_rejected(old: str, new: str, why: str) -> None:
    assert old in GREETING_START
    variant = GREETING_START.replace(old, new, 1)
    assert not grammar(SEED, "CustomerSupport", "Greeting").accepts(variant), why


def test_after_the_first_yield_both_branches_of_the_condition_are_legal() -> None:
    after_yield = grammar(SEED, "CustomerSupport", "Greeting", resume_after="02")
    retry = answer(
        *HEAD,
        '`Step["Greeting:03:CND"]` yes — the order number 12 has too few digits',
        "trig? no",
        '`Step["Greeting:03.01:QUE"]` `Say("user", "That number looks wrong, please try again.")`',
        "trig? no",
        '`Step["Greeting:03.02:YLD"]`',
        "yld user",
    )
    finish = answer(
        *HEAD,
        '`Step["Greeting:03:CND"]` no — the order number is valid',
        "trig? no",
        '`Step["Greeting:04:QUE"]` `Say("user", "Let me look that up.")`',
        "trig? no",
        '`Step["Greeting:05:QUE"]` `Say("user", "Your order has shipped.")`',
        "trig? no",
        '`Step["Greeting:06:RET"]` `Return[]` `Var[$__, "Greeted the user and gave the order status."]`',
        "yld return",
    )
    assert after_yield.accepts(retry)
    assert after_yield.accepts(finish)
    illegal = {
        "skips into the body": retry.replace("Greeting:03.01:QUE", "Greeting:03.02:QUE"),
        "03.01 then 04": retry.replace(
            '`Step["Greeting:03.02:YLD"]`\nyld user', '`Step["Greeting:04:QUE"]`\nyld user'
        ),
        "a value from a -> None playbook": finish.replace("`Return[]`", '`Return["done"]`'),
        "RET yields to the user": finish.replace("yld return", "yld user"),
        "no summary": finish.replace(' `Var[$__, "Greeted the user and gave the order status."]`', ""),
        "a condition without its outcome": retry.replace("yes — the order number 12", "the order number 12"),
        "yes, then past the body": finish.replace("no — the order number", "yes — the order number"),
        "no, then into the body": retry.replace("yes — the order number", "no — the order number"),
        "no reason for a condition": retry.replace(" the order number 12 has too few digits", ""),
        "the yield step again": answer(*HEAD, '`Step["Greeting:02:YLD"]`', "yld user"),
        "a QUE step in words that does nothing": finish.replace(' `Say("user", "Let me look that up.")`', ""),
    }
    for why, text in illegal.items():
        assert not after_yield.accepts(text), why


def test_the_jump_goes_back_to_its_condition_only() -> None:
    at_jump = grammar(SEED, "CustomerSupport", "Greeting", current_line="03.03")
    loop = answer(
        *HEAD,
        '`Step["Greeting:03.03:JMP"]`',
        "trig? no",
        '`Step["Greeting:03:CND"]` yes — still invalid',
        "trig? no",
        '`Step["Greeting:03.01:QUE"]` `Say("user", "Please try again.")`',
        "trig? no",
        '`Step["Greeting:03.02:YLD"]`',
        "yld user",
    )
    assert at_jump.accepts(loop)
    assert not at_jump.accepts(loop.replace('"Greeting:03:CND"]` yes — still invalid', '"Greeting:04:QUE"]`'))


# Calls, variables, triggers ---------------------------------------------------------------------------

INTEROP = CORPUS / "playbooks-python-interop.pbasm"


def test_a_step_with_a_call_carries_exactly_that_call_and_may_yield_for_it() -> None:
    xy = grammar(INTEROP, "Interop", "XY")
    call = '`Step["XY:01:QUE"]` `$temp1:float = Y($num)`'
    assert xy.accepts(answer(*HEAD, call, "yld call"))
    assert xy.accepts(answer(*HEAD, call, "trig? no", '`Step["XY:02:YLD"]`', "yld call"))
    for other in ["`$temp1 = Y($num)`", "`$temp1:float = Y($temp2)`", "`$temp1:float = X($num)`", ""]:
        assert not xy.accepts(answer(*HEAD, call.replace("`$temp1:float = Y($num)`", other), "yld call")), (
            other
        )
    assert not xy.accepts(answer(*HEAD, call, "yld user"))


def test_variables_take_values_of_their_declared_type() -> None:
    triggers = CORPUS / "06-triggers.pbasm"
    main = grammar(triggers, "ExampleProgram", "Main", current_line="05")
    assignment = '`Step["Main:05:EXE"]`\n`Var[$x, {}]`\ntrig? no\n`Step["Main:06:QUE"]` `$account:dict = LoadAccount(email=$email, pin=$pin)`\nyld call'
    assert main.accepts(answer(*HEAD, assignment.format("10")))
    assert main.accepts(answer(*HEAD, assignment.format("-3")))
    for value in ['"10"', "10.5", "true", "[10]", "010"]:
        assert not main.accepts(answer(*HEAD, assignment.format(value))), value
    assert not main.accepts(answer(*HEAD, assignment.format("10").replace("$x,", "$y,")))


def test_leading_variables_record_what_the_user_said() -> None:
    facts = CORPUS / "05-country-facts.pbasm"
    main = grammar(facts, "FactsAboutNearbyCountries", "Main", resume_after="02")
    rest = answer(
        '`Step["Main:03:CND"]` no — a country was given',
        "trig? no",
        '`Step["Main:04:EXE"]` five neighbours',
        '`Var[$countries, ["Pakistan", "China", "Nepal"]]`',
        "trig? no",
        '`Step["Main:05:QUE"]` `Say("user", "Your neighbours are Pakistan, China and Nepal.")`',
        "trig? no",
        '`Step["Main:06:QUE"]` `Say("user", "Here are some facts.")`',
        "trig? no",
        '`Step["Main:07:QUE"]` `process_countries(countries=$countries)`',
        "yld call",
    )
    assert main.accepts(answer(*HEAD, '`Var[$country, "India"]`', "trig? no", rest))
    assert main.accepts(answer(*HEAD, rest))
    for lead in ["`Var[$country, 5]`", '`Var[$nation, "India"]`', '`Var[$country:str, "India"]`']:
        assert not main.accepts(answer(*HEAD, lead, "trig? no", rest)), lead
    four = ['`Var[$country, "India"]`'] * 4
    assert not main.accepts(answer(*HEAD, *four, "trig? no", rest))
    assert not main.accepts(answer(*HEAD, '`Var[$country, "India"]`', rest)), "no trigger check after Var"
    assert not main.accepts(answer(*HEAD, rest.replace('["Pakistan", "China", "Nepal"]', '"Pakistan"')))


def test_a_fired_trigger_must_be_real_and_ends_the_turn_with_a_call() -> None:
    triggers = CORPUS / "06-triggers.pbasm"
    main = grammar(triggers, "ExampleProgram", "Main", current_line="05")
    start = answer(*HEAD, '`Step["Main:05:EXE"]`', "`Var[$x, 20]`")
    assert main.accepts(answer(start, 'trig? `Trigger["TooBig:T1:CND"]`', "yld call"))
    assert main.accepts(answer(start, 'trig? `Trigger["Validation2:T1:CND"]`', "yld call"))
    for fake in ['`Trigger["TooBig:T2:CND"]`', '`Trigger["TooBig:T1:EVT"]`', '`Trigger["Main:T1:BGN"]`']:
        assert not main.accepts(answer(start, f"trig? {fake}", "yld call")), fake
    assert not main.accepts(answer(start, 'trig? `Trigger["TooBig:T1:CND"]`', "yld user"))
    only = grammar(triggers, "ExampleProgram", "Main", current_line="05", triggers=())
    assert not only.accepts(answer(start, 'trig? `Trigger["TooBig:T1:CND"]`', "yld call"))


def test_a_step_without_a_call_may_say_something_or_queue_a_known_callee() -> None:
    greeting = grammar(SEED, "CustomerSupport", "Greeting", current_line="04")
    tail = answer(
        "trig? no",
        '`Step["Greeting:05:QUE"]` `Say("user", "It has shipped.")`',
        "trig? no",
        '`Step["Greeting:06:RET"]` `Return[]` `Var[$__, "done"]`',
        "yld return",
    )
    assert greeting.accepts(answer(*HEAD, '`Step["Greeting:04:QUE"]` `Say("user", "One moment.")`', tail))
    assert not greeting.accepts(answer(*HEAD, '`Step["Greeting:04:QUE"]` `Greeting()`', tail)), (
        "no call to itself"
    )
    assert not greeting.accepts(answer(*HEAD, '`Step["Greeting:04:QUE"]` `LookUpOrder()`', tail))
    known = grammar(
        SEED,
        "CustomerSupport",
        "Greeting",
        current_line="04",
        callees=(Callee(name="LookUpOrder", kind=CalleeKind.REMOTE, parameters=("id",)),),
    )
    assert known.accepts(answer(*HEAD, '`Step["Greeting:04:QUE"]` `LookUpOrder("A-12")`', tail))
    assert not known.accepts(answer(*HEAD, '`Step["Greeting:04:QUE"]` `LookUpOrder("A-12", 2)`', tail))


def test_a_meeting_turn_says_to_the_meeting_and_yields_to_it() -> None:
    game = CORPUS / "two-player-game.pbasm"
    host = grammar(game, "Host", "GameRoom", current_line="06")
    text = answer(
        *HEAD,
        '`Step["GameRoom:06:CND"]` yes — the game is still on',
        "trig? no",
        '`Step["GameRoom:06.01:EXE"]`',
        "`Var[$turn_count, 1]`",
        "trig? no",
        '`Step["GameRoom:06.02:QUE"]` `Say("meeting", "1|2|3")`',
        "trig? no",
        '`Step["GameRoom:06.03:EXE"]` FootFinger starts',
        "trig? no",
        '`Step["GameRoom:06.04:QUE"]` `Say("meeting", "FootFinger, your move!")`',
        "trig? no",
        '`Step["GameRoom:06.05:YLD"]`',
        "yld meeting",
    )
    assert host.accepts(text)
    assert not host.accepts(text.replace("yld meeting", "yld user"))
    assert not host.accepts(text.replace('Say("meeting", "1|2|3")', 'Say("user", "1|2|3")'))
    assert not host.accepts(text.replace("`Var[$turn_count, 1]`", '`Var[$turn_count, "one"]`'))
    assert host.accepts_prefix(text[: text.index("06.05")])


# Bounds and errors ------------------------------------------------------------------------------------


def _program(steps: str, returns: str = "None") -> Program:
    return parse(f"# Bot\nA test agent.\n\n## Long() -> {returns}\nA long playbook.\n### Steps\n{steps}\n")


def test_a_long_stretch_without_yields_pauses_with_yld_call_when_the_budget_is_spent() -> None:
    steps = (
        "\n".join(f"{index:02d}:TNK Think about part {index}" for index in range(1, 15)) + "\n15:YLD for user"
    )
    built = turn_grammar(_program(steps), "Bot", "Long")
    assert built.max_steps == 10
    long = parse_gbnf(built.text)

    def turn(first: int, last: int, ending: str) -> str:
        body = [f'`Step["Long:{index:02d}:TNK"]`\ntrig? no' for index in range(first, last + 1)]
        body[-1] = body[-1].removesuffix("\ntrig? no")
        return answer(*HEAD, *body, ending)

    assert long.accepts(turn(1, 10, "yld call"))
    assert not long.accepts(turn(1, 11, "yld call")), "more steps than the budget"
    assert not long.accepts(turn(1, 9, "yld call")), "a pause before the budget is spent"
    assert not long.accepts(turn(1, 10, "yld user"))
    assert not long.accepts(turn(1, 10, "yld call").replace('`Step["Long:07:TNK"]`\ntrig? no\n', ""))
    rest = parse_gbnf(turn_grammar(_program(steps), "Bot", "Long", current_line="11").text)
    assert rest.accepts(
        answer(
            *HEAD,
            *[f'`Step["Long:{index:02d}:TNK"]`\ntrig? no' for index in range(11, 15)],
            '`Step["Long:15:YLD"]`',
            "yld user",
        )
    )


def test_loops_are_bounded_by_the_step_budget() -> None:
    steps = "01:CND While there is work\n  01.01:TNK Work\n  01.02:JMP 01\n02:YLD for user"
    loop = parse_gbnf(turn_grammar(_program(steps), "Bot", "Long", limits=TurnLimits(max_steps=7)).text)

    def turn(rounds: int) -> str:
        body = [
            '`Step["Long:01:CND"]` yes — more work\ntrig? no\n`Step["Long:01.01:TNK"]`\ntrig? no\n`Step["Long:01.02:JMP"]`\ntrig? no'
        ] * rounds
        return answer(
            *HEAD, *body, '`Step["Long:01:CND"]` no — done\ntrig? no\n`Step["Long:02:YLD"]`', "yld user"
        )

    assert loop.accepts(turn(0))
    assert loop.accepts(turn(1))  # 3 + 2 steps
    assert not loop.accepts(turn(2))  # 6 + 2 steps > 7


def test_free_text_is_capped() -> None:
    limits = TurnLimits(line_chars=20, say_chars=10)
    capped = grammar(SEED, "CustomerSupport", "Greeting", limits=limits)
    short = answer(
        "recap – twenty chars exactly"[:28],
        "plan – ok",
        '`Step["Greeting:01:QUE"]` `Say("user", "0123456789")`',
        "trig? no",
        '`Step["Greeting:02:YLD"]`',
        "yld user",
    )
    assert capped.accepts(short)
    assert not capped.accepts(short.replace("0123456789", "0123456789A"))
    assert not capped.accepts(short.replace("twenty chars exactly", "twenty chars exactly!"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"agent": "Nobody"}, "no agent `Nobody` (agents: CustomerSupport)"),
        ({"playbook": "Farewell"}, "no playbook `Farewell` (playbooks: Greeting)"),
        ({"current_line": "09"}, "Greeting has no line 09"),
        ({"resume_after": "09"}, "Greeting has no line 09"),
        ({"resume_after": "06"}, "nothing follows line 06"),
    ],
)
def test_specs_naming_what_the_program_lacks_are_refused(options: dict[str, str], message: str) -> None:
    arguments = {"agent": "CustomerSupport", "playbook": "Greeting", **options}
    with pytest.raises(GrammarError, match=re.escape(message)):
        turn_grammar(program(SEED), **arguments)  # type: ignore[arg-type]


def test_a_loop_that_never_yields_runs_a_budget_of_steps_per_turn() -> None:
    spinning = parse_gbnf(
        turn_grammar(
            _program("01:TNK Spin\n02:JMP 01\n03:YLD for user"), "Bot", "Long", limits=TurnLimits(max_steps=4)
        ).text
    )
    rounds = ['`Step["Long:01:TNK"]`', '`Step["Long:02:JMP"]`'] * 3
    assert spinning.accepts(answer(*HEAD, "\ntrig? no\n".join(rounds[:4]), "yld call"))
    assert not spinning.accepts(answer(*HEAD, "\ntrig? no\n".join(rounds[:5]), "yld call"))
    assert not spinning.accepts(
        answer(*HEAD, "\ntrig? no\n".join(rounds[:3]), '`Step["Long:03:YLD"]`', "yld user")
    )


def test_a_yield_to_an_unknown_target_is_never_entered() -> None:
    lunch = _program("01:TNK Get hungry\n02:YLD for lunch\n03:RET")
    with pytest.raises(GrammarError, match="yields to 'for lunch', which is no yield target"):
        turn_grammar(lunch, "Bot", "Long", current_line="02")
    before = parse_gbnf(turn_grammar(lunch, "Bot", "Long").text)
    assert before.accepts(answer(*HEAD, '`Step["Long:01:TNK"]`', "yld call"))
    assert not before.accepts(
        answer(*HEAD, '`Step["Long:01:TNK"]`', "trig? no", '`Step["Long:02:YLD"]`', "yld call")
    )


def test_expressions_in_call_arguments_become_values_and_thinking_steps_make_no_calls() -> None:
    steps = '01:QUE $r:str = Room(topic="Game for " + $game, seats=2)\n02:TNK Report(user, $r)\n03:RET $r'
    source = _program(steps, returns="str")
    room = parse_gbnf(turn_grammar(source, "Bot", "Long").text)
    assert room.accepts(
        answer(*HEAD, '`Step["Long:01:QUE"]` `$r:str = Room(topic="Game for chess", seats=2)`', "yld call")
    )
    assert not room.accepts(
        answer(*HEAD, '`Step["Long:01:QUE"]` `$r:str = Room(topic="Game for " + $game, seats=2)`', "yld call")
    )
    at_think = parse_gbnf(turn_grammar(source, "Bot", "Long", current_line="02").text)
    final = '`Step["Long:03:RET"]` `Return["room"]` `Var[$__, "made a room"]`\nyld return'
    assert at_think.accepts(answer(*HEAD, '`Step["Long:02:TNK"]` the room is ready', "trig? no", final))
    assert not at_think.accepts(answer(*HEAD, '`Step["Long:02:TNK"]` `Report(user, $r)`', "trig? no", final))


def test_python_playbooks_do_not_run_turn_by_turn() -> None:
    facts = program(CORPUS / "05-country-facts.pbasm")
    with pytest.raises(GrammarError, match="not a markdown playbook"):
        turn_grammar(facts, "FactsAboutNearbyCountries", "process_countries")


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="say_chars"):
        TurnLimits(say_chars=0)


# Every corpus playbook, every line -------------------------------------------------------------------


def _corpus_playbooks() -> list[tuple[Path, str, str]]:
    found = []
    for path in [*sorted(CORPUS.glob("*.pbasm")), SEED]:
        for agent in program(path).agents:
            for playbook in agent.playbooks:
                if playbook.kind is PlaybookKind.MARKDOWN and playbook.steps:
                    found.append((path, agent.name, playbook.name))
    return found


@pytest.mark.parametrize(
    ("path", "agent", "playbook"), _corpus_playbooks(), ids=lambda value: getattr(value, "name", value)
)
def test_every_line_of_every_corpus_playbook_has_a_well_formed_grammar(
    path: Path, agent: str, playbook: str
) -> None:
    source = program(path)
    flow = PlaybookFlow(source.agent(agent).playbook(playbook))  # type: ignore[union-attr]
    built = 0
    for line in flow.by_line:
        try:
            text = turn_grammar(source, agent, playbook, current_line=line).text
        except GrammarError as error:
            assert "no yield target" in str(error)
            continue
        parsed = parse_gbnf(text)
        assert text.splitlines()[1].startswith("root ::= ")
        step_first = f'recap – x\nplan – y\n`Step["{playbook}:{line}:{flow.by_line[line].opcode}"]`'
        needed = TurnPlan(local_context(source, agent, playbook, current_line=line)).needed_first(line)
        if needed:
            # The step's call passes a variable that does not exist yet: the answer sets it first.
            assert parsed.accepts_prefix(f"recap – x\nplan – y\n`Var[${needed[0]}, ")
            assert not parsed.accepts_prefix(step_first)
        else:
            assert parsed.accepts_prefix(step_first)
        built += 1
    assert built


# Numbers the turn brings --------------------------------------------------------------------------------

ORDER_DESK = Path(__file__).resolve().parents[3] / "examples" / "order_status.pal"


def order_turn(order_number: str) -> str:
    return answer(
        "recap – the user gave their order number",
        "plan – look the order up",
        '`Step["Main:03:EXE"]`',
        f"`Var[$order_number, {order_number}]`",
        "trig? no",
        '`Step["Main:04:QUE"]` `$report:str = LookUpOrder(order_number=$order_number)`',
        "yld call",
    )


def order_grammar(heard: tuple[str, ...], **options: object) -> Grammar:
    from runtime.loader import load

    context = local_context(load(ORDER_DESK), "OrderDesk", "Main", current_line="03", **options)  # type: ignore[arg-type]
    return parse_gbnf(build_turn_grammar(context, heard=heard).text)


def test_a_number_the_turn_stores_is_one_the_reply_holds() -> None:
    # The bundled model copied the example turn's `1` instead of the user's order number.
    heard = order_grammar(("Hi! Where is my order 2718? I ordered 2 mugs.",))
    assert heard.accepts(order_turn("2718")) and heard.accepts(order_turn("2"))
    assert not heard.accepts(order_turn("1"))
    assert not heard.accepts(order_turn("27"))


def test_without_numbers_heard_or_for_a_variable_that_exists_any_number_goes() -> None:
    assert order_grammar(("I do not know it",)).accepts(order_turn("1"))
    assert order_grammar(()).accepts(order_turn("4821"))
    assert order_grammar(("order 2718",), variables={"order_number": 5}).accepts(order_turn("1"))


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Hi! Where is my order 2718?", ("2718",)),
        ("It costs $1,250.50 or -3, maybe 007.", ("1250.5", "-3", "7")),
        ("v1.2.3 and A12 and the 2nd one", ()),
        ("order-2718. Then 2718 again", ("2718",)),
        ("pi is 3.14.", ("3.14",)),
    ],
)
def test_the_numbers_a_text_holds(text: str, numbers: tuple[str, ...]) -> None:
    from runtime.local.grammar import heard_numbers

    assert heard_numbers([text]) == numbers
