"""Every answer a turn grammar admits parses and passes the verifier: random sentences of the grammars
of every corpus playbook, from every line, checked with `read_turn`: the grammar and the verifier read
the same description of the turn (pal_core.contract.turn)."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest

from pal_core.contract.turn import describe_turn
from pal_core.contract.verify import read_turn
from pal_core.flow import PlaybookFlow
from pal_core.ir import Agent, PlaybookKind, Program
from pal_core.parser import parse
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.turn_plan import GrammarError
from tests.conftest import CORPUS, FIXTURES
from tests.runtime.local.sampling import sample

SAMPLES_PER_LINE = 6
_DECLARED = re.compile(r"\$([A-Za-z_]\w*):([A-Za-z_]\w*)")
_MENTIONED = re.compile(r"\$([A-Za-z_]\w*)")


@cache
def program(path: Path) -> Program:
    return parse(path.read_text(encoding="utf-8"), file=str(path))


def _agents() -> list[tuple[Path, str]]:
    return [
        (path, agent.name)
        for path in [*sorted(CORPUS.glob("*.pbasm")), FIXTURES / "pal" / "seed_customer_support.pal"]
        for agent in program(path).agents
    ]


def _agent_text(agent: Agent) -> str:
    return "\n".join(step.text for playbook in agent.playbooks for step in playbook.all_steps())


@pytest.mark.parametrize(("path", "agent_name"), _agents(), ids=lambda value: getattr(value, "name", value))
def test_sampled_answers_of_every_grammar_pass_the_verifier(path: Path, agent_name: str) -> None:
    source = program(path)
    agent = source.agent(agent_name)
    assert agent is not None
    text = _agent_text(agent)
    declared = {name: type_text for name, type_text in _DECLARED.findall(text)}
    rng = random.Random(f"{path.name}:{agent_name}")
    checked = 0
    for playbook in agent.playbooks:
        if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
            continue
        names = set(_MENTIONED.findall(text)) | {parameter.name for parameter in playbook.parameters}
        existing = {name: None for name in sorted(names)}
        flow = PlaybookFlow(playbook)
        for line in flow.by_line:
            # One description of the turn for both the grammar and the verifier.
            context = describe_turn(
                source,
                agent,
                playbook,
                line,
                flow=flow,
                variables={name: declared.get(name) for name in existing},
                values=dict.fromkeys(existing),
                declared_types=declared,
            )
            try:
                grammar = parse_gbnf(build_turn_grammar(context).text)
            except GrammarError as error:
                assert "no yield target" in str(error)
                continue
            for index in range(SAMPLES_PER_LINE):
                # Half the samples stretch free texts and repetitions towards their caps.
                answer = sample(grammar, rng, extra_repeats=3 if index % 2 else 400)
                assert grammar.accepts(answer), answer
                read_turn(answer, context)  # raises ContractViolation / ContractSyntaxError
                checked += 1
    assert checked or not any(p.kind is PlaybookKind.MARKDOWN and p.steps for p in agent.playbooks)
