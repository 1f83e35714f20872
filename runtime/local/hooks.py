"""The runtime's per-turn hooks for the local model: the turn's grammar and the prompt's example turns.

`ProgramRun(grammar=turn_grammar, examples=turn_examples)` asks these before every model turn of a
markdown playbook. The grammar is sent only to models that take one (LiteLLMModel decides by
provider), so passing it for every model costs a millisecond and changes nothing elsewhere.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pal_core.contract import StepRef
from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.grammar import build_turn_grammar
from runtime.local.turns import Callee, GrammarError, TurnSpec

if TYPE_CHECKING:
    from pal_core.flow import PlaybookFlow
    from runtime.execution import Execution
    from runtime.state import Frame

logger = logging.getLogger("runtime.local")


def turn_spec(execution: Execution, frame: Frame) -> TurnSpec:
    """The TurnSpec of the frame's next turn, from the running agent's state."""
    agent = execution.agent
    variables = agent.state.variables
    return TurnSpec(
        program=execution.run.program,
        agent=agent.klass,
        playbook=frame.playbook.name,
        current_line=frame.line,
        variables=variables.snapshot(),
        declared_types=variables.types,
        callees=_callees(execution, frame.playbook.name),
        triggers=tuple(
            StepRef(playbook=playbook.name, line=trigger.id, code=trigger.code)
            for playbook in agent.playbooks.values()
            for trigger in playbook.triggers
            if trigger.code in ("CND", "EVT")
        ),
    )


def _callees(execution: Execution, running: str) -> tuple[Callee, ...]:
    """The agent's other playbooks (remote tools included once listed) and the other agents' public ones."""
    agent = execution.agent
    found = [
        Callee(name=playbook.name, parameters=tuple(parameter.name for parameter in playbook.parameters))
        for playbook in agent.playbooks.values()
        if playbook.name != running
    ]
    for other in execution.run.program.agents:
        if other.name == agent.klass:
            continue
        instance = execution.run.instance_by_class(other.name)
        playbooks = instance.playbooks.values() if instance is not None else other.playbooks
        found.extend(
            Callee(
                name=f"{other.name}.{playbook.name}",
                parameters=tuple(parameter.name for parameter in playbook.parameters),
            )
            for playbook in playbooks
            if playbook.public and execution.is_callable(f"{other.name}.{playbook.name}")
        )
    return tuple(found)


def turn_grammar(execution: Execution, frame: Frame, flow: PlaybookFlow) -> str | None:
    """The GBNF grammar of the frame's next turn; None (unconstrained, the verifier still checks) when
    no grammar can describe it, which is logged."""
    try:
        return build_turn_grammar(turn_spec(execution, frame)).text
    except GrammarError as error:
        logger.warning("no grammar for %s at line %s: %s", frame.playbook.name, frame.line, error)
        return None


def turn_examples(execution: Execution, frame: Frame, flow: PlaybookFlow) -> str | None:
    """Two example turns of the running playbook, built from the program, as a prompt block."""
    agent = execution.agent
    try:
        turns = build_example_turns(
            execution.run.program,
            agent.klass,
            frame.playbook.name,
            variables=agent.state.variables.snapshot(),
        )
    except GrammarError as error:
        logger.warning("no example turns for %s: %s", frame.playbook.name, error)
        return None
    return render_examples(turns)
