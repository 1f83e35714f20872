"""Every answer a turn grammar admits parses and passes the verifier: random sentences of the grammars
of every corpus playbook, from every line, checked with `parse_answer` and `verify`."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest

from pal_core.contract import parse_answer
from pal_core.contract.verify import TurnContext, verify
from pal_core.flow import PlaybookFlow
from pal_core.ir import Agent, PlaybookKind, Program
from pal_core.parser import parse
from runtime.execution import BUILTIN_NAMES
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.turns import GrammarError, TurnSpec
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


def _callable(source: Program, agent: Agent, name: str) -> bool:
    """What the runtime's Execution.is_callable says, from the program alone."""
    if name in BUILTIN_NAMES:
        return True
    owner, dot, playbook = name.rpartition(".")
    if dot:
        other = source.agent(owner)
        if other is None:
            return False
        found = other.playbook(playbook)
        return other.metadata.remote is not None or (found is not None and found.public)
    return agent.playbook(name) is not None


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
            spec = TurnSpec(
                program=source,
                agent=agent_name,
                playbook=playbook.name,
                current_line=line,
                variables=existing,
                declared_types=declared,
            )
            try:
                grammar = parse_gbnf(build_turn_grammar(spec).text)
            except GrammarError as error:
                assert "no yield target" in str(error)
                continue
            context = TurnContext(
                playbook=playbook,
                flow=flow,
                current_line=line,
                variables={name: declared.get(name) for name in existing},
                declared_types=declared,
                is_callable=lambda name: _callable(source, agent, name),
                triggers=frozenset(
                    f"{other.name}:{trigger.id}:{trigger.code}"
                    for other in agent.playbooks
                    for trigger in other.triggers
                ),
            )
            for index in range(SAMPLES_PER_LINE):
                # Half the samples stretch free texts and repetitions towards their caps.
                answer = sample(grammar, rng, extra_repeats=3 if index % 2 else 400)
                assert grammar.accepts(answer), answer
                verify(parse_answer(answer), context)  # raises ContractViolation / ContractSyntaxError
                checked += 1
    assert checked or not any(p.kind is PlaybookKind.MARKDOWN and p.steps for p in agent.playbooks)
