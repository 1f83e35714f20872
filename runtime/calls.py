"""Running a call written in PAL (`$x:int = Func($a, key="v")`): arguments resolved, result assigned."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.ir import ArgKind, Argument, Call
from runtime.errors import CallError
from runtime.expressions import NotEvaluable, coerce, evaluate

if TYPE_CHECKING:
    from runtime.execution import Execution


def argument_value(argument: Argument, variables: Any) -> Any:
    """The Python value of one argument; CallError when it names an unknown variable."""
    if argument.kind is ArgKind.VARIABLE:
        if argument.value not in variables:
            raise CallError(f"${argument.value} is not set")
        return variables[argument.value]
    if argument.kind is ArgKind.LITERAL:
        return argument.value
    if argument.kind is ArgKind.EXPRESSION:
        try:
            return evaluate(
                argument.text,
                variables.snapshot() if hasattr(variables, "snapshot") else variables,
                getattr(variables, "limits", None),
            )
        except NotEvaluable as error:
            raise CallError(f"cannot evaluate argument {argument.text!r}: {error}") from None
    return argument.text


def _arguments(call: Call) -> tuple[Argument, ...]:
    """The arguments, with Say's bare target word (`Say(user, ...)`, `Say(meeting, ...)`) read as text."""
    arguments = call.arguments
    if (
        call.name in SPEECH_CALLS
        and arguments
        and arguments[0].kind is ArgKind.EXPRESSION
        and arguments[0].text.isidentifier()
    ):
        first = arguments[0]
        return (
            Argument(text=first.text, kind=ArgKind.LITERAL, name=first.name, value=first.text),
            *arguments[1:],
        )
    return arguments


def can_resolve(call: Call, variables: Any) -> bool:
    """Whether every argument is a literal or a variable that is set (the fast path's condition)."""
    for argument in _arguments(call):
        if argument.kind is ArgKind.LITERAL:
            continue
        if argument.kind is ArgKind.VARIABLE and argument.value in variables:
            continue
        return False
    return True


async def invoke_call(execution: Execution, call: Call) -> Any:
    """Run a call and assign its result to the call's result variable, if any."""
    variables = execution.agent.state.variables
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for argument in _arguments(call):
        value = argument_value(argument, variables)
        if argument.name is None:
            if kwargs:
                raise CallError(f"{call.name}: a positional argument follows a keyword argument")
            args.append(value)
        else:
            kwargs[argument.name] = value
    result = await execution.call_playbook(call.name, args, kwargs)
    if call.result is not None:
        declared = call.result.type or variables.type_of(call.result.name)
        value = coerce(result, declared, variables.limits)
        variables.set(call.result.name, value, call.result.type)
        execution.services.trace(
            execution.agent,
            "assign",
            changed={call.result.name: value},
            detail=f"${call.result.name} = {call.name}(...)",
        )
    return result
