"""Meeting turns (issue 28): a chair's choice of the next speaker is held to the participants the program lists
(V19), in the verifier and in the bundled model's grammar, from the one description of the turn; a message
that gives the turn to someone not in the meeting is refused (V10)."""

from __future__ import annotations

import anyio
import pytest

from importers.autogen import import_target
from pal_core.contract import parse_answer
from pal_core.contract.turn import describe_turn
from pal_core.contract.verify import ContractViolation, read_turn
from pal_core.parser import parse
from runtime.api import run_playbook
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.models import ModelRequest, ScriptedModel
from runtime.trace import Tracer

pytestmark = pytest.mark.anyio

CHOICE_LINE = "23"


def _choice(name: str) -> str:
    return f'`Step["GroupChat:{CHOICE_LINE}:EXE"]`\n`Var[$choice, "{name}"]`\nyld call'


async def test_a_speaker_who_is_not_a_candidate_is_refused_and_asked_again() -> None:
    import tests.fixtures.autogen.teams as teams

    team = teams.selector_model
    await team.reset()
    picks = iter(teams.SELECTIONS)
    answers: list[str] = []

    def choose(request: ModelRequest) -> str:
        # The first choice names somebody the team does not have; the retry the real pick.
        answer = _choice("dave") if not answers else _choice(next(picks))
        answers.append(answer)
        return answer

    tracer = Tracer()
    result = import_target("tests.fixtures.autogen.teams:selector_model")
    with anyio.fail_after(60):
        transcript = await run_playbook(
            result.program, "Run", task="Plan it", model=ScriptedModel(choose), tracer=tracer
        )
    assert [entry["source"] for entry in transcript["messages"]] == ["user", "bob", "carol", "alice", "bob"]
    (violation,) = [event for event in tracer.events if event.event == "violation"]
    assert (
        violation.detail.startswith("V19")
        and '$choice must be one of "alice", "bob", "carol"' in violation.detail
    )


def test_the_choice_is_one_of_the_candidates_in_the_grammar_and_the_verifier() -> None:
    program = import_target("tests.fixtures.autogen.teams:selector_model").program
    chair = program.agents[0]
    group_chat = chair.playbook("GroupChat")
    assert group_chat is not None
    context = describe_turn(
        program,
        chair,
        group_chat,
        CHOICE_LINE,
        values={"candidates": ["alice", "carol"], "previous": "bob"},
        in_meeting=True,
        participants=("SelectorModel", "Alice", "Bob", "Carol"),
    )
    grammar = parse_gbnf(build_turn_grammar(context).text)
    head = "recap – bob spoke\nplan – pick the next speaker\n"
    assert grammar.accepts(head + _choice("alice")) and grammar.accepts(head + _choice("carol"))
    for name in ("bob", "dave", "Alice"):
        assert not grammar.accepts(head + _choice(name)), name
    read_turn(head + _choice("carol"), context)
    with pytest.raises(ContractViolation, match=r'V19 .*\$choice must be one of "alice", "carol"'):
        read_turn(head + _choice("bob"), context)


def test_a_turn_given_to_someone_not_in_the_meeting_is_refused() -> None:
    program = parse(
        """# Host
Hosts a debate.

## Debate() -> None
metadata:
  meeting: true
  required_attendees: [Pro, Con]
---
### Steps
01:QUE Say(meeting, Give the floor to the next speaker)
02:YLD meeting

# Pro
Argues for.

# Con
Argues against.
"""
    )
    host = program.agents[0]
    debate = host.playbook("Debate")
    assert debate is not None
    context = describe_turn(program, host, debate, "01", in_meeting=True)
    assert context.participants == ("Host", "Pro", "Con")
    answer = (
        "recap – the debate starts\nplan – give the floor\n"
        '`Step["Debate:01:QUE"]` `Say("meeting @{name}", "Your turn.")`\ntrig? no\n`Step["Debate:02:YLD"]`\nyld meeting'
    )
    read_turn(answer.format(name="Con"), context)
    with pytest.raises(
        ContractViolation, match=r"V10 .*@Judge is not in the meeting \(its participants: Con, Host, Pro\)"
    ):
        read_turn(answer.format(name="Judge"), context)
    grammar = parse_gbnf(build_turn_grammar(context).text)
    assert grammar.accepts(answer.format(name="Pro")) and not grammar.accepts(answer.format(name="Judge"))
    assert parse_answer(answer.format(name="Pro")).steps
