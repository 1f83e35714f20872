"""The fetch–decode–execute loop of a markdown playbook (seeds 003/004).

At each line: if the runtime can execute the step itself (runtime.fastpath), it does; otherwise the
model executes a fragment from that line (runtime.turns), verified before it is applied. Then the
loop acts on how control was handed back: keep going, run queued calls (`yld call`), wait for the
user, for the meeting or for an agent, return, or exit the program.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pal_core.flow import END, PlaybookFlow
from pal_core.ir import Call, Playbook, YieldKind
from runtime import fastpath
from runtime.calls import invoke_call
from runtime.control import Control
from runtime.errors import BudgetExceeded, MeetingOver, ProgramExit, RunError
from runtime.models.base import ChatMessage, ModelRequest, RequestKind
from runtime.state import Frame
from runtime.triggers import check_message_triggers
from runtime.turns import model_turn

if TYPE_CHECKING:
    from runtime.execution import Execution


async def run_markdown(
    execution: Execution, playbook: Playbook, args: list[Any], kwargs: dict[str, Any]
) -> Any:
    """Execute a markdown playbook (steps, or a raw/react prompt) and return its result."""
    bound = execution.bind_parameters(playbook, args, kwargs)
    variables = execution.agent.state.variables
    for parameter in playbook.parameters:
        variables.set(parameter.name, bound[parameter.name], parameter.type)
    mode = playbook.metadata.execution_mode
    if playbook.steps:
        # Declared before the first step, so a value a model writes for `$n:int` is held to int too.
        for name, declared in execution.agent.declared_types(playbook):
            variables.declare(name, declared)
    if mode == "raw":
        return await run_raw(execution, playbook)
    if not playbook.steps:
        return await run_raw(execution, playbook) if mode != "react" else await run_react(execution, playbook)
    flow = execution.agent.flow(playbook)
    frame = Frame(playbook=playbook, flow=flow, line=flow.first, meeting_id=execution.current_meeting())
    execution.stack.push(frame)
    try:
        return await _loop(execution, frame, flow)
    except MeetingOver:
        await _flush(execution, frame)
        return frame.return_value
    finally:
        execution.stack.pop()


async def _loop(execution: Execution, frame: Frame, flow: PlaybookFlow) -> Any:
    budget = execution.services.budget()
    agent = execution.agent.klass
    while True:
        if frame.line == END:
            await _flush(execution, frame)
            return frame.return_value
        step = flow.by_line.get(frame.line)
        if step is None:
            raise RunError(f"line {frame.line} does not exist", agent=agent, playbook=frame.playbook.name)
        if budget.check(agent, frame):
            # A turn for the event loop: other agents, other calls, cancellation and signals go on.
            await asyncio.sleep(0)
        try:
            control = await fastpath.run_step(execution, frame, flow, step)
            if control is None:
                control = await model_turn(execution, frame, flow)
        except BudgetExceeded as error:  # a value too large for its budget: place it at this step
            raise error.located(agent=agent, playbook=frame.playbook.name, line=step.line) from None
        await run_pending_triggers(execution)
        if await _handle(execution, frame, control):
            return frame.return_value


async def _handle(execution: Execution, frame: Frame, control: Control) -> bool:
    """Act on how a step or turn ended; True when the playbook is finished."""
    kind = control.yield_kind
    if kind is None:
        return False
    await _flush(execution, frame)
    if kind is YieldKind.CALL:
        return False
    if kind is YieldKind.USER:
        await execution.wait_for_user()
        await check_message_triggers(execution)
        return False
    if kind is YieldKind.RETURN:
        return True
    if kind is YieldKind.EXIT:
        raise ProgramExit(execution.agent.id, f"{frame.playbook.name} yielded exit")
    if kind is YieldKind.MEETING:
        meeting_id = frame.meeting_id or (control.yield_name or "").strip() or None
        if meeting_id is None:
            raise RunError(
                "yld meeting outside a meeting", agent=execution.agent.klass, playbook=frame.playbook.name
            )
        await execution.wait_for_meeting(meeting_id)
        return False
    if kind is YieldKind.AGENT:
        await execution.wait_for_message(control.yield_name or "*")
        return False
    raise RunError(f"unknown yield {kind}", agent=execution.agent.klass, playbook=frame.playbook.name)


async def _flush(execution: Execution, frame: Frame) -> None:
    """Run the calls queued by QUE steps, in order."""
    while frame.queued:
        call = frame.queued.pop(0)
        await invoke_call(execution, call)


async def run_pending_triggers(execution: Execution) -> None:
    """Run playbooks whose machine-checkable CND trigger became true since the last step."""
    agent = execution.agent
    while agent.pending_triggers:
        name = agent.pending_triggers.pop(0)
        execution.services.trace(agent, "trigger", playbook=name, detail="condition became true")
        await invoke_call(execution, Call(name=name))


async def run_raw(execution: Execution, playbook: Playbook) -> str:
    """A raw playbook: its description is the prompt (with `$variables` filled in); the answer is the result."""
    text = _fill(playbook.description, execution.agent.state.variables.snapshot())
    request = ModelRequest(
        kind=RequestKind.RAW,
        messages=(ChatMessage(role="user", content=text),),
        max_tokens=execution.services.limits.max_answer_tokens,
        temperature=execution.services.limits.temperature,
        seed=execution.services.limits.seed,
        metadata={"agent": execution.agent.klass, "playbook": playbook.name, "mode": "raw"},
    )
    _, response = await execution.services.call_model(request, execution.agent)
    return response.text.strip()


async def run_react(execution: Execution, playbook: Playbook) -> Any:
    """A react playbook (instructions, no steps): the model may call playbooks, then returns."""
    from runtime.react import react_loop

    return await react_loop(execution, playbook)


def _fill(text: str, variables: dict[str, Any]) -> str:
    for name in sorted(variables, key=len, reverse=True):
        text = text.replace(f"${name}", str(variables[name]))
    return text
