"""Value mutants of the paired real answers (issue 28): answers changed where the program fixes a value, for
the contract benchmark and its test.

Each mutant is made from a real answer the verifier accepts, judged in a turn context (the corpus one, or,
for the kinds that need them, the same with the variables' values known, as in a run):

- `return-value`: the Return of a RET whose value is a literal of the program, changed;
- `say-message`: the message of a Say the program writes literally, changed;
- `assigned-value`: the Var after an assignment the program computes (a literal), changed;
- `bare-call`: a call the program writes with literal or `$variable` arguments, left out of its step;
- `made-up-result`: a Var for the result of such a call, added after its step;
- `overwritten-variable`: a Var for a variable the program set (with a value, as in a run) and no step of
  the turn asks for, added with another value;
- `flipped-guard`: an answer that takes a guard's body while the program computes it false (or skips it
  while it is true), with the values that make it so.

The first four change no execution when the runtime does the program's part (the verified turn must then do
exactly what the original's does: benign); the last three must be rejected.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract import ContractSyntaxError, parse_answer
from pal_core.contract.fixed import (
    ComputationFailed,
    NotComputable,
    asked_variables,
    computed_assignment,
    computed_condition,
    computed_return,
    literal_evaluate,
    runtime_call,
)
from pal_core.contract.model import ReturnAction, StepAction, VarAction
from pal_core.contract.turn import TurnContext
from pal_core.contract.verify import ExecutedStep
from pal_core.ir import ArgKind
from runtime.expressions import contract_evaluator
from tests.paired_corpus import Outcome, effect, judge

ALTERING = frozenset({"made-up-result", "overwritten-variable", "flipped-guard"})
"""Kinds whose every mutant changes what executes: each must be rejected."""

KINDS = ("return-value", "say-message", "assigned-value", "bare-call", *sorted(ALTERING))


@dataclass(frozen=True, slots=True)
class ValueMutant:
    """One mutant: its kind, its text and the context it is judged in."""

    kind: str
    original: Outcome
    text: str
    context: TurnContext


@dataclass(slots=True)
class Verdict:
    """What happened to a mutant."""

    mutant: ValueMutant
    outcome: Outcome
    caught: bool
    benign: bool


def mutants(original: Outcome, context: TurnContext) -> Iterator[ValueMutant]:
    """Every value mutant of one accepted real answer."""
    if original.turn is None:
        return
    text = original.record["text"]
    try:
        answer = parse_answer(text)
    except ContractSyntaxError:
        return
    lines = text.split("\n")
    steps = {action.step.line: action for action in original.turn.actions if isinstance(action, ExecutedStep)}
    written = [action for action in answer.actions if isinstance(action, StepAction)]
    for position, action in enumerate(answer.actions):
        if isinstance(action, ReturnAction) and action.span is not None and action.raw.strip():
            owner = _owner(answer.actions, position)
            executed = steps.get(owner.ref.line) if owner is not None else None
            if executed is not None and computed_return(executed.step) and _literal(executed.step.text):
                changed = _replace_in(lines, action.span.line, f"Return[{action.raw}]", 'Return["changed"]')
                if changed is not None:
                    yield ValueMutant("return-value", original, changed, context)
        if isinstance(action, VarAction) and action.span is not None and action.name != "__":
            owner = _owner(answer.actions, position)
            executed = steps.get(owner.ref.line) if owner is not None else None
            step = executed.step if executed is not None else None
            if (
                step is not None
                and computed_assignment(step)
                and step.assignment is not None
                and step.assignment.target.name == action.name
                and _literal(step.assignment.expression)
            ):
                changed = _replace_in(lines, action.span.line, action.raw, _other(action.value))
                if changed is not None:
                    yield ValueMutant("assigned-value", original, changed, context)
    for action in written:
        executed = steps.get(action.ref.line)
        if executed is None or action.span is None:
            continue
        call = runtime_call(executed.step)
        if call is None:
            continue
        line = lines[action.span.line - 1]
        made = next((made for made in action.calls if made.name == call.name), None)
        if call.name in SPEECH_CALLS:
            message = call.arguments[-1] if call.arguments else None
            if (
                made is not None
                and message is not None
                and message.kind is ArgKind.LITERAL
                and made.arguments
            ):
                said = made.arguments[-1].text
                changed = _replace_in(lines, action.span.line, said, json.dumps("A message of its own."))
                if changed is not None:
                    yield ValueMutant("say-message", original, changed, context)
            continue
        if made is not None:
            span = re.search(r"`[^`]*\b" + re.escape(call.name) + r"\([^`]*`", line)
            if span is not None:
                bare = line[: span.start()].rstrip() + line[span.end() :]
                yield ValueMutant("bare-call", original, _with_line(lines, action.span.line, bare), context)
        if call.result is not None:
            added = f'`Var[${call.result.name}, "made up"]`'
            yield ValueMutant(
                "made-up-result", original, _insert_after(lines, action.span.line, added), context
            )
    yield from _overwritten(original, context, lines, written, steps)
    yield from _flipped(original, context, steps)


def judge_mutant(mutant: ValueMutant) -> Verdict:
    """Judge a mutant; benign when accepted and doing exactly what its original does in the same context."""
    outcome = judge({**mutant.original.record, "text": mutant.text, "kind": mutant.kind}, mutant.context)
    if outcome.turn is None:
        return Verdict(mutant, outcome, caught=True, benign=False)
    original = judge(mutant.original.record, mutant.context)
    benign = original.turn is not None and effect(original.turn, mutant.context) == effect(
        outcome.turn, mutant.context
    )
    return Verdict(mutant, outcome, caught=False, benign=benign)


# --- kinds that need the values of a run ---------------------------------------------------------------


def _valued(context: TurnContext, values: dict[str, Any]) -> TurnContext:
    """The context as a run has it: every variable's value known (null where none is given)."""
    known = dict.fromkeys(context.variables)
    known.update(values)
    return replace(context, values=known, values_known=True, evaluate=contract_evaluator(None))


def _overwritten(
    original: Outcome, context: TurnContext, lines: list[str], written: list[StepAction], steps: dict
) -> Iterator[ValueMutant]:
    if not written or written[0].span is None:
        return
    asked: set[str] = set()
    for executed in steps.values():
        asked |= asked_variables(executed.step)
        asked |= {call.result.name for call in executed.calls if call.result is not None}
    set_by_answer = {
        action.name
        for action in (original.turn.actions if original.turn is not None else ())
        if isinstance(action, VarAction)
    }
    for name in sorted(context.program_variables):
        if name in asked or name in set_by_answer or name not in context.variables:
            continue
        valued = _valued(context, {name: "the program's value"})
        if judge(original.record, valued).turn is None:
            continue  # the original itself does not hold there
        added = f'`Var[${name}, "the answer\'s value"]`'
        yield ValueMutant(
            "overwritten-variable", original, _insert_after(lines, written[0].span.line, added), valued
        )
        return  # one per answer


_CANDIDATES: tuple[Any, ...] = (0, 1, 5, 10, -1, "", "yes", "complete", True, False, [], ["a"], {})


def _flipped(original: Outcome, context: TurnContext, steps: dict) -> Iterator[ValueMutant]:
    """The original, in a context whose values make a guard it passes compute the other way."""
    if original.turn is None:
        return
    executed_steps = [action for action in original.turn.actions if isinstance(action, ExecutedStep)]
    evaluate = contract_evaluator(None)
    set_before: set[str] = set()
    """Variables the answer sets before the guard (their value there is not the context's)."""
    actions = list(original.turn.actions)
    for index, executed in enumerate(executed_steps):
        for action in actions[: actions.index(executed)]:
            if isinstance(action, VarAction):
                set_before.add(action.name)
            elif isinstance(action, ExecutedStep):
                if action.step.assignment is not None:
                    set_before.add(action.step.assignment.target.name)
                set_before.update(call.result.name for call in action.calls if call.result is not None)
        following = executed_steps[index + 1] if index + 1 < len(executed_steps) else None
        path = [*executed.implied, executed.step.line]
        after = [*following.implied, following.step.line] if following is not None else []
        for position, line in enumerate(path):
            guard = context.flow.by_line[line]
            if not computed_condition(guard) or guard.condition is None:
                continue
            ahead = path[position + 1] if position + 1 < len(path) else (after[0] if after else None)
            taken = executed.entered if line == executed.step.line else None
            if taken is None and ahead is not None:
                taken = ahead.startswith(guard.line + ".")
            if taken is None:
                continue
            names = sorted(set(re.findall(r"\$([A-Za-z_]\w*)", guard.condition.expression)))
            if not names or len(names) > 2 or set_before & set(names):
                continue
            for values in itertools.product(_CANDIDATES, repeat=len(names)):
                given = dict(zip(names, values, strict=True))
                try:
                    holds = bool(evaluate(guard.condition.expression, given))
                except (NotComputable, ComputationFailed):
                    continue
                if holds != taken:
                    yield ValueMutant(
                        "flipped-guard", original, original.record["text"], _valued(context, given)
                    )
                    return


# --- text edits ------------------------------------------------------------------------------------------


def _owner(actions: tuple, position: int) -> StepAction | None:
    for action in reversed(actions[:position]):
        if isinstance(action, StepAction):
            return action
    return None


def _literal(text: str) -> bool:
    try:
        literal_evaluate(text, {})
    except NotComputable:
        return False
    return True


def _other(value: Any) -> str:
    if isinstance(value, bool):
        return json.dumps(not value)
    if isinstance(value, (int, float)):
        return json.dumps(value + 7)
    if isinstance(value, str):
        return json.dumps(value + " (changed)")
    if isinstance(value, list):
        return json.dumps([*value, "changed"])
    return json.dumps({"changed": True})


def _replace_in(lines: list[str], number: int, old: str, new: str) -> str | None:
    line = lines[number - 1]
    if not old or old not in line or old == new:
        return None
    return _with_line(lines, number, line.replace(old, new, 1))


def _with_line(lines: list[str], number: int, text: str) -> str:
    return "\n".join([*lines[: number - 1], text, *lines[number:]])


def _insert_after(lines: list[str], number: int, text: str) -> str:
    return "\n".join([*lines[:number], text, *lines[number:]])
