"""The runtime's per-turn hooks for the local model: the turn's grammar and the prompt's example turns.

`ProgramRun(grammar=turn_grammar, examples=turn_examples)` asks these before every model turn of a
markdown playbook. The grammar is sent only to models that take one (LiteLLMModel decides by
provider), so passing it for every model costs a millisecond and changes nothing elsewhere.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.grammar import build_turn_grammar
from runtime.local.turns import GrammarError
from runtime.turns import turn_context

if TYPE_CHECKING:
    from pal_core.flow import PlaybookFlow
    from runtime.execution import Execution
    from runtime.state import Frame

logger = logging.getLogger("runtime.local")


def turn_grammar(execution: Execution, frame: Frame, flow: PlaybookFlow) -> str | None:
    """The GBNF grammar of the frame's next turn; None (unconstrained, the verifier still checks) when
    no grammar can describe it, which is logged."""
    try:
        # What the messages the turn brings say grounds the numbers it stores (the user's order number).
        heard = [message.content for message in execution.agent.unread]
        return build_turn_grammar(turn_context(execution, frame, flow), heard=heard).text
    except GrammarError as error:
        logger.warning("no grammar for %s at line %s: %s", frame.playbook.name, frame.line, error)
        return None


def turn_examples(execution: Execution, frame: Frame, flow: PlaybookFlow) -> str | None:
    """Two example turns of the running playbook, built from the program, as a prompt block."""
    try:
        turns = build_example_turns(turn_context(execution, frame, flow))
    except GrammarError as error:
        logger.warning("no example turns for %s: %s", frame.playbook.name, error)
        return None
    return render_examples(turns)
