"""What a turn's answer may not decide: the values the program fixes.

A step whose value the program itself determines is executed by the runtime, never taken on the model's
word: a RET of a literal or an expression, an EXE assignment of an expression, a call whose arguments are
literals or `$variables` (a `Say` with a literal message among them), a guard whose condition is an
expression. An answer may claim such a step (real models write whole fragments): what it leaves out the
runtime does, and what it states otherwise is replaced by the program's own value before anything runs
(reported as R16, as a repair is). Variables the program sets are the program's: a `Var` line may write one
only where a step of the turn asks the model for it.

`check_fixed(turn, context)` runs after the rules of pal_core.contract.verify, on the verified turn. It walks
the answer in order over the variables the turn starts with (`TurnContext.values`, when the runtime knows
them; null counts as no value), computing what the program computes with `TurnContext.evaluate` (the
runtime's evaluator; literals only without one, as in `pal check-turn`). It returns the turn as the runtime
applies it (the program's calls and values in place of the answer's restatements, the calls of steps claimed
without them added), what it replaced, and the broken rules:

  V17 a variable the program sets, written by an answer no step of which asks for it (with another value
      than it has, or before the program gave it one), or the result of a call the runtime makes
  V18 a guard the program computes, taken the other way (the stated outcome, or the path)
  V19 a value outside the choices the step gives (`$choice = ... one of $candidates`)

What cannot be computed while verifying (it depends on a call this turn makes, or on a variable without a
value) is computed by the runtime when it applies the turn, and the runtime's value stands.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.answer_values import literal_value
from pal_core.contract.model import ReturnAction, VarAction
from pal_core.ir import ArgKind, Call, ConditionKind, Opcode, Step
from pal_core.pysource import parse_python
from pal_core.step_text import TYPED_VARIABLE_RE, python_source

if TYPE_CHECKING:
    from pal_core.contract.turn import TurnContext
    from pal_core.contract.verify import ExecutedStep, VerifiedTurn


class NotComputable(Exception):
    """The expression is not one the program can compute here (words, or a variable without a value)."""


class ComputationFailed(Exception):
    """The program's own computation fails (`1 / 0`): the step fails with this error when it runs."""


Evaluate = Callable[[str, Mapping[str, Any]], Any]
"""Computes a step expression (`$x * 2`, `"urgent"`) over variable values; raises NotComputable or
ComputationFailed."""

FUNCTIONS = frozenset({"len", "str", "int", "float", "bool", "round", "abs", "min", "max", "sorted"})
"""The functions a step expression may call (the runtime's evaluator computes exactly these)."""
_CONSTANTS = frozenset({"true", "false", "null", "True", "False", "None"})
_COMPUTABLE_CONDITIONS = frozenset(
    {ConditionKind.IF, ConditionKind.ELSE_IF, ConditionKind.WHILE, ConditionKind.WHEN, ConditionKind.OTHER}
)
_ONE_OF = re.compile(r"\bone of \$([A-Za-z_][A-Za-z0-9_]*)")


def is_expression(text: str) -> bool:
    """Whether `text` is an expression the program computes (not words): it parses, and every name in it is
    a `$variable`, a literal name or one of FUNCTIONS."""
    written = {match.group(1) for match in TYPED_VARIABLE_RE.finditer(text)}
    try:
        tree = parse_python(python_source(text.strip()), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in written | FUNCTIONS | _CONSTANTS:
            return False
    return True


def literal_evaluate(text: str, values: Mapping[str, Any]) -> Any:
    """The value of a literal expression (`"urgent"`, `10`, `[1, 2]`, `None`); NotComputable otherwise. What
    `pal check-turn` computes: it knows no variable's value."""
    try:
        tree = parse_python(python_source(text.strip()), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise NotComputable(text) from None
    value, ok = literal_value(tree.body)  # type: ignore[attr-defined]
    if not ok:
        raise NotComputable(text)
    return value


def computed_assignment(step: Step) -> bool:
    """Whether the step assigns a value the program computes (`$x = $y * 2`, `$label = "urgent"`)."""
    return step.assignment is not None and is_expression(step.assignment.expression)


def computed_return(step: Step) -> bool:
    """Whether the step is a RET whose value the program computes (`RET "urgent"`, `RET $total`)."""
    return step.opcode == Opcode.RET and bool(step.text.strip()) and is_expression(step.text)


def computed_condition(step: Step) -> bool:
    """Whether the step is a guard whose condition the program computes (`If $n > 3`)."""
    condition = step.condition
    return (
        step.opcode == Opcode.CND
        and bool(step.children)
        and condition is not None
        and condition.kind in _COMPUTABLE_CONDITIONS
        and bool(condition.expression)
        and is_expression(condition.expression)
    )


def runtime_call(step: Step) -> Call | None:
    """The step's call when the runtime makes it itself: a call as the program writes it, with literal or
    `$variable` arguments (a `Say` with a literal message, `$r = Record(note="served")`)."""
    call = step.call
    if call is None or call.natural or step.opcode not in (Opcode.QUE, Opcode.EXE):
        return None
    for argument in call.arguments:
        if argument.kind is ArgKind.LITERAL or argument.kind is ArgKind.VARIABLE:
            continue
        if call.name in SPEECH_CALLS and argument.kind is ArgKind.EXPRESSION and argument.text.isidentifier():
            continue  # Say(user, "...") names its target with a bare word
        return None
    return call


def asked_variables(step: Step) -> set[str]:
    """The variables a step asks the model to fill: the target of an assignment in words, the result of a
    call in words, and the variables its words declare with a type (`Ask the user for their $pin:int`);
    never those the program computes or only reads (`Tell the user whether $is_admin`)."""
    if step.opcode not in (Opcode.EXE, Opcode.QUE, Opcode.TNK, Opcode.CHK):
        return set()
    if computed_assignment(step) or runtime_call(step) is not None:
        return set()
    names = {match.group(1) for match in TYPED_VARIABLE_RE.finditer(step.text) if match.group(2)}
    if step.assignment is not None:
        names.add(step.assignment.target.name)
    if step.call is not None and step.call.result is not None:
        names.add(step.call.result.name)
    return names


def program_variables(steps: list[Step], parameters: list[str]) -> dict[str, str]:
    """The variables the program sets itself (name -> where): parameters, targets of computed assignments,
    results of calls the runtime makes."""
    found: dict[str, str] = {name: "a parameter" for name in parameters}
    for step in steps:
        where = f"step {step.line}"
        if computed_assignment(step) and step.assignment is not None:
            found.setdefault(step.assignment.target.name, where)
        call = runtime_call(step)
        if call is not None and call.result is not None:
            found.setdefault(call.result.name, f"{where} ({call.name})")
    return found


def choice_list(step: Step) -> str | None:
    """The list variable a step chooses from (`$choice = ... exactly one of $candidates ...`), if it says so."""
    if step.assignment is None or computed_assignment(step):
        return None
    match = _ONE_OF.search(step.text)
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True, kw_only=True)
class FixedViolation:
    """One broken rule of this module (pal_core.contract.verify turns it into a Violation)."""

    code: str
    """`V17`..`V19`."""
    message: str
    """What is wrong, for the model to read."""
    action: object = None
    """The answer's action where it happened."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Replaced:
    """A value the answer stated otherwise than the program fixes it, replaced by the program's (R16)."""

    message: str
    """What was replaced, in words."""
    action: object = None
    """The answer's action that stated it."""


class _Unknown:
    """A value the runtime sets when it applies the turn (a call's result): not known while verifying."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what


def check_fixed(
    turn: VerifiedTurn, context: TurnContext
) -> tuple[VerifiedTurn, list[Replaced], list[FixedViolation]]:
    """The turn as the runtime applies it, what was replaced in it, and the broken rules (V17-V19)."""
    checker = _FixedChecker(turn, context)
    actions = checker.run()
    returned = next((action for action in actions if isinstance(action, ReturnAction)), None)
    fixed = replace(turn, actions=tuple(actions), returned=returned if turn.returned is not None else None)
    return fixed, checker.replaced, checker.violations


class _FixedChecker:
    def __init__(self, turn: VerifiedTurn, context: TurnContext) -> None:
        self.turn = turn
        self.context = context
        self.evaluate: Evaluate = context.evaluate or literal_evaluate
        self.known = bool(context.values_known)
        self.state: dict[str, Any] = {
            name: value for name, value in context.values.items() if value is not None
        }
        """What the variables hold at this point of the answer (null is no value)."""
        self.flow = context.flow
        self.owned: Mapping[str, str] = context.program_variables
        self.violations: list[FixedViolation] = []
        self.replaced: list[Replaced] = []
        self.computed: set[str] = set()
        """Variables a step of this turn sets by the program's own work (computed, or a call's result)."""
        self.asked: set[str] = set()

    def add(self, code: str, message: str, action: object) -> None:
        self.violations.append(FixedViolation(code=code, message=message, action=action))

    def run(self) -> list[Any]:
        from pal_core.contract.verify import ExecutedStep

        actions = list(self.turn.actions)
        steps = [index for index, action in enumerate(actions) if isinstance(action, ExecutedStep)]
        for index in steps:
            self.asked |= asked_variables(actions[index].step)
        last_line = self.context.last_line
        if last_line and last_line in self.flow.by_line:
            # The question the previous turn asked: its answer arrives with this one.
            self.asked |= asked_variables(self.flow.by_line[last_line])
        result: list[Any] = []
        owner: Any = None
        for index, action in enumerate(actions):
            if isinstance(action, ExecutedStep):
                following = next((actions[later] for later in steps if later > index), None)
                owner = self._step(action, following)
                result.append(owner)
            elif isinstance(action, VarAction) and action.name != "__":
                kept = self._var(action, owner)
                if kept is not None:
                    result.append(kept)
            elif isinstance(action, ReturnAction):
                kept = self._return(action, owner)
                if kept is not None:
                    result.append(kept)
            else:
                result.append(action)
        return result

    # --- steps ---------------------------------------------------------------------------------------

    def _step(self, executed: ExecutedStep, following: ExecutedStep | None) -> ExecutedStep:
        step: Step = executed.step
        path = [*executed.implied, step.line]
        after = [*following.implied, following.step.line] if following is not None else []
        for position, line in enumerate(path):
            guard = self.flow.by_line[line]
            if not computed_condition(guard):
                continue
            ahead = path[position + 1] if position + 1 < len(path) else (after[0] if after else None)
            stated = executed.entered if line == step.line else None
            self._guard(guard, ahead, stated, executed.action)
        if computed_assignment(step) and step.assignment is not None:
            name = step.assignment.target.name
            self.computed.add(name)
            self._compute_into(name, step.assignment.expression, f"step {step.line}")
        call = runtime_call(step)
        if call is not None:
            executed = self._runtime_call(executed, call)
        for made in executed.calls:
            if made.result is not None:
                self.computed.add(made.result.name)
                self.state[made.result.name] = _Unknown(f"the result of {made.name}(...) at step {step.line}")
        return executed

    def _guard(self, guard: Step, ahead: str | None, stated: bool | None, action: object) -> None:
        condition = guard.condition
        if condition is None:
            return
        try:
            holds = bool(self.evaluate(condition.expression, self._values()))
        except (NotComputable, ComputationFailed):
            return  # the runtime decides when it applies the turn
        taken: bool | None = stated
        if taken is None and ahead is not None:
            taken = ahead.startswith(guard.line + ".")
        if taken is None or taken == holds:
            return
        where = f"continue inside it at {guard.children[0].line}" if holds else "skip its body"
        self.add(
            "V18",
            f"step {guard.line} `{guard.text}` is {'true' if holds else 'false'} (the program computes it): {where}",
            action,
        )

    def _compute_into(self, name: str, expression: str, where: str) -> None:
        try:
            value = self.evaluate(expression, self._values())
        except NotComputable:
            self.state[name] = _Unknown(f"the value {where} computes")
            return
        except ComputationFailed:
            self.state[name] = _Unknown(f"{where}, whose computation fails")
            return
        if value is None:
            self.state.pop(name, None)
        else:
            self.state[name] = value

    def _runtime_call(self, executed: ExecutedStep, call: Call) -> ExecutedStep:
        """A step whose call the runtime makes: the program's call, in place of the answer's writing of it
        (added when the step is claimed without it)."""
        if call.name not in SPEECH_CALLS and self.context.callee(call.name) is None:
            return executed  # not callable from here: the runtime hands the step to the model
        calls: list[Call] = []
        placed = False
        for made in executed.calls:
            if made.name == call.name or _both_speech(made, call):
                if not placed:
                    if not self._same_arguments(made, call):
                        self.replaced.append(
                            Replaced(
                                message=f"step {executed.step.line} makes the program's call {_written(call)}, "
                                f"not {_written(made)}",
                                action=executed.action,
                            )
                        )
                    calls.append(call)
                    placed = True
                continue
            calls.append(made)
        if not placed:
            calls.append(call)
        return replace(executed, calls=tuple(calls))

    def _same_arguments(self, made: Call, call: Call) -> bool:
        ours = [self._argument(argument) for argument in call.arguments]
        theirs = [self._argument(argument) for argument in made.arguments]
        if call.name in SPEECH_CALLS:
            ours, theirs = ours[-1:], theirs[-1:]  # the message; the target's spelling varies (user, "user")
        if len(ours) != len(theirs):
            return False
        return all(a is None or b is None or _same(a, b) for a, b in zip(ours, theirs, strict=True))

    def _argument(self, argument: Any) -> Any:
        """An argument's value where it is known, else None (not compared)."""
        if argument.kind is ArgKind.LITERAL:
            return argument.value
        if argument.kind is ArgKind.VARIABLE:
            value = self.state.get(argument.value)
            return None if isinstance(value, _Unknown) else value
        return None

    # --- Var lines -------------------------------------------------------------------------------------

    def _var(self, action: VarAction, owner: ExecutedStep | None) -> VarAction | None:
        """The Var line as the runtime applies it (None: dropped, the program sets the variable itself)."""
        name = action.name
        step: Step | None = owner.step if owner is not None else None
        if step is not None:
            choices = self._choices(step, name)
            if choices is not None and action.literal and not any(_same(action.value, c) for c in choices):
                shown = ", ".join(_show(choice) for choice in choices)
                self.add(
                    "V19", f"${name} must be one of {shown} (step {step.line} chooses from them)", action
                )
                return action
        current = self.state.get(name)
        if name in self.computed:
            if isinstance(current, _Unknown):
                if owner is not None and _call_result(owner, name):
                    self.add(
                        "V17", f"${name} is {current.what}, which the runtime makes; do not write it", action
                    )
                    return action
                return None  # computed by the runtime when it applies the turn; its value stands
            if name in self.state and action.literal and not _same(action.value, current):
                self.replaced.append(
                    Replaced(
                        message=f"${name} is {_show(current)} as the program computes it, not {action.raw}"
                    )
                )
            return _var_line(action, current) if name in self.state else None
        if name in self.asked or name not in self.owned:
            if action.literal and action.value is not None:
                self.state[name] = action.value
            return action
        if not self.known:
            return action  # `pal check-turn`: the values the program set are not known
        if name not in self.context.values:
            self.add(
                "V17",
                f"${name} is set by the program ({self.owned[name]}), not by the answer; it has no value yet",
                action,
            )
        elif name in self.state and action.literal and not _same(action.value, current):
            self.add(
                "V17",
                f"${name} is {_show(current)}, set by the program ({self.owned[name]}); no step of this turn "
                f"asks for it, so the answer may not change it to {action.raw}",
                action,
            )
        elif name not in self.state and action.literal and action.value is not None:
            self.state[name] = action.value  # no value yet (null): the answer may give it one
        return action

    def _choices(self, step: Step, name: str) -> list[Any] | None:
        if step.assignment is None or step.assignment.target.name != name:
            return None
        source = choice_list(step)
        options = self.state.get(source) if source is not None else None
        if not isinstance(options, list) or not options:
            return None
        return options

    def _return(self, action: ReturnAction, owner: ExecutedStep | None) -> ReturnAction | None:
        """The Return as the runtime applies it: the RET step's own value where the program computes it."""
        if owner is None or not computed_return(owner.step):
            return action
        step: Step = owner.step
        try:
            value = self.evaluate(step.text, self._values())
        except (NotComputable, ComputationFailed):
            return action  # the runtime computes it when it applies the turn, and its value stands
        raw = action.raw.strip()
        given: Any = action.value
        if raw.startswith("$"):
            given = self.state.get(raw[1:])
        if raw and not isinstance(given, _Unknown) and not _same(given, value):
            self.replaced.append(
                Replaced(
                    message=f"step {step.line} `RET {step.text}` returns {_show(value)}, not {raw}",
                    action=action,
                )
            )
        return replace(action, value=value, raw=_show(value, limit=None))

    def _values(self) -> dict[str, Any]:
        return {name: value for name, value in self.state.items() if not isinstance(value, _Unknown)}


def _var_line(action: VarAction, value: Any) -> VarAction:
    return replace(action, value=value, raw=_show(value, limit=None), literal=True)


def _written(call: Call) -> str:
    return f"{call.name}({', '.join(argument.text for argument in call.arguments)})"


def _sets(step: Step, name: str) -> bool:
    """Whether the step sets `name` by the program's own work (a computed assignment, a call's result)."""
    if computed_assignment(step) and step.assignment is not None and step.assignment.target.name == name:
        return True
    call = runtime_call(step)
    return call is not None and call.result is not None and call.result.name == name


def _call_result(executed: ExecutedStep, name: str) -> bool:
    return any(call.result is not None and call.result.name == name for call in executed.calls)


def _both_speech(made: Call, call: Call) -> bool:
    return made.name in SPEECH_CALLS and call.name in SPEECH_CALLS


def _same(given: Any, fixed: Any) -> bool:
    """Whether a value the answer states is the one the program fixes (numbers by value, tuples as lists)."""
    if isinstance(fixed, tuple):
        fixed = list(fixed)
    if isinstance(given, bool) or isinstance(fixed, bool):
        return given is fixed or (type(given) is type(fixed) and given == fixed)
    if isinstance(given, (int, float)) and isinstance(fixed, (int, float)):
        return math.isclose(given, fixed, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(given, str) and isinstance(fixed, (int, float)):
        return given.strip() == str(fixed)
    if isinstance(given, list) and isinstance(fixed, list):
        return len(given) == len(fixed) and all(_same(a, b) for a, b in zip(given, fixed, strict=True))
    if isinstance(given, dict) and isinstance(fixed, dict):
        return given.keys() == fixed.keys() and all(_same(given[key], fixed[key]) for key in given)
    return bool(given == fixed)


def _show(value: Any, limit: int | None = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"
