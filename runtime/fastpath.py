"""The deterministic fast path: steps the runtime executes itself, with no model call.

A step runs here when its meaning is fully determined by the program and the current variables:
a call whose arguments are literals or set variables (queued for QUE, immediate for EXE, Say with a
literal message), an assignment of a computable expression, JMP, RET of nothing / a variable / a
literal / a computable expression, every YLD, and a CND whose condition is computable (or `Otherwise`,
reached only when the branches before it were not taken). Anything else returns None and the model
takes over from that line. A computation the runtime refuses for its size (ValueTooLarge) is not handed to
the model: the step fails, naming the budget; so does a computation that fails (`1 / 0`), with its error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.flow import END, PlaybookFlow
from pal_core.ir import ConditionKind, Opcode, Step, YieldKind
from runtime.calls import can_resolve, invoke_call
from runtime.control import CONTINUE, Control
from runtime.errors import PlaybookFailed, ProgramError
from runtime.expressions import ComputationFailed, NotEvaluable, coerce, evaluate

if TYPE_CHECKING:
    from runtime.execution import Execution
    from runtime.state import Frame

_EVALUABLE_CONDITIONS = frozenset(
    {ConditionKind.IF, ConditionKind.ELSE_IF, ConditionKind.WHILE, ConditionKind.WHEN, ConditionKind.OTHER}
)


async def run_step(execution: Execution, frame: Frame, flow: PlaybookFlow, step: Step) -> Control | None:
    """Execute `step` if the runtime can do it alone; None when the model must."""
    run = _BY_OPCODE.get(step.opcode)
    return await run(execution, frame, flow, step) if run is not None else None


async def _jump(execution: Execution, frame: Frame, flow: PlaybookFlow, step: Step) -> Control | None:
    if step.jump_target is None or step.jump_target not in flow.by_line:
        raise ProgramError(
            f"{frame.playbook.name}:{step.line}: JMP to a line that does not exist ({step.text!r})"
        )
    _done(execution, frame, step, step.jump_target)
    return CONTINUE


async def _yield(execution: Execution, frame: Frame, flow: PlaybookFlow, step: Step) -> Control | None:
    target = step.yield_target
    if target is None or target.kind is YieldKind.UNKNOWN:
        raise ProgramError(f"{frame.playbook.name}:{step.line}: unknown yield target {step.text!r}")
    _done(execution, frame, step, flow.after(step)[0])
    return Control(yield_kind=target.kind, yield_name=target.name)


async def _return(execution: Execution, frame: Frame, flow: PlaybookFlow, step: Step) -> Control | None:
    variables = execution.agent.state.variables
    if not step.text:
        value = None
    else:
        try:
            value = evaluate(step.text, variables.snapshot(), variables.limits)
        except ComputationFailed as error:
            raise step_failed(execution, frame, step, step.text, error) from None
        except NotEvaluable:
            return None
    frame.return_value = coerce(value, frame.playbook.returns, variables.limits)
    _done(execution, frame, step, END, detail=f"return {value!r}")
    return Control(yield_kind=YieldKind.RETURN)


async def _condition(execution: Execution, frame: Frame, flow: PlaybookFlow, step: Step) -> Control | None:
    condition = step.condition
    if condition is None or not step.children:
        return None
    if condition.kind is ConditionKind.OTHERWISE:
        holds = True
    elif condition.kind in _EVALUABLE_CONDITIONS and condition.expression:
        holds_now = guard_holds(execution, frame, step)
        if holds_now is None:
            return None
        holds = holds_now
    else:
        return None
    target = step.children[0].line if holds else flow.after(step)[0]
    _done(execution, frame, step, target, detail=f"condition {'holds' if holds else 'fails'}")
    return CONTINUE


def guard_holds(execution: Execution, frame: Frame, step: Step) -> bool | None:
    """Whether a guard's condition holds now, when the runtime can compute it (None: it cannot; the model
    decides). A computation that fails fails the step."""
    condition = step.condition
    if condition is None or condition.kind not in _EVALUABLE_CONDITIONS or not condition.expression:
        return None
    variables = execution.agent.state.variables
    try:
        return bool(evaluate(condition.expression, variables.snapshot(), variables.limits))
    except ComputationFailed as error:
        raise step_failed(execution, frame, step, condition.expression, error) from None
    except NotEvaluable:
        return None


async def _call_or_assignment(
    execution: Execution, frame: Frame, flow: PlaybookFlow, step: Step
) -> Control | None:
    variables = execution.agent.state.variables
    call = step.call
    if call is not None:
        if call.natural or not can_resolve(call, variables) or not execution.is_callable(call.name):
            return None
        _done(execution, frame, step, flow.after(step)[0])
        if step.opcode == Opcode.QUE and call.name not in SPEECH_CALLS:
            frame.queued.append(call)
        else:
            await invoke_call(execution, call)
    elif step.assignment is not None:
        value = assigned_value(execution, frame, step)
        if value is _NOT_COMPUTED:
            return None
        target = step.assignment.target
        _done(execution, frame, step, flow.after(step)[0], changed={target.name: value})
    else:
        return None
    if step.yield_target is not None:
        return Control(yield_kind=step.yield_target.kind, yield_name=step.yield_target.name)
    return CONTINUE


_NOT_COMPUTED = object()


def computed_value(execution: Execution, frame: Frame, step: Step, expression: str) -> Any:
    """The value of `expression`, a computation of `step` the program writes (`$y * 2`, `"urgent"`), or
    _NOT_COMPUTED when the runtime cannot compute it (the model must). A computation that fails fails the
    step."""
    variables = execution.agent.state.variables
    try:
        return evaluate(expression, variables.snapshot(), variables.limits)
    except ComputationFailed as error:
        raise step_failed(execution, frame, step, expression, error) from None
    except NotEvaluable:
        return _NOT_COMPUTED


def assigned_value(execution: Execution, frame: Frame, step: Step) -> Any:
    """Compute and store a step's assignment (`$x:int = $y * 2`); returns the value stored, or _NOT_COMPUTED
    when the runtime cannot compute it (the model must). A computation that fails fails the step."""
    assignment = step.assignment
    if assignment is None:
        return _NOT_COMPUTED
    value = computed_value(execution, frame, step, assignment.expression)
    if value is _NOT_COMPUTED:
        return value
    variables = execution.agent.state.variables
    target = assignment.target
    declared = target.type or variables.type_of(target.name)
    value = coerce(value, declared, variables.limits)
    variables.set(target.name, value, target.type)
    return value


def is_computed(value: Any) -> bool:
    """Whether `computed_value` computed (or `assigned_value` stored) a value."""
    return value is not _NOT_COMPUTED


def step_failed(
    execution: Execution, frame: Frame, step: Step, expression: str, error: Exception
) -> PlaybookFailed:
    """The failure of a step whose own computation fails (`$r = 1 / 0`): it fails with the error, as a
    computation refused for its size does; it is never handed to the model."""
    return PlaybookFailed(
        f"the computation `{expression}` fails: {error}",
        agent=execution.agent.klass,
        playbook=frame.playbook.name,
        line=step.line,
    )


_BY_OPCODE: dict[str, Callable[[Execution, Frame, PlaybookFlow, Step], Awaitable[Control | None]]] = {
    Opcode.JMP: _jump,
    Opcode.YLD: _yield,
    Opcode.RET: _return,
    Opcode.CND: _condition,
    Opcode.QUE: _call_or_assignment,
    Opcode.EXE: _call_or_assignment,
}
"""What the runtime does alone, by opcode (others are always the model's)."""


def _done(
    execution: Execution,
    frame: Frame,
    step: Step,
    next_line: str,
    *,
    detail: str = "",
    changed: dict | None = None,
) -> None:
    frame.last_line = step.line
    frame.line = next_line
    execution.services.trace(
        execution.agent,
        "step",
        playbook=frame.playbook.name,
        line=step.line,
        opcode=step.opcode,
        changed=changed or {},
        detail=detail or "fast path",
    )
