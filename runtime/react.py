"""React playbooks (`execution_mode: react`): instructions without numbered steps.

The model works in rounds: it may call playbooks (inline calls, outside any Step), set variables, and
finally return. Each answer is parsed and checked before anything runs: only known callees, only
literal or `$variable` arguments, and a final `yld call` (run the calls, then ask again) or
`yld return` with `Return[...]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pal_core.contract import ContractSyntaxError, StrayCallAction, parse_answer
from pal_core.contract.model import ReturnAction, StepAction, VarAction
from pal_core.ir import ArgKind, Call, Playbook, YieldKind
from runtime.calls import invoke_call
from runtime.errors import RunError
from runtime.expressions import coerce
from runtime.models.base import ChatMessage, ModelRequest, RequestKind
from runtime.prompt import SYSTEM

if TYPE_CHECKING:
    from runtime.execution import Execution

REACT_RULES = """This playbook has no numbered steps: follow its instructions. In each answer, write the calls \
you need as inline calls in backticks (for example `$r = Exp(5)`), one per line, then `yld call`; you will \
see the results and answer again. When done, write `Return[<value>]` and `yld return`."""


async def react_loop(execution: Execution, playbook: Playbook) -> Any:
    services = execution.services
    variables = execution.agent.state.variables
    callables = (
        ", ".join(sorted(name for name in execution.agent.playbooks if name != playbook.name)) or "none"
    )
    messages = [
        ChatMessage(role="system", content=SYSTEM + "\n\n" + REACT_RULES),
        ChatMessage(
            role="user",
            content=(
                f"# {playbook.name}\n{playbook.description}\n\nCallable playbooks: {callables}\n"
                f"Variables: {variables.snapshot()}"
            ),
        ),
    ]
    failures = 0
    for _ in range(services.limits.max_react_rounds):
        request = ModelRequest(
            kind=RequestKind.REACT,
            messages=tuple(messages),
            max_tokens=services.limits.max_answer_tokens,
            temperature=services.limits.temperature,
            seed=services.limits.seed,
            metadata={"agent": execution.agent.klass, "playbook": playbook.name, "mode": "react"},
        )
        call_id, response = await services.call_model(request, execution.agent)
        text = response.text
        try:
            calls, updates, returned, yield_kind = _check(execution, parse_answer(text))
        except (ContractSyntaxError, _Rejected) as error:
            failures += 1
            services.trace(
                execution.agent, "violation", playbook=playbook.name, model_call=call_id, detail=str(error)
            )
            if failures > services.limits.max_retries:
                raise RunError(
                    f"the model broke the react contract: {error}",
                    agent=execution.agent.klass,
                    playbook=playbook.name,
                    answer=text,
                ) from None
            messages += [
                ChatMessage(role="assistant", content=text),
                ChatMessage(role="user", content=f"Rejected: {error}. Answer again."),
            ]
            continue
        failures = 0
        for name, value in updates:
            variables.set(name, value)
        results = []
        for call in calls:
            result = await invoke_call(execution, call)
            results.append(f"{call.name} returned {result!r}")
        if yield_kind is YieldKind.RETURN:
            return coerce(returned, playbook.returns)
        messages += [
            ChatMessage(role="assistant", content=text),
            ChatMessage(role="user", content="\n".join(results) or "No calls were made."),
        ]
    raise RunError(
        f"react playbook did not return within {services.limits.max_react_rounds} rounds",
        agent=execution.agent.klass,
        playbook=playbook.name,
    )


class _Rejected(Exception):
    pass


def _check(execution: Execution, answer: Any) -> tuple[list[Call], list[tuple[str, Any]], Any, YieldKind]:
    """Check a react answer without changing anything; return what to apply."""
    variables = execution.agent.state.variables
    calls: list[Call] = []
    updates: list[tuple[str, Any]] = []
    returned: Any = None
    for action in answer.actions:
        found: list[Call] = []
        if isinstance(action, StrayCallAction):
            found = [action.call]
        elif isinstance(action, StepAction):
            found = list(action.calls)
        elif isinstance(action, VarAction) and action.name != "__":
            updates.append((action.name, action.value))
        elif isinstance(action, ReturnAction):
            raw = action.raw.strip()
            returned = variables[raw[1:]] if raw.startswith("$") and raw[1:] in variables else action.value
        for call in found:
            if not execution.is_callable(call.name):
                raise _Rejected(f"{call.name} is not a playbook you can call")
            for argument in call.arguments:
                if argument.kind is ArgKind.VARIABLE and argument.value not in variables:
                    raise _Rejected(f"${argument.value} is not set")
                if argument.kind not in (ArgKind.VARIABLE, ArgKind.LITERAL):
                    raise _Rejected(f"argument {argument.text!r} must be a literal or a $variable")
            calls.append(call)
    final = answer.final_yield
    if final is None or final.target.kind not in (YieldKind.CALL, YieldKind.RETURN):
        raise _Rejected("end with yld call (to run your calls) or yld return (with Return[...])")
    return calls, updates, returned, final.target.kind
