"""Example turns built from the program: they parse, follow the flow graph, and their grammar admits them;
changing a step, a code, a playbook or a yield in them makes the grammar refuse them."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from pal_core.contract import StepAction, VarAction, parse_answer
from pal_core.flow import PlaybookFlow
from pal_core.ir import OPCODES, PlaybookKind, Program, YieldKind
from pal_core.parser import parse
from runtime.local.fewshot import ExampleTurn, build_example_turns, render_examples
from runtime.local.gbnf_check import Grammar, parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.turn_plan import GrammarError, local_context
from tests.conftest import CORPUS, FIXTURES

SEED = FIXTURES / "pal" / "seed_customer_support.pal"
_STEP = re.compile(r'`Step\["(?P<playbook>[^:"]+):(?P<line>[0-9.]+):(?P<code>[A-Z]+)"\]`')


@cache
def program(path: Path) -> Program:
    return parse(path.read_text(encoding="utf-8"), file=str(path))


def _corpus_playbooks() -> list[tuple[Path, str, str]]:
    found = []
    for path in [*sorted(CORPUS.glob("*.pbasm")), SEED]:
        for agent in program(path).agents:
            for playbook in agent.playbooks:
                if playbook.kind is PlaybookKind.MARKDOWN and playbook.steps:
                    found.append((path, agent.name, playbook.name))
    return found


PLAYBOOKS = _corpus_playbooks()


def _grammar(turn: ExampleTurn) -> Grammar:
    return parse_gbnf(build_turn_grammar(turn.context, resume_after=turn.resume_after).text)


def _entries(turn: ExampleTurn, flow: PlaybookFlow) -> frozenset[str]:
    if turn.resume_after is not None:
        return flow.successors(turn.resume_after)
    return frozenset({flow.first})


@pytest.mark.parametrize(
    ("path", "agent", "playbook"), PLAYBOOKS, ids=lambda value: getattr(value, "name", value)
)
def test_examples_parse_follow_the_flow_and_fit_their_grammar(path: Path, agent: str, playbook: str) -> None:
    source = program(path)
    flow = PlaybookFlow(source.agent(agent).playbook(playbook))  # type: ignore[union-attr]
    turns = build_example_turns(local_context(source, agent, playbook))
    assert 1 <= len(turns) <= 2
    for turn in turns:
        parsed = parse_answer(turn.answer)
        steps = [action for action in parsed.actions if isinstance(action, StepAction)]
        assert steps, turn.answer
        assert parsed.recap and parsed.plan
        assert {step.ref.playbook for step in steps} == {playbook}
        assert steps[0].ref.line in _entries(turn, flow)
        for before, after in itertools.pairwise(steps):
            assert after.ref.line in flow.successors(before.ref.line), (before.ref, after.ref)
        for step in steps:
            assert step.ref.code == flow.by_line[step.ref.line].opcode
        final = parsed.final_yield
        assert final is not None and final.target.kind is not YieldKind.UNKNOWN
        last = flow.by_line[steps[-1].ref.line]
        if (
            last.opcode == "YLD"
            and last.yield_target is not None
            and last.yield_target.kind is not YieldKind.UNKNOWN
        ):
            assert final.target.kind is last.yield_target.kind
        if last.opcode == "RET":
            assert final.target.kind is YieldKind.RETURN
        grammar = _grammar(turn)
        # The example fits its grammar once each stand-in is a real value; a stand-in itself never can be
        # written (nothing of an example can be copied into what a model returns).
        assert grammar.accepts(_filled_in(turn.answer)), turn.answer
        if _STAND_IN.search(turn.answer):
            assert not grammar.accepts(turn.answer), turn.answer


_STAND_IN = re.compile(r'"<([^"<>]*)>"')


def _filled_in(answer: str) -> str:
    """The answer with each stand-in (`"<order status>"`) replaced by a value a real answer could hold."""
    return _STAND_IN.sub(lambda found: '"' + found.group(1).replace(" ", "-") + '"', answer)


@pytest.mark.parametrize(
    ("path", "agent", "playbook"), PLAYBOOKS, ids=lambda value: getattr(value, "name", value)
)
def test_the_grammar_refuses_mutated_examples(path: Path, agent: str, playbook: str) -> None:
    source = program(path)
    flow = PlaybookFlow(source.agent(agent).playbook(playbook))  # type: ignore[union-attr]
    lines = list(flow.by_line)
    for turn in build_example_turns(local_context(source, agent, playbook)):
        grammar = _grammar(turn)
        turn = replace(turn, answer=_filled_in(turn.answer))
        found = list(_STEP.finditer(turn.answer))
        for index, match in enumerate(found):
            legal = _entries(turn, flow) if index == 0 else flow.successors(found[index - 1]["line"])

            def replaced(
                group: str, value: str, match: re.Match[str] = match, text: str = turn.answer
            ) -> str:
                start, end = match.span(group)
                return text[:start] + value + text[end:]

            for line in lines:
                if line not in legal:
                    assert not grammar.accepts(replaced("line", line)), f"illegal line {line} at step {index}"
            for code in OPCODES - {match["code"]}:
                assert not grammar.accepts(replaced("code", code)), f"wrong code {code}"
            assert not grammar.accepts(replaced("playbook", playbook + "X"))
        last = flow.by_line[found[-1]["line"]]
        if last.opcode in ("YLD", "RET"):
            said = turn.answer.rsplit("\nyld ", 1)[1]
            for word in {"user", "call", "return", "exit", "meeting"} - {said}:
                wrong = turn.answer[: -len(said)] + word
                assert not grammar.accepts(wrong), f"yld {word} after {last.line}:{last.opcode}"


def test_the_second_example_continues_after_the_first_ones_yield_with_what_the_user_said() -> None:
    greeting = program(CORPUS / "02-personalized-greeting.pbasm")
    first, second = build_example_turns(local_context(greeting, "CustomerSupportAgent", "GreetTheUser"))
    assert first.answer.endswith('`Step["GreetTheUser:03:YLD"]`\nyld user')
    assert second.resume_after == "03"
    assert (
        second.situation
        == 'Continue executing GreetTheUser at line 04. (The reply to line 03 says: name is "<name>".)'
    )
    parsed = parse_answer(second.answer)
    assert parsed.actions[0] == VarAction(name="name", value="<name>", raw='"<name>"')
    assert [step.ref.line for step in parsed.steps] == ["04", "05", "06"]
    assert parsed.final_yield is not None and parsed.final_yield.target.kind is YieldKind.EXIT


def test_a_playbook_finished_in_one_turn_gets_another_branch_as_second_example() -> None:
    order = program(CORPUS / "tutorials_03.01_Order_Support_Agent_6a901f96b774fe82.pbasm")
    turns = build_example_turns(local_context(order, order.agents[0].name, "ValidateOrderId"))
    assert len(turns) == 2
    paths = [[step.ref.line for step in parse_answer(turn.answer).steps] for turn in turns]
    assert paths[0] != paths[1]
    assert all(turn.resume_after is None for turn in turns)


def test_a_one_step_playbook_has_one_example() -> None:
    facts = program(CORPUS / "05-country-facts.pbasm")
    (only,) = build_example_turns(local_context(facts, "FactsAboutNearbyCountries", "GetCountryFact"))
    assert '`Step["GetCountryFact:01:RET"]` `Return["<what GetCountryFact returns>"]`' in only.answer
    assert only.answer.endswith("yld return")


def test_literals_written_in_the_program_are_used() -> None:
    triggers = program(CORPUS / "06-triggers.pbasm")
    (account,) = build_example_turns(local_context(triggers, "ExampleProgram", "LoadAccount"))
    assert '`Return[{"balance": 8999}]`' in account.answer
    text = render_examples(build_example_turns(local_context(triggers, "ExampleProgram", "Main")))
    assert text.startswith("Example 1: Continue executing Main at line 01.\nrecap – ")
    assert (
        '\n\nExample 2: Continue executing Main at line 03. (The reply to line 02 says: pin is "<pin>".)'
        in text
    )


def test_values_that_do_not_fit_the_declared_type_become_stand_ins() -> None:
    steps = "01:EXE $n:int = 2.5\n02:EXE $m:list = [1, [2]]\n03:RET 7"
    source = parse(f"# Bot\nA bot.\n\n## Calc() -> str\nCalculates.\n### Steps\n{steps}\n")
    (only,) = build_example_turns(local_context(source, "Bot", "Calc"))
    assert "`Var[$n, 1]`" in only.answer
    assert '`Var[$m, ["<m item>"]]`' in only.answer
    assert '`Return["<what Calc returns>"]`' in only.answer


def test_examples_become_chat_messages() -> None:
    (first, _) = build_example_turns(local_context(program(SEED), "CustomerSupport", "Greeting"))
    user, assistant = first.messages()
    assert (user.role, user.content) == ("user", "Continue executing Greeting at line 01.")
    assert assistant.role == "assistant" and assistant.content == first.answer


def test_unknown_playbooks_are_refused_as_by_the_grammar() -> None:
    with pytest.raises(GrammarError, match="no playbook `Nope`"):
        build_example_turns(local_context(program(SEED), "CustomerSupport", "Nope"))


@pytest.mark.parametrize(
    ("instruction", "message"),
    [
        (
            "Greet the user and ask for their order number",
            "Hello! Could you tell me your order number, please?",
        ),
        ("Ask them to try again", "Sorry, that did not work. Could you try again, please?"),
        ("Tell the user their order status", "Here is your order status."),
        ("Introduce yourself as the receptionist", "Hello, I am the receptionist."),
        ("Ask the visitor for their name", "Could you tell me your name, please?"),
        ("Say goodbye to the user", "Goodbye, and have a good day!"),
        ("Look up order status", "Let me look up order status."),
    ],
)
def test_example_messages_say_what_the_instruction_asks_for_instead_of_echoing_it(
    instruction: str, message: str
) -> None:
    from runtime.local.fewshot import utterance

    assert utterance(instruction) == message


def test_examples_do_not_teach_the_model_to_enter_a_retry_loop() -> None:
    from pal_core.compiler import compile_markdown

    source = (FIXTURES / "pb" / "seed_customer_support.pb").read_text(encoding="utf-8")
    program = compile_markdown(source)
    second = build_example_turns(local_context(program, "CustomerSupport", "Greeting"))[1].answer
    assert '`Step["Greeting:03:CND"]` no — ' in second
    assert "03.01" not in second
