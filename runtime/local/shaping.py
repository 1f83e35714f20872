"""Turn shaping for models that decode under a grammar (the bundled local model, or a llama.cpp server):
each turn's GBNF grammar and the prompt's example answers, from the one description of the turn the
verifier reads (pal_core.contract.turn).

The runtime builds that description once per turn and asks the model's `turn_shaping()` for its shape;
models without a grammar get the plain prompt. A turn no grammar can describe is left unconstrained
(the verifier still checks it), which is logged.
"""

from __future__ import annotations

import logging

from pal_core.contract.react import ReactTurn
from pal_core.contract.turn import TurnContext
from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.grammar import build_turn_grammar, trigger_check_grammar
from runtime.local.react_grammar import build_react_grammar, react_examples
from runtime.local.turn_plan import GrammarError
from runtime.models.base import TurnShape

logger = logging.getLogger("runtime.local")


class GrammarShaping:
    """Grammars and example answers built from the program, turn by turn (runtime.models.base.TurnShaping)."""

    __slots__ = ()

    def shape(self, turn: TurnContext | ReactTurn) -> TurnShape:
        """The grammar of the turn and example answers of its kind (either None when it cannot be built:
        the turn is then unconstrained): a turn of numbered steps, or a react round."""
        if isinstance(turn, ReactTurn):
            return TurnShape(grammar=build_react_grammar(turn), examples=react_examples(turn))
        return TurnShape(grammar=turn_grammar(turn), examples=turn_examples(turn))

    def trigger_check(self, triggers: tuple[str, ...]) -> TurnShape:
        """`trig? no` or one of `triggers` fired, then `yld call`."""
        return TurnShape(grammar=trigger_check_grammar(triggers))


def turn_grammar(context: TurnContext) -> str | None:
    """The GBNF grammar of the turn; None (unconstrained, the verifier still checks) when no grammar can
    describe it, which is logged. What the messages the turn brings say grounds the numbers it stores."""
    try:
        return build_turn_grammar(context, heard=context.heard).text
    except GrammarError as error:
        logger.warning("no grammar for %s at line %s: %s", context.playbook.name, context.current_line, error)
        return None


def turn_examples(context: TurnContext) -> str | None:
    """Two example turns of the running playbook, built from the program, as a prompt block."""
    try:
        turns = build_example_turns(context)
    except GrammarError as error:
        logger.warning("no example turns for %s: %s", context.playbook.name, error)
        return None
    return render_examples(turns)


def local_turn_shaping() -> GrammarShaping:
    """The shaping the bundled model gives its turns (for a ScriptedModel standing in for it)."""
    return GrammarShaping()
